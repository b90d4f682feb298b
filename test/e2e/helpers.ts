import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type RequestListener } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, expect, inject } from 'vitest';

// What the e2e tests share: an HTTP client for the API that checks every response against the
// OpenAPI document, the admin CLI as users run it, a reader for the delivery queue, loopback
// webhook receivers and MCP clients.

export const baseUrl = () => inject('baseUrl');
const root = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

export interface ApiResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

type Json = Record<string, unknown>;
let openapi: Json | undefined;
let ajv: InstanceType<typeof Ajv2020> | undefined;

async function spec(): Promise<{ doc: Json; ajv: InstanceType<typeof Ajv2020> }> {
  if (!openapi || !ajv) {
    openapi = (await (await fetch(`${baseUrl()}/v1/openapi.json`)).json()) as Json;
    ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addSchema({ $id: 'openapi.json', ...(openapi as object) });
  }
  return { doc: openapi, ajv };
}

/** Asserts the response matches the documented schema of its operation and status. */
async function checkAgainstSpec(method: string, path: string, res: ApiResponse) {
  const { doc, ajv } = await spec();
  const paths = doc.paths as Record<string, Record<string, Json>>;
  // A literal path wins over a template that also matches it (/v1/media/imports, /v1/media/{id}).
  const template =
    Object.keys(paths).find((p) => p === path) ??
    Object.keys(paths).find((p) => new RegExp(`^${p.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path));
  if (!template) return;
  const op = paths[template]?.[method.toLowerCase()];
  if (!op) return;
  const responses = op.responses as Record<string, Json>;
  const documented = responses[String(res.status)];
  expect(
    documented,
    `${method} ${template} answered ${res.status}, which the OpenAPI document does not list`,
  ).toBeDefined();
  const content = documented?.content as Record<string, { schema: Json }> | undefined;
  if (res.status === 204) {
    // No content: none documented, none sent.
    expect(content).toBeUndefined();
    expect(res.text).toBe('');
    return;
  }
  const type = res.headers.get('content-type')?.split(';')[0] ?? '';
  const media = content?.[type];
  expect(media, `${method} ${template} ${res.status} answered ${type}, not documented`).toBeDefined();
  const pointer = `openapi.json#/paths/${template.replaceAll('~', '~0').replaceAll('/', '~1').replaceAll('{', '%7B').replaceAll('}', '%7D')}/${method.toLowerCase()}/responses/${res.status}/content/${type.replace('/', '~1')}/schema`;
  const validate = ajv.getSchema(pointer);
  expect(validate, `no schema at ${pointer}`).toBeDefined();
  const ok = validate?.(res.body);
  expect(
    ok,
    `${method} ${template} ${res.status} body does not match the OpenAPI schema: ${JSON.stringify(validate?.errors)}`,
  ).toBe(true);
}

export async function api<T = Json>(
  method: string,
  path: string,
  opts: {
    key?: string;
    body?: unknown;
    raw?: string;
    headers?: Record<string, string>;
    bearer?: boolean;
  } = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key) {
    if (opts.bearer === false) headers['x-api-key'] = opts.key;
    else headers.authorization = `Bearer ${opts.key}`;
  }
  let body: string | undefined = opts.raw;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${baseUrl()}${path}`, { method, headers, body });
  const text = await res.text();
  const parsed = text ? (JSON.parse(text) as T) : ({} as T);
  const out: ApiResponse<T> = { status: res.status, headers: res.headers, body: parsed, text };
  // Every response carries a request id; problem bodies repeat it.
  expect(res.headers.get('x-request-id')).toBeTruthy();
  if (res.status >= 400) {
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect((parsed as Json).request_id).toBe(res.headers.get('x-request-id'));
  }
  if (path.startsWith('/v1/')) await checkAgainstSpec(method, path.split('?')[0] ?? path, out as ApiResponse);
  return out;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json: Json;
}

/** Runs `herald … --json` against the e2e stack, as a user would. */
export async function cli(...args: string[]): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [join(root, 'bin/herald.js'), ...args, '--json'], {
      env: { ...process.env, HERALD_DATA_DIR: inject('dataDir') },
      cwd: root,
    });
    return { code: 0, stdout, stderr, json: JSON.parse(stdout) as Json };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr, json: {} };
  }
}

export async function cliOk(...args: string[]): Promise<Json> {
  const res = await cli(...args);
  expect(res.code, res.stderr).toBe(0);
  return res.json;
}

export const ALL_SCOPES =
  'posts:read,posts:write,channels:read,channels:write,analytics:read,webhooks:read,webhooks:write';

export interface Workspace {
  orgId: string;
  ownerId: string;
  key: string;
  channels: Record<string, string>;
}

let seq = 0;

/** An organization with an owner, a full-scope key and a live channel per named platform. */
export async function workspace(
  platforms: string[] = ['bluesky', 'mastodon'],
  plan = 'team',
): Promise<Workspace> {
  seq += 1;
  const created = await cliOk(
    'org',
    'create',
    '--name',
    `E2E ${seq}`,
    '--plan',
    plan,
    '--owner-email',
    `owner${seq}@e2e.test`,
  );
  const orgId = (created.org as Json).id as string;
  const ownerId = (created.owner as Json).id as string;
  const minted = await cliOk(
    'key',
    'mint',
    '--org',
    orgId,
    '--by',
    ownerId,
    '--scopes',
    ALL_SCOPES,
    '--name',
    'e2e',
  );
  const channels: Record<string, string> = {};
  for (const platform of platforms) {
    const ch = await cliOk(
      'channel',
      'connect',
      '--org',
      orgId,
      '--platform',
      platform,
      '--credentials',
      JSON.stringify(CREDENTIALS[platform]),
    );
    channels[platform] = ch.id as string;
  }
  return { orgId, ownerId, key: minted.key as string, channels };
}

/**
 * Credentials the platforms' contract fakes accept, each naming the fake's default account (the
 * CLI checks pasted credentials with the platform). Bluesky and Mastodon take their origin from
 * the channel: point them at the fakes.
 */
export const CREDENTIALS: Record<string, Json> = {
  get bluesky() {
    return {
      service: `${inject('fakesOrigin')}/bluesky`,
      identifier: 'e2e.bsky.social',
      app_password: 'app-password',
    };
  },
  get mastodon() {
    return { instance: `${inject('fakesOrigin')}/mastodon`, access_token: 'token' };
  },
  linkedin: { access_token: 'token', account_id: 'urn:li:person:abc' },
  x: { access_token: 'token', account_id: '1500000000000000001' },
  threads: { access_token: 'token', account_id: '17841400000000001' },
  instagram: { access_token: 'token', account_id: '17841405822304914' },
  facebook: { access_token: 'token', account_id: '104857600000001' },
  tiktok: { access_token: 'token', account_id: 'open-id-1' },
  youtube: { access_token: 'token', account_id: 'UCherald' },
  pinterest: { access_token: 'token', account_id: '549755885175' },
};

export async function mint(ws: Workspace, scopes: string): Promise<string> {
  return (await cliOk('key', 'mint', '--org', ws.orgId, '--by', ws.ownerId, '--scopes', scopes))
    .key as string;
}

export async function dangerous(ws: Workspace, on: boolean) {
  await cliOk('settings', 'set', '--org', ws.orgId, '--by', ws.ownerId, '--dangerous-ops', on ? 'on' : 'off');
}

export const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

export function stackInfo(): { sqsEndpoint: string; deliveryQueueUrl: string } {
  return JSON.parse(readFileSync(join(inject('dataDir'), 'stack.json'), 'utf8'));
}

export interface FakeState {
  posts: Array<Record<string, unknown>> | null;
  /** Comments made under posts (Instagram, Facebook, LinkedIn, YouTube fakes). */
  comments: Array<Record<string, unknown>> | null;
  requests: Array<{ method: string; path: string; json: unknown }>;
}

/** What a platform's fake received (posts it holds, requests it saw). */
export async function fakeState(platform: string): Promise<FakeState> {
  return (await (await fetch(`${inject('fakesOrigin')}/__fakes/${platform}/state`)).json()) as FakeState;
}

/** Makes the platform's fake answer the next matching request(s) with this failure. */
export async function failPlatform(
  platform: string,
  failure: {
    status: number;
    body?: unknown;
    headers?: Record<string, string>;
    times?: number;
    pathPattern?: string;
    /** Only requests carrying this text (the test's marker): files run side by side share the fakes. */
    bodyIncludes?: string;
    /** Only requests with a header value carrying this text (a transfer's `file_url`). */
    headerIncludes?: string;
    delayMs?: number;
    holdAnswerMs?: number;
  },
): Promise<void> {
  const res = await fetch(`${inject('fakesOrigin')}/__fakes/${platform}/fail`, {
    method: 'POST',
    body: JSON.stringify(failure),
  });
  expect(res.status).toBe(204);
}

/**
 * One asset through the upload flow (createMediaUpload, the presigned PUT, completeMediaUpload),
 * each step expected to succeed: the completed asset.
 */
export async function uploadMedia<A extends { url: string } = { id: string; url: string; status: string }>(
  key: string,
  bytes: Uint8Array,
  filename: string,
  contentType: string,
): Promise<A> {
  const id = await stageUpload(key, bytes, filename, contentType);
  const done = await api<A>('POST', `/v1/media/uploads/${id}/complete`, { key });
  expect(done.status, done.text).toBe(200);
  return done.body;
}

/** The upload flow up to completeMediaUpload (the ticket, the presigned PUT): the asset's id. */
export async function stageUpload(
  key: string,
  bytes: Uint8Array,
  filename: string,
  contentType: string,
): Promise<string> {
  const t = await api<{ asset_id: string; upload_url: string }>('POST', '/v1/media/uploads', {
    key,
    body: { filename, content_type: contentType, size_bytes: bytes.length },
  });
  expect(t.status, t.text).toBe(201);
  const put = await fetch(t.body.upload_url, {
    method: 'PUT',
    body: bytes,
    headers: { 'content-type': contentType },
  });
  expect(put.status, await put.text()).toBe(200);
  return t.body.asset_id;
}

/**
 * An HTTP server on loopback for the stack to fetch from (pages, media; the stack's address checks
 * allow 127.0.0.0/8 in the tests): its origin. Closed with its open sockets when the test file ends.
 */
export async function loopbackOrigin(handler: RequestListener): Promise<string> {
  const server = createServer(handler);
  const sockets = new Set<Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  opened.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Polls getPost until `done` holds for it (or the deadline passes, failing the test). */
export async function waitForPost<T extends { status: string }>(
  key: string,
  id: string,
  done: (p: T) => boolean,
  timeoutMs = 40_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: ApiResponse<T> | undefined;
  // Polling spends the key's per-minute burst (120) like any client's would: the pause grows from
  // 100 ms to 1 s, so a 40 s wait asks about 50 times and never meets the limit on its own.
  let pause = 100;
  while (Date.now() < deadline) {
    last = await api<T>('GET', `/v1/posts/${id}`, { key });
    if (last.status === 200 && done(last.body)) return last.body;
    pause = Math.min(1000, pause * 1.5);
    // Over the burst anyway (other calls on the key): wait for the window's end.
    const wait = last.status === 429 ? Number(last.headers.get('x-ratelimit-reset') ?? 1) * 1000 : pause;
    await new Promise((r) => setTimeout(r, Math.min(wait, Math.max(0, deadline - Date.now()))));
  }
  throw new Error(
    `post ${id} did not reach the expected state in ${timeoutMs} ms: ${last?.status} ${last?.text}`,
  );
}

// Receivers and MCP clients opened by a test file are closed when that file ends.
const opened: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  await Promise.all(opened.splice(0).map((close) => close()));
});

export interface Received {
  /** When it arrived (ms since the epoch). */
  at: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** What the receiver answered (0: it held the request open). */
  status: number;
}

export interface WebhookReceiver {
  url: string;
  received: Received[];
  /** What it answers; tests may change it between deliveries. */
  status: number;
  /** The deliveries whose JSON body has this `type`. */
  ofType(type: string): Received[];
  /** Decides the answer per request instead of `status`; 'hold' never answers (a request in flight). */
  respond?: (request: Omit<Received, 'status'>) => number | 'hold';
}

/** A loopback server recording webhook POSTs (the e2e stack allow-lists 127.0.0.0/8). */
export async function webhookReceiver(status = 200): Promise<WebhookReceiver> {
  const state: WebhookReceiver = {
    url: '',
    received: [],
    status,
    ofType: (type) => state.received.filter((r) => (JSON.parse(r.body) as Json).type === type),
  };
  const server = createServer((req, res) => {
    // Decoded once whole: a multi-byte character can straddle two chunks.
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => {
      chunks.push(d);
    });
    req.on('end', () => {
      const got = { at: Date.now(), headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      const answer = state.respond?.(got) ?? state.status;
      state.received.push({ ...got, status: answer === 'hold' ? 0 : answer });
      if (answer === 'hold') return;
      res.writeHead(answer, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  opened.push(
    () =>
      new Promise((ok) => {
        server.close(ok);
        server.closeAllConnections();
      }),
  );
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/herald`;
  return state;
}

/** The MCP SDK's own Client, connected to /api/mcp over Streamable HTTP with this API key. */
export async function mcpClient(key: string, name = 'herald-e2e'): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${baseUrl()}/api/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  opened.push(() => client.close());
  return client;
}
