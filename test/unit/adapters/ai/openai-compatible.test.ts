import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ModelAnswerError, ModelError, type ModelRequest, modelClientFrom } from '#adapters/ai/model-client';
import {
  OPENAI_KEY_CONTEXT,
  type OpenAiCompatibleOptions,
  openAiCompatibleClient,
} from '#adapters/ai/openai-compatible';

// The OpenAI-compatible engine against a real HTTP server on loopback that answers like a chat
// completions endpoint (or fails as one does).

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}
let server: Server;
let base: string;
let seen: Seen[] = [];
let reply: (res: ServerResponse) => void;

const completion = (content: string, usage: object | null = { prompt_tokens: 210, completion_tokens: 33 }) =>
  JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    ...(usage ? { usage } : {}),
  });
const answer = (status: number, body: string) => (res: ServerResponse) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(body);

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: JSON.parse(raw || '{}'),
      });
      reply(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  seen = [];
  reply = answer(200, completion('{"suggestions":[]}'));
});

const REQ: ModelRequest = {
  system: 'You write posts. Answer JSON.',
  user: 'Announce the launch',
  maxTokens: 500,
};
const options = (over: Partial<OpenAiCompatibleOptions> = {}): OpenAiCompatibleOptions => ({
  baseUrl: base,
  model: 'llama3.1:8b',
  key: { plain: 'sk-local' },
  acceptsImages: false,
  timeoutMs: 2_000,
  ...over,
});

describe('openAiCompatibleClient', () => {
  it('posts the chat completion with the bearer key; answers the text and usage', async () => {
    reply = answer(200, completion('{"suggestions":[{"body":"Hi"}]}'));
    const client = openAiCompatibleClient(options({ baseUrl: `${base}/` }));
    expect(client.model).toBe('llama3.1:8b');
    await expect(client.converse(REQ)).resolves.toEqual({
      text: '{"suggestions":[{"body":"Hi"}]}',
      inputTokens: 210,
      outputTokens: 33,
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/v1/chat/completions' });
    expect(seen[0]?.headers.authorization).toBe('Bearer sk-local');
    expect(seen[0]?.headers['content-type']).toBe('application/json');
    expect(seen[0]?.body).toEqual({
      model: 'llama3.1:8b',
      messages: [
        { role: 'system', content: REQ.system },
        { role: 'user', content: REQ.user },
      ],
      max_tokens: 500,
      temperature: 0.4,
    });
  });

  it('sends an image as a data: URL part, and no Authorization without a key', async () => {
    const bytes = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2]);
    await openAiCompatibleClient(options({ key: undefined, acceptsImages: true })).converse({
      ...REQ,
      image: { bytes, format: 'jpeg' },
    });
    expect(seen[0]?.headers.authorization).toBeUndefined();
    expect((seen[0]?.body.messages as unknown[] | undefined)?.[1]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: REQ.user },
        {
          type: 'image_url',
          image_url: { url: `data:image/jpeg;base64,${Buffer.from(bytes).toString('base64')}` },
        },
      ],
    });
  });

  it('estimates the usage when the server reports none', async () => {
    reply = answer(200, completion('12345678', null));
    const got = await openAiCompatibleClient(options()).converse(REQ);
    expect(got.outputTokens).toBe(2);
    expect(got.inputTokens).toBe(Math.ceil((REQ.system.length + REQ.user.length) / 4));
  });

  it('treats an empty or filtered answer as unusable', async () => {
    reply = answer(200, completion('  '));
    await expect(openAiCompatibleClient(options()).converse(REQ)).rejects.toBeInstanceOf(ModelAnswerError);
    reply = answer(
      200,
      JSON.stringify({
        choices: [{ message: { role: 'assistant', content: '' }, finish_reason: 'content_filter' }],
      }),
    );
    await expect(openAiCompatibleClient(options()).converse(REQ)).rejects.toThrow(/content filter/);
  });

  const statuses: Array<[number, ModelError['kind']]> = [
    [429, 'throttled'],
    [401, 'access_denied'],
    [403, 'access_denied'],
    [400, 'invalid_request'],
    [404, 'invalid_request'],
    [500, 'unavailable'],
    [502, 'unavailable'],
    [503, 'unavailable'],
  ];
  it.each(statuses)('maps %i to %s', async (status, kind) => {
    reply = answer(status, JSON.stringify({ error: { message: 'nope' } }));
    const err = await openAiCompatibleClient(options())
      .converse(REQ)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect(err).toMatchObject({ kind, message: expect.stringContaining(String(status)) });
  });

  it('maps a body that is not JSON, and an endpoint that is not there, to unavailable', async () => {
    reply = (res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>');
    await expect(openAiCompatibleClient(options()).converse(REQ)).rejects.toMatchObject({
      kind: 'unavailable',
    });
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await expect(
      openAiCompatibleClient(options({ baseUrl: `http://127.0.0.1:${port}/v1` })).converse(REQ),
    ).rejects.toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/could not be reached/) });
  });

  it('gives up at its deadline, and when the caller aborts', async () => {
    reply = () => {}; // never answers
    const started = Date.now();
    await expect(openAiCompatibleClient(options({ timeoutMs: 100 })).converse(REQ)).rejects.toMatchObject({
      kind: 'timeout',
      message: expect.stringMatching(/within 100 ms/),
    });
    expect(Date.now() - started).toBeLessThan(2_000);
    const caller = new AbortController();
    const pending = openAiCompatibleClient(options()).converse({ ...REQ, signal: caller.signal });
    setTimeout(() => caller.abort(), 20);
    await expect(pending).rejects.toMatchObject({ kind: 'timeout' });
  });
});

