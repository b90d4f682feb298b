import {
  AccessDeniedException,
  BedrockRuntimeClient,
  ConverseCommand,
  type ConverseCommandInput,
  InternalServerException,
  ModelErrorException,
  ModelNotReadyException,
  ModelTimeoutException,
  ResourceNotFoundException,
  ServiceQuotaExceededException,
  ServiceUnavailableException,
  ThrottlingException,
  ValidationException,
} from '@aws-sdk/client-bedrock-runtime';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { type BedrockOptions, bedrockClient, converseInput, TEMPERATURE } from '#adapters/ai/bedrock';
import { ModelAnswerError, ModelError, type ModelRequest } from '#adapters/ai/model-client';
import { converseAnswer, converseErrors, MAX_IMAGE_BYTES } from '../../../fakes/bedrock-converse.ts';

// The Bedrock engine against the mocked SDK client, each request checked by the Converse contract
// fake (test/fakes/bedrock-converse.ts) before it is answered.

const bedrock = mockClient(BedrockRuntimeClient);
const MODEL = 'anthropic.claude-3-5-haiku-20241022-v1:0';
const PROFILE = 'eu.anthropic.claude-3-5-haiku-20241022-v1:0';
const REQ: ModelRequest = {
  system: 'You write social posts. Answer JSON.',
  user: 'Announce the launch',
  maxTokens: 600,
};
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);

const options = (over: Partial<BedrockOptions> = {}): BedrockOptions => ({
  modelId: MODEL,
  region: 'eu-west-1',
  acceptsImages: true,
  timeoutMs: 5_000,
  client: new BedrockRuntimeClient({ region: 'eu-west-1' }),
  ...over,
});

/** Answers like Converse: a ValidationException for what the contract refuses, else `answer`. */
function serve(answer = converseAnswer('{"suggestions":[]}')) {
  const seen: ConverseCommandInput[] = [];
  bedrock.on(ConverseCommand).callsFake((input: ConverseCommandInput) => {
    seen.push(input);
    const errors = converseErrors(input);
    if (errors.length) throw new ValidationException({ message: errors.join('; '), $metadata: {} });
    return answer;
  });
  return seen;
}

beforeEach(() => bedrock.reset());

describe('the contract fake', () => {
  it('refuses what Converse refuses', () => {
    const good = converseInput(options(), { ...REQ, image: { bytes: PNG, format: 'png' } });
    expect(converseErrors(good)).toEqual([]);
    expect(converseErrors({ ...good, modelId: '' })).toContain('modelId: 1–2048 characters required');
    expect(converseErrors({ ...good, messages: [] })).toContain('messages: at least one');
    expect(
      converseErrors({
        ...good,
        messages: [{ role: 'user', content: [{ text: 'a', image: undefined }, {} as never] }],
      }),
    ).toHaveLength(1);
    expect(
      converseErrors({
        ...good,
        messages: [
          { role: 'user', content: [{ image: { format: 'bmp' as never, source: { bytes: PNG } } }] },
        ],
      }),
    ).toEqual(['messages[0].content[0].image.format: png, jpeg, gif, webp']);
    expect(
      converseErrors({
        ...good,
        messages: [
          {
            role: 'user',
            content: [{ image: { format: 'png', source: { bytes: new Uint8Array(MAX_IMAGE_BYTES + 1) } } }],
          },
        ],
      }),
    ).toEqual(['messages[0].content[0].image.source.bytes: at most 3.75 MB']);
    expect(converseErrors({ ...good, inferenceConfig: { maxTokens: 0, temperature: 1.5 } })).toEqual([
      'inferenceConfig.maxTokens: an integer ≥ 1',
      'inferenceConfig.temperature: 0 to 1',
    ]);
    expect(
      converseErrors({ ...good, guardrailConfig: { guardrailIdentifier: 'gr1', guardrailVersion: 'v1' } }),
    ).toEqual(['guardrailConfig.guardrailVersion: a version number or DRAFT']);
  });
});