describe('the key from KMS', () => {
  it('is opened once per container under its encryption context', async () => {
    const asked: Array<[string, Record<string, string>]> = [];
    const decrypt = async (ciphertext: string, context: Record<string, string>) => {
      asked.push([ciphertext, context]);
      return Buffer.from('sk-sealed\n');
    };
    const client = openAiCompatibleClient(
      options({ key: { ciphertext: Buffer.from('blob').toString('base64') }, decrypt }),
    );
    await client.converse(REQ);
    await client.converse(REQ);
    expect(seen.map((s) => s.headers.authorization)).toEqual(['Bearer sk-sealed', 'Bearer sk-sealed']);
    expect(asked).toEqual([[Buffer.from('blob').toString('base64'), OPENAI_KEY_CONTEXT]]);
  });

  it('that does not open is access_denied, and tried again on the next call', async () => {
    let calls = 0;
    const decrypt = async () => {
      calls += 1;
      if (calls === 1) throw new Error('AccessDeniedException: not allowed');
      return Buffer.from('k');
    };
    const client = openAiCompatibleClient(options({ key: { ciphertext: 'YmxvYg==' }, decrypt }));
    await expect(client.converse(REQ)).rejects.toMatchObject({
      kind: 'access_denied',
      message: expect.stringContaining('AccessDeniedException'),
    });
    expect(seen).toHaveLength(0);
    await client.converse(REQ);
    expect(seen[0]?.headers.authorization).toBe('Bearer k');
  });
});

describe('modelClientFrom', () => {
  it('picks the engine the environment names, or none', () => {
    expect(modelClientFrom({})).toBeNull();
    const bedrock = modelClientFrom({
      HERALD_AI_BEDROCK_MODEL_ID: 'amazon.nova-lite-v1:0',
      HERALD_AI_IMAGES: 'true',
    });
    expect(bedrock).toMatchObject({ model: 'amazon.nova-lite-v1:0', acceptsImages: true });
    const openai = modelClientFrom({ HERALD_AI_OPENAI_BASE_URL: base, HERALD_AI_OPENAI_MODEL: 'qwen2.5' });
    expect(openai).toMatchObject({ model: 'qwen2.5', acceptsImages: false });
  });

  it('refuses a half or double setting', () => {
    expect(() => modelClientFrom({ HERALD_AI_OPENAI_BASE_URL: base })).toThrow(
      /needs HERALD_AI_OPENAI_MODEL/,
    );
    expect(() =>
      modelClientFrom({
        HERALD_AI_BEDROCK_MODEL_ID: 'm',
        HERALD_AI_OPENAI_BASE_URL: base,
        HERALD_AI_OPENAI_MODEL: 'q',
      }),
    ).toThrow(/not both/);
    expect(() =>
      modelClientFrom({ HERALD_AI_BEDROCK_MODEL_ID: 'm', HERALD_AI_BEDROCK_GUARDRAIL_ID: 'g' }),
    ).toThrow(/go together/);
    expect(() => modelClientFrom({ HERALD_AI_BEDROCK_MODEL_ID: 'm', HERALD_AI_TIMEOUT_MS: '0' })).toThrow(
      /HERALD_AI_TIMEOUT_MS/,
    );
  });
});