describe('bedrockClient', () => {
  it('sends the system prompt, one user message and the inference settings; answers the text and usage', async () => {
    const seen = serve(
      converseAnswer('{"suggestions":[{"body":"Hi"}]}', { inputTokens: 321, outputTokens: 54 }),
    );
    const client = bedrockClient(options());
    expect(client.model).toBe(MODEL);
    expect(client.acceptsImages).toBe(true);
    await expect(client.converse(REQ)).resolves.toEqual({
      text: '{"suggestions":[{"body":"Hi"}]}',
      inputTokens: 321,
      outputTokens: 54,
    });
    expect(seen).toEqual([
      {
        modelId: MODEL,
        system: [{ text: REQ.system }],
        messages: [{ role: 'user', content: [{ text: REQ.user }] }],
        inferenceConfig: { maxTokens: 600, temperature: TEMPERATURE },
      },
    ]);
    expect(TEMPERATURE).toBe(0.4);
  });

  it('adds the image as an image block of raw bytes, and the guardrail when one is set', async () => {
    const seen = serve();
    const client = bedrockClient(options({ modelId: PROFILE, guardrail: { id: 'gr7abc', version: '3' } }));
    await client.converse({ ...REQ, image: { bytes: PNG, format: 'png' } });
    expect(seen[0]?.modelId).toBe(PROFILE);
    expect(seen[0]?.messages?.[0]?.content).toEqual([
      { text: REQ.user },
      { image: { format: 'png', source: { bytes: PNG } } },
    ]);
    expect(seen[0]?.guardrailConfig).toEqual({ guardrailIdentifier: 'gr7abc', guardrailVersion: '3' });
  });

  it('estimates the usage when the answer has none', async () => {
    serve(converseAnswer('12345678', { usage: false }));
    const answer = await bedrockClient(options()).converse(REQ);
    expect(answer.outputTokens).toBe(2);
    expect(answer.inputTokens).toBe(Math.ceil((REQ.system.length + REQ.user.length) / 4));
  });

  it('says when the guardrail intervened, or nothing usable came back', async () => {
    serve(converseAnswer('Sorry, I cannot help with that.', { stopReason: 'guardrail_intervened' }));
    const guarded = bedrockClient(options({ guardrail: { id: 'gr7abc', version: '3' } })).converse(REQ);
    await expect(guarded).rejects.toBeInstanceOf(ModelAnswerError);
    await expect(guarded).rejects.toThrow(/guardrail gr7abc blocked/);
    bedrock.reset();
    serve(converseAnswer('', {}));
    await expect(bedrockClient(options()).converse(REQ)).rejects.toThrow(ModelAnswerError);
    bedrock.reset();
    serve(converseAnswer('x', { stopReason: 'content_filtered' }));
    await expect(bedrockClient(options()).converse(REQ)).rejects.toThrow(/content filter/);
  });

  const cases: Array<[string, Error, ModelError['kind']]> = [
    ['ThrottlingException', new ThrottlingException({ message: 'slow down', $metadata: {} }), 'throttled'],
    [
      'ServiceQuotaExceededException',
      new ServiceQuotaExceededException({ message: 'quota', $metadata: {} }),
      'throttled',
    ],
    [
      'AccessDeniedException',
      new AccessDeniedException({ message: 'no access', $metadata: {} }),
      'access_denied',
    ],
    ['ValidationException', new ValidationException({ message: 'bad', $metadata: {} }), 'invalid_request'],
    [
      'ResourceNotFoundException',
      new ResourceNotFoundException({ message: 'no such model', $metadata: {} }),
      'invalid_request',
    ],
    [
      'ModelTimeoutException',
      new ModelTimeoutException({ message: 'took too long', $metadata: {} }),
      'timeout',
    ],
    [
      'ServiceUnavailableException',
      new ServiceUnavailableException({ message: 'down', $metadata: {} }),
      'unavailable',
    ],
    [
      'InternalServerException',
      new InternalServerException({ message: 'oops', $metadata: {} }),
      'unavailable',
    ],
    [
      'ModelNotReadyException',
      new ModelNotReadyException({ message: 'warming', $metadata: {} }),
      'unavailable',
    ],
    [
      'ModelErrorException',
      new ModelErrorException({ message: 'model failed', $metadata: {} }),
      'unavailable',
    ],
    ['a network error', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), 'unavailable'],
    ['an abort', Object.assign(new Error('Request aborted'), { name: 'AbortError' }), 'timeout'],
  ];
  it.each(cases)('maps %s to %s', async (_, error, kind) => {
    bedrock.on(ConverseCommand).rejects(error);
    const err = await bedrockClient(options())
      .converse(REQ)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).kind).toBe(kind);
  });

  it('says where model access must be enabled when access is denied', async () => {
    bedrock.on(ConverseCommand).rejects(new AccessDeniedException({ message: 'denied', $metadata: {} }));
    await expect(bedrockClient(options()).converse(REQ)).rejects.toThrow(
      /enable access to it in the Amazon Bedrock console \(Model access\) in eu-west-1, then retry/,
    );
    await expect(bedrockClient(options({ modelId: PROFILE })).converse(REQ)).rejects.toThrow(
      /in eu-west-1 and every region its inference profile routes to/,
    );
  });

  it('gives up at its deadline, and when the caller aborts', async () => {
    // A client that never answers: only the abort signal ends the call.
    const hanging = {
      config: { region: async () => 'eu-west-1' },
      send: (_: unknown, opts: { abortSignal: AbortSignal }) =>
        new Promise((_resolve, reject) =>
          opts.abortSignal.addEventListener('abort', () => reject(opts.abortSignal.reason)),
        ),
    } as unknown as BedrockRuntimeClient;
    const started = Date.now();
    const err = await bedrockClient(options({ client: hanging, timeoutMs: 50 }))
      .converse(REQ)
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'timeout', message: expect.stringMatching(/within 50 ms/) });
    expect(Date.now() - started).toBeLessThan(2_000);
    const caller = new AbortController();
    const pending = bedrockClient(options({ client: hanging })).converse({ ...REQ, signal: caller.signal });
    caller.abort();
    await expect(pending).rejects.toMatchObject({ kind: 'timeout' });
  });
});
