import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { crc32 } from 'node:zlib';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';

// Shared by the benchmarks of test/bench: the environment the handlers read at load, the machine
// line of every table, verdict marks and small number formatting.

export const ROOT = resolve(import.meta.dirname, '../..');

/**
 * What every function needs at load (a missing variable fails its cold start): the unit tests'
 * environment (vitest.config.ts, project `unit`) plus the MCP server's function map.
 */
export const BENCH_ENV: Readonly<Record<string, string>> = {
  TABLE_NAME: 'herald-test',
  DELIVERY_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/herald-delivery',
  SCHEDULE_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/herald-schedule',
  EVENTS_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/herald-events',
  WEBHOOKS_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/herald-webhooks',
  CHANNEL_SYNC_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/herald-channelSync',
  WEBHOOK_SECRETS_KEY_ID: 'arn:aws:kms:us-east-1:000000000000:key/bench',
  CONNECTION_SECRETS_KEY_ID: 'arn:aws:kms:us-east-1:000000000000:key/bench-connections',
  WEBHOOK_LADDER_ARN: 'arn:aws:states:us-east-1:000000000000:stateMachine:herald-webhookLadder',
  HERALD_CURSOR_SECRET: 'bench-cursor-secret',
  HERALD_OPERATION_FUNCTIONS: '{}',
  HERALD_UPLOAD_BUCKET: 'herald-bench-uploads',
  HERALD_MEDIA_BUCKET: 'herald-bench-media',
  HERALD_MEDIA_BASE_URL: 'https://media.example',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  POWERTOOLS_LOG_LEVEL: 'SILENT',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

/**
 * Sets BENCH_ENV on this process (before any handler module is imported), as the local stack
 * does: not in a Lambda, webhooks may go to loopback receivers.
 */
export function applyBenchEnv(extra: Record<string, string> = {}): void {
  Object.assign(process.env, BENCH_ENV, extra);
  delete process.env.AWS_LAMBDA_FUNCTION_NAME;
}

export const machine = (): string =>
  `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'cpu'}, Node ${process.version}`;

export const today = (): string => new Date().toISOString().slice(0, 10);

/** The whole machine's CPU time since boot (Linux /proc/stat, in USER_HZ ticks of 10 ms). */
export interface CpuTimes {
  busy: number;
  steal: number;
  total: number;
}

export function cpuTimes(): CpuTimes | undefined {
  try {
    const [, ...fields] = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/);
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] =
      fields.map(Number);
    const busy = user + nice + system + irq + softirq;
    return { busy, steal, total: busy + idle + iowait + steal };
  } catch {
    return undefined; // not Linux: the columns read "–"
  }
}

/**
 * What the machine spent between two readings: busy CPU seconds (every process: the stack, DynamoDB
 * Local's JVM, the load generator) and the share of time the hypervisor gave to other guests
 * (steal). On a shared VM the same code runs at very different speeds as steal comes and goes, so
 * the benches print both beside their rates: compare runs by busy CPU per unit of work.
 */
export function cpuBetween(a: CpuTimes | undefined, b: CpuTimes | undefined) {
  if (!a || !b || b.total <= a.total) return undefined;
  return {
    busySeconds: (b.busy - a.busy) / 100,
    stealPct: (100 * (b.steal - a.steal)) / (b.total - a.total),
  };
}

export const mark = (ok: boolean | null): string => (ok === null ? '–' : ok ? '✅' : '❌');

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  if (!s.length) return Number.NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export const kib = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`;

export const fixed = (n: number, digits = 1): string => n.toFixed(digits);

/** A markdown table; `align` per column: `l`, `r` or `c`. */
export function table(head: string[], align: Array<'l' | 'r' | 'c'>, rows: string[][]): string {
  const rule = align.map((a) => (a === 'r' ? '---:' : a === 'c' ? ':---:' : '---'));
  return [head, rule, ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
}

/** `node_modules/@smithy/core/dist-es/…` → `@smithy/core`; our sources → `herald`. */
export function packageOf(input: string): string {
  const at = input.lastIndexOf('node_modules/');
  if (at < 0) return input === '<stdin>' ? 'floor entry' : 'herald';
  const [a = '', b = ''] = input.slice(at + 'node_modules/'.length).split('/');
  return a.startsWith('@') ? `${a}/${b}` : a;
}

/** Wall time of `fn` in ms, and its result. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - t };
}

// ---- the API with mocked AWS clients (overhead.ts, round-trips.ts) ---------------------------------

export type ApiHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

export type Service = 'DynamoDB' | 'SQS' | 'KMS' | 'S3' | 'Lambda' | 'SFN' | 'SES' | 'HTTP';

/** One AWS request (or outbound HTTP request) of an invocation. */
export interface TracedCall {
  service: Service;
  /** e.g. `GetItem`, `UpdateItem (burst)`, `TransactWriteItems[3]`, `Encrypt`, `POST receiver`. */
  label: string;
  /** 1 + the highest generation among the calls completed before this one started. */
  generation: number;
}

export interface Scenario {
  /** Operation id (lib/operations.ts). */
  op: string;
  /** What is exercised, e.g. `scheduled` for createPost; empty for the operation's main path. */
  variant: string;
  /** The operation's main path: the one overhead.ts measures. */
  primary: boolean;
  status: number;
  handler: ApiHandler;
  event: () => APIGatewayProxyEventV2;
}

export interface Invocation {
  status: number | undefined;
  body: string | undefined;
  calls: TracedCall[];
  /** Highest generation: the sequential round trips on the critical path. */
  depth: number;
  wallMs: number;
}

export interface ApiWorld {
  scenarios: Scenario[];
  /** Answers a plain constant JSON, no middleware: the floor of handler overhead. */
  bare: ApiHandler;
  /** Each mocked call (and the receiver's answer) takes this long; 0: answered at once. */
  setDelay(ms: number): Promise<void>;
  /** One invocation, its AWS calls traced. */
  invoke(s: Scenario): Promise<Invocation>;
  /** Invokes untraced (for loops); throws when the status is not the scenario's. */
  run(s: Scenario, event: APIGatewayProxyEventV2, context: Context): Promise<void>;
  context(name: string): Context;
  /** Forgets cached API keys: the next request is a cold-key one. */
  clearAuthCache(): void;
  /** Drops the mocks' call history (sinon keeps every call). */
  resetHistory(): void;
  close(): Promise<void>;
}

let world: Promise<ApiWorld> | undefined;

/**
 * The API operations' real handlers with every AWS client mocked (aws-sdk-client-mock), answering
 * a fixed, realistic table: an API key and its org (team plan), 5 channels, 25 posts, 26 media
 * assets, 3 webhook endpoints with 20 logged deliveries, the org's usage and stats items. Writes
 * change nothing, so every invocation sees the same table; the request gate always admits.
 * One per process (the mocks patch the SDK clients' prototypes).
 */
export function apiWorld(): Promise<ApiWorld> {
  world ??= buildWorld();
  return world;
}

async function buildWorld(): Promise<ApiWorld> {
  const receiver = await startReceiver();
  applyBenchEnv({ HERALD_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' });
  const [
    { mockClient },
    ddbLib,
    { SQSClient },
    { KMSClient },
    { S3Client },
    { LambdaClient },
    { SFNClient },
    { SESv2Client },
    fx,
    { SCOPES, operations },
    { PLATFORMS },
    { keys },
    { clearAuthCache },
    { ConditionalCheckFailedException },
  ] = await Promise.all([
    import('aws-sdk-client-mock'),
    import('@aws-sdk/lib-dynamodb'),
    import('@aws-sdk/client-sqs'),
    import('@aws-sdk/client-kms'),
    import('@aws-sdk/client-s3'),
    import('@aws-sdk/client-lambda'),
    import('@aws-sdk/client-sfn'),
    import('@aws-sdk/client-sesv2'),
    import('../unit/support/fixtures.ts'),
    import('#lib/operations'),
    import('#core/platforms'),
    import('#adapters/keys'),
    import('#usecases/support/authenticate'),
    import('@aws-sdk/client-dynamodb'),
  ]);
  const { BatchGetCommand, DeleteCommand, GetCommand, PutCommand, QueryCommand, TransactWriteCommand } =
    ddbLib;
  const { UpdateCommand, DynamoDBDocumentClient } = ddbLib;

  // ---- the table ----
  const KEY = fx.apiKey({ scopes: SCOPES.filter((s) => s !== 'ai:generate') });
  const ORG = fx.org({ dangerous_ops: true });
  const ORG_ID = ORG.id;
  const channels = PLATFORMS.slice(0, 5).map((p, i) => fx.channel(i + 1, p));
  const CH1 = channels[0]!;
  const DRAFT = fx.post();
  const published = (n: number) =>
    fx.post({
      id: fx.fixedId('post', n),
      status: 'published',
      body: `Post ${n}: a short update with a link https://example.com/${n}`,
      published_at: fx.CREATED_AT,
      variants: [fx.variant(CH1.id, n * 2), fx.variant(channels[1]!.id, n * 2 + 1)],
    });
  const posts = [DRAFT, ...Array.from({ length: 24 }, (_, i) => published(i + 2))];
  const PNG = tinyPng(640, 360);
  const asset = (n: number, status: 'ready' | 'pending') => {
    const id = fx.fixedId('media', n);
    return {
      ...keys.media(ORG_ID, id),
      entity: 'media',
      id,
      org_id: ORG_ID,
      status,
      kind: 'image',
      url: `https://media.example/orgs/${ORG_ID}/media/${id}/photo.png`,
      filename: 'photo.png',
      content_type: 'image/png',
      size_bytes: PNG.length,
      width: status === 'ready' ? 640 : null,
      height: status === 'ready' ? 360 : null,
      duration_sec: null,
      poster_url: null,
      upload_key: `uploads/${ORG_ID}/${id}/photo.png`,
      object_key: `orgs/${ORG_ID}/media/${id}/photo.png`,
      poster_key: null,
      expires_at: '2999-01-01T00:00:00.000Z',
      created_at: fx.CREATED_AT,
      updated_at: fx.CREATED_AT,
    };
  };
  const PENDING = asset(99, 'pending');
  const media = [...Array.from({ length: 25 }, (_, i) => asset(i + 1, 'ready')), PENDING];
  const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  const endpoint = (n: number, url: string) => {
    const id = fx.fixedId('webhook', n);
    return {
      ...keys.webhookEndpoint(ORG_ID, id),
      entity: 'webhook_endpoint',
      id,
      org_id: ORG_ID,
      url,
      description: `Endpoint ${n}`,
      event_types: ['post.published', 'post.failed'],
      enabled: true,
      state: 'active',
      failure: { consecutive_failures: 0 },
      secret: { current: Buffer.from(`sealed-${n}`).toString('base64') },
      created_at: fx.CREATED_AT,
      updated_at: fx.CREATED_AT,
      version: 1,
    };
  };
  const endpoints = [
    endpoint(1, `${receiver.url}/hook`),
    endpoint(2, 'https://93.184.216.34/hooks'),
    endpoint(3, 'https://93.184.216.35/hooks'),
  ];
  const WHE1 = endpoints[0]!.id;
  const deliveries = Array.from({ length: 20 }, (_, i) => {
    const eventId = fx.fixedId('message', i + 1);
    const at = new Date(Date.parse(fx.CREATED_AT) + i * 60_000).toISOString();
    return {
      ...keys.webhookDelivery(ORG_ID, WHE1, eventId),
      ...keys.webhookDeliveryByTime(ORG_ID, WHE1, at, eventId),
      entity: 'webhook_delivery',
      org_id: ORG_ID,
      endpoint_id: WHE1,
      event_id: eventId,
      event_type: 'post.published',
      status: 'delivered',
      attempts: [{ attempt: 1, attempted_at: at, status_code: 200, duration_ms: 84, error: null }],
      done: 1,
      updated_at: at,
    };
  });
  const period = new Date().toISOString().slice(0, 7);
  const items: Array<Record<string, unknown>> = [
    fx.apiKeyItem(KEY),
    { ...fx.orgItem(ORG), channel_count: channels.length },
    ...channels.map(fx.channelItem),
    ...posts.map(fx.postItem),
    ...media,
    ...endpoints,
    ...deliveries,
    { ...keys.usage(ORG_ID, period), api_requests: 1234, posts_per_month: 56 },
    {
      ...keys.orgStats(ORG_ID),
      deliveries_total: 480,
      deliveries_published: 470,
      deliveries_failed: 10,
      eng_bluesky_likes: 1200,
      eng_bluesky_shares: 80,
      synced_platforms: new Set(['bluesky']),
    },
    ...Array.from({ length: 14 }, (_, i) => ({
      ...keys.dayStats(ORG_ID, new Date(Date.now() - i * 86_400_000).toISOString().slice(0, 10)),
      published: 3,
      failed: i % 5 === 0 ? 1 : 0,
    })),
  ];
  const id = (k: Record<string, unknown>) => `${String(k.pk)}\u0000${String(k.sk)}`;
  const byKey = new Map(items.map((i) => [id(i), i]));
  const reads = fx.tableReads(items);

  // ---- the mocked services ----
  let delayMs = 0;
  type Tracing = { calls: TracedCall[]; completed: number[] };
  let tracing: Tracing | null = null;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  type Input = Record<string, unknown> & {
    Key?: Record<string, unknown>;
    ExpressionAttributeValues?: Record<string, unknown>;
    ExpressionAttributeNames?: Record<string, string>;
  };

  function query(input: Input) {
    const m = /^(\w+) = (:\w+)(?: AND begins_with\((\w+), (:\w+)\))?$/.exec(
      String(input.KeyConditionExpression),
    );
    if (!m?.[1] || !m[2]) throw new Error(`bench table: unsupported query ${input.KeyConditionExpression}`);
    const values = input.ExpressionAttributeValues ?? {};
    const hashAttr = m[1];
    const rangeAttr = hashAttr === 'pk' ? 'sk' : hashAttr.replace(/pk$/, 'sk');
    const prefix = m[4] ? String(values[m[4]]) : '';
    let found = items.filter(
      (i) => i[hashAttr] === values[m[2]!] && String(i[rangeAttr] ?? '').startsWith(prefix),
    );
    found.sort((a, b) => String(a[rangeAttr]).localeCompare(String(b[rangeAttr])));
    if (input.ScanIndexForward === false) found.reverse();
    if (typeof input.Limit === 'number') found = found.slice(0, input.Limit);
    return input.Select === 'COUNT' ? { Count: found.length } : { Items: found, Count: found.length };
  }

  /** The current item with the UpdateExpression's top-level `SET a = :v` applied. */
  function updated(input: Input) {
    const current = byKey.get(id(input.Key ?? {}));
    if (!current) {
      throw new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });
    }
    const names = input.ExpressionAttributeNames ?? {};
    const values = input.ExpressionAttributeValues ?? {};
    const set = /SET (.+?)(?: ADD | REMOVE |$)/.exec(String(input.UpdateExpression))?.[1] ?? '';
    const out: Record<string, unknown> = { ...current };
    for (const part of set.split(', ')) {
      const pm = /^([#\w]+) = (:\w+)$/.exec(part.trim());
      if (pm?.[1] && pm[2]) out[names[pm[1]] ?? pm[1]] = values[pm[2]];
    }
    return out;
  }

  function dynamo(command: unknown): { label: string; answer: () => unknown } {
    const input = (command as { input: Input }).input;
    if (command instanceof GetCommand) return { label: 'GetItem', answer: () => reads.get(command.input) };
    if (command instanceof BatchGetCommand)
      return { label: 'BatchGetItem', answer: () => reads.batchGet(command.input) };
    if (command instanceof QueryCommand) return { label: 'Query', answer: () => query(input) };
    if (command instanceof PutCommand) return { label: 'PutItem', answer: () => ({}) };
    if (command instanceof DeleteCommand)
      return {
        label: 'DeleteItem',
        answer: () =>
          input.ReturnValues === 'ALL_OLD' ? { Attributes: byKey.get(id(input.Key ?? {})) } : {},
      };
    if (command instanceof TransactWriteCommand)
      return {
        label: `TransactWriteItems[${(input.TransactItems as unknown[] | undefined)?.length ?? 0}]`,
        answer: () => ({}),
      };
    if (command instanceof UpdateCommand) {
      const sk = String(input.Key?.sk);
      const keyId = (input.ExpressionAttributeNames as Record<string, string> | undefined)?.['#k'];
      if (sk.startsWith('USAGE#') && keyId)
        return {
          label: 'UpdateItem (gate)',
          answer: () => ({ Attributes: { api_requests: 1235, [keyId]: { n: 1 } } }),
        };
      return {
        label: 'UpdateItem',
        answer: () => (input.ReturnValues === 'ALL_NEW' ? { Attributes: updated(input) } : {}),
      };
    }
    throw new Error(`bench table: unmocked DynamoDB ${(command as object).constructor.name}`);
  }

  function other(service: Service, command: unknown): { label: string; answer: () => unknown } {
    const name = (command as object).constructor.name.replace(/Command$/, '');
    const input = (command as { input: Record<string, unknown> }).input;
    const answers: Record<string, () => unknown> = {
      'SQS SendMessage': () => ({ MessageId: 'bench' }),
      'SQS SendMessageBatch': () => ({
        Successful: ((input.Entries as Array<{ Id: string }>) ?? []).map((e) => ({
          Id: e.Id,
          MessageId: 'bench',
        })),
        Failed: [],
      }),
      'KMS Encrypt': () => ({ CiphertextBlob: Buffer.from('bench-ciphertext'), KeyId: input.KeyId }),
      'KMS Decrypt': () => ({ Plaintext: Buffer.from(SECRET), KeyId: input.KeyId }),
      'S3 HeadObject': () => ({ ContentLength: PNG.length, ContentType: 'image/png' }),
      'S3 GetObject': () => ({ Body: { transformToByteArray: async () => new Uint8Array(PNG) } }),
      'S3 CopyObject': () => ({}),
      'S3 DeleteObject': () => ({}),
      'S3 PutObject': () => ({}),
    };
    const answer = answers[`${service} ${name}`];
    if (!answer) throw new Error(`bench: unmocked ${service} ${name}`);
    return { label: name, answer };
  }

  /** Every `send` of a mocked client: traced, answered, after `delayMs`. */
  const fake =
    (service: Service) =>
    async (command: unknown): Promise<unknown> => {
      const { label, answer } = service === 'DynamoDB' ? dynamo(command) : other(service, command);
      const t = tracing;
      const generation = t ? 1 + Math.max(0, ...t.completed) : 0;
      t?.calls.push({ service, label, generation });
      try {
        return answer();
      } finally {
        if (delayMs > 0) await sleep(delayMs);
        t?.completed.push(generation);
      }
    };
  const stubs = [
    [mockClient(DynamoDBDocumentClient), 'DynamoDB'],
    [mockClient(SQSClient), 'SQS'],
    [mockClient(KMSClient), 'KMS'],
    [mockClient(S3Client), 'S3'],
    [mockClient(LambdaClient), 'Lambda'],
    [mockClient(SFNClient), 'SFN'],
    [mockClient(SESv2Client), 'SES'],
  ] as const;
  for (const [stub, service] of stubs) stub.send.callsFake(fake(service) as never);

  // Outbound HTTP (testWebhookEndpoint's POST): traced like a mocked call.
  const pending = new WeakMap<object, { t: Tracing; generation: number }>();
  const onStart = (msg: unknown) => {
    const t = tracing;
    const req = (msg as { request: { method: string; host: string; path: string } }).request;
    if (!t || req.path.startsWith('/_')) return;
    const generation = 1 + Math.max(0, ...t.completed);
    t.calls.push({ service: 'HTTP', label: `${req.method} receiver`, generation });
    pending.set(req, { t, generation });
  };
  const onFinish = (msg: unknown) => {
    const { request } = msg as { request: object };
    const p = pending.get(request);
    if (p) p.t.completed.push(p.generation);
  };
  diagnostics.subscribe('http.client.request.start', onStart);
  diagnostics.subscribe('http.client.response.finish', onFinish);

  // ---- the scenarios ----
  const handlers = new Map<string, ApiHandler>();
  for (const op of operations) {
    const mod = (await import(pathToFileURL(join(ROOT, op.entry)).href)) as { handler: ApiHandler };
    handlers.set(op.id, mod.handler);
  }
  const handlerOf = (op: string) => {
    const h = handlers.get(op);
    if (!h) throw new Error(`no handler for ${op}`);
    return h;
  };
  const json = fx.jsonHeaders(KEY);
  const auth = fx.bearer(KEY);
  const s = (
    op: string,
    status: number,
    opts: EventOptionsOf<typeof fx.apiEvent>,
    variant = '',
    primary = true,
  ): Scenario => ({
    op,
    variant,
    primary,
    status,
    handler: handlerOf(op),
    event: () => fx.apiEvent(op, { ...opts, requestId: randomUUID() }),
  });
  const postBody = (extra: Record<string, unknown>) =>
    JSON.stringify({ variants: [{ channel_id: CH1.id, body: 'Hello from the bench' }], ...extra });
  const scenarios: Scenario[] = [
    s('getPost', 200, { headers: auth, pathParameters: { id: DRAFT.id } }),
    s('listPosts', 200, { headers: auth, query: { limit: '25' } }, 'first page of 25'),
    s('listPosts', 200, { headers: auth, query: { status: 'published' } }, 'status filter', false),
    s('listChannels', 200, { headers: auth }, '5 channels'),
    s('listMedia', 200, { headers: auth }, 'first page of 25'),
    s('getUsage', 200, { headers: auth }),
    s('getAnalytics', 200, { headers: auth }),
    s('createPost', 201, { headers: json, body: postBody({ scheduled_at: fx.daysFromNow(1) }) }, 'scheduled'),
    s('createPost', 201, { headers: json, body: postBody({ draft: true }) }, 'draft', false),
    s('publishPost', 202, { headers: auth, pathParameters: { id: DRAFT.id } }, 'a draft'),
    s(
      'reschedulePost',
      200,
      {
        headers: json,
        pathParameters: { id: DRAFT.id },
        body: JSON.stringify({ scheduled_at: fx.daysFromNow(2) }),
      },
      'a draft',
    ),
    s('deletePost', 200, { headers: auth, pathParameters: { id: DRAFT.id } }, 'a draft'),
    s(
      'updatePost',
      200,
      {
        headers: json,
        pathParameters: { id: DRAFT.id },
        body: JSON.stringify({ variants: [{ channel_id: CH1.id, body: 'Edited by the bench' }] }),
      },
      'a draft: new text',
    ),
    s(
      'validatePost',
      200,
      { headers: json, body: postBody({ scheduled_at: fx.daysFromNow(1) }) },
      'scheduled',
    ),
    s(
      'createMediaUpload',
      201,
      {
        headers: json,
        body: JSON.stringify({ filename: 'photo.png', content_type: 'image/png', size_bytes: PNG.length }),
      },
      'presigned PUT',
    ),
    s('completeMediaUpload', 200, { headers: auth, pathParameters: { id: String(PENDING.id) } }, 'a PNG'),
    s('listWebhookEndpoints', 200, { headers: auth }, '3 endpoints'),
    s(
      'createWebhookEndpoint',
      201,
      {
        headers: json,
        body: JSON.stringify({ url: 'https://93.184.216.36/hooks', event_types: ['post.published'] }),
      },
      'IP-literal URL',
    ),
    s(
      'updateWebhookEndpoint',
      200,
      { headers: json, pathParameters: { id: WHE1 }, body: JSON.stringify({ description: 'Renamed' }) },
      'description',
    ),
    s('deleteWebhookEndpoint', 200, { headers: auth, pathParameters: { id: WHE1 } }),
    s('testWebhookEndpoint', 200, { headers: auth, pathParameters: { id: WHE1 } }, 'loopback receiver'),
    s('rotateWebhookSecret', 200, { headers: auth, pathParameters: { id: WHE1 } }),
    s('listWebhookDeliveries', 200, { headers: auth, pathParameters: { id: WHE1 } }, '20 deliveries'),
    s('getOpenApi', 200, {}, 'no API key'),
  ];

  const resetHistory = () => {
    for (const [stub] of stubs) stub.send.resetHistory();
  };
  const context = (name: string) => fx.lambdaContext(name, randomUUID());
  const check = (sc: Scenario, res: APIGatewayProxyStructuredResultV2 | undefined) => {
    if (res?.statusCode !== sc.status)
      throw new Error(
        `${sc.op}${sc.variant ? ` (${sc.variant})` : ''}: expected ${sc.status}, got ${res?.statusCode}: ${res?.body}`,
      );
  };
  return {
    scenarios,
    bare: async () => ({
      statusCode: 200,
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ ok: true }),
    }),
    setDelay: async (ms) => {
      delayMs = ms;
      await receiver.setDelay(ms);
    },
    invoke: async (sc) => {
      const event = sc.event();
      const ctx = context(sc.op);
      const t: Tracing = { calls: [], completed: [] };
      tracing = t;
      const started = performance.now();
      try {
        const res = await sc.handler(event, ctx);
        const wallMs = performance.now() - started;
        check(sc, res);
        return {
          status: res.statusCode,
          body: res.body,
          calls: t.calls,
          depth: Math.max(0, ...t.calls.map((c) => c.generation)),
          wallMs,
        };
      } finally {
        tracing = null;
      }
    },
    run: async (sc, event, ctx) => check(sc, await sc.handler(event, ctx)),
    context,
    clearAuthCache,
    resetHistory,
    close: async () => {
      diagnostics.unsubscribe('http.client.request.start', onStart);
      diagnostics.unsubscribe('http.client.response.finish', onFinish);
      for (const [stub] of stubs) stub.restore();
      await receiver.close();
      world = undefined;
    },
  };
}

type EventOptionsOf<F> = F extends (op: string, opts?: infer O) => unknown ? O : never;

/** A minimal valid-looking PNG (signature, IHDR, IEND): enough for the sniffer and image-size. */
function tinyPng(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 6, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/**
 * A node:http server in a child process of its own, so its CPU and event loop are not the bench's.
 * `setup`: statements run once (`http` is node:http); `handler`: the source of the
 * `(req, res) => …` request listener; `keepAliveTimeoutMs`: the server's, when not Node's default.
 */
export async function childServer(opts: {
  setup?: string;
  handler: string;
  keepAliveTimeoutMs?: number;
}): Promise<{ url: string; close(): Promise<void> }> {
  const script = `
    const http = require('node:http');
    ${opts.setup ?? ''}
    const server = http.createServer(${opts.handler});
    ${opts.keepAliveTimeoutMs === undefined ? '' : `server.keepAliveTimeout = ${opts.keepAliveTimeoutMs};`}
    server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
    process.stdin.on('end', () => process.exit(0));
    process.stdin.resume();
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout, 'data')) as [Buffer];
  return {
    url: `http://127.0.0.1:${line.toString().trim()}`,
    close: async () => {
      child.stdin.end();
      if (child.exitCode === null) await once(child, 'exit');
    },
  };
}

/** The webhook receiver (a child server): answers 204 after the configured delay. */
async function startReceiver(): Promise<{
  url: string;
  setDelay(ms: number): Promise<void>;
  close(): Promise<void>;
}> {
  const server = await childServer({
    setup: 'let delay = 0;',
    handler: `(req, res) => {
      const u = new URL(req.url, 'http://x');
      if (u.pathname === '/_delay') { delay = Number(u.searchParams.get('ms')); res.end(); return; }
      req.resume();
      req.on('end', () => setTimeout(() => { res.statusCode = 204; res.end(); }, delay));
    }`,
    keepAliveTimeoutMs: 1,
  });
  return {
    ...server,
    setDelay: async (ms) => {
      const res = await fetch(`${server.url}/_delay?ms=${ms}`);
      await res.arrayBuffer();
    },
  };
}

const WRITES = /^(Put|Update|Delete|BatchWrite|TransactWrite)/;

/** A request a DynamoDB client sent: its operation and when it was sent and answered (performance.now()). */
export interface DynamoRequest {
  name: string;
  start: number;
  end: number;
}

/**
 * Records every request a DynamoDB client sends (`BatchGetItem`, `Query`…), in the order sent,
 * with its time in the SDK and DynamoDB; SDK retries are below this step, so a retried request is
 * one entry.
 */
export function recordDynamoRequests(client: { middlewareStack: { add: (...args: never[]) => void } }): {
  requests: DynamoRequest[];
} {
  const seen = { requests: [] as DynamoRequest[] };
  const middleware =
    (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) =>
    async (args: unknown) => {
      const request = { name: String(context.commandName).replace(/Command$/, ''), start: 0, end: 0 };
      seen.requests.push(request);
      request.start = performance.now();
      try {
        return await next(args);
      } finally {
        request.end = performance.now();
      }
    };
  client.middlewareStack.add(middleware as never, { step: 'initialize', name: 'requestLog' } as never);
  return seen;
}

/**
 * Counts the capacity units a DynamoDB client consumes (ReturnConsumedCapacity on every call).
 * DynamoDB Local reports CapacityUnits only; the command tells reads from writes. With
 * `failedConditionalWrites`, a write refused by its condition counts too, as DynamoDB bills it: the
 * existing item's size in whole KB, at least 1 (the error carries no ConsumedCapacity; the size is
 * known when the write asked for the item back, ReturnValuesOnConditionCheckFailure ALL_OLD).
 */
export function countConsumedCapacity(
  client: { middlewareStack: { add: (...args: never[]) => void } },
  opts: { failedConditionalWrites?: boolean } = {},
): {
  read: number;
  write: number;
} {
  const consumed = { read: 0, write: 0 };
  type Units = { ReadCapacityUnits?: number; WriteCapacityUnits?: number; CapacityUnits?: number };
  const middleware =
    (next: (args: { input: unknown }) => Promise<{ output: unknown }>, context: { commandName?: string }) =>
    async (args: { input: unknown }) => {
      (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
      let out: { output: unknown };
      try {
        out = await next(args);
      } catch (err) {
        const refused = (err as { name?: string }).name === 'ConditionalCheckFailedException';
        if (opts.failedConditionalWrites && refused && WRITES.test(String(context.commandName))) {
          const old = (err as { Item?: Record<string, unknown> }).Item;
          consumed.write += Math.max(1, Math.ceil((old ? itemSize(unmarshall(old as never)) : 0) / 1024));
        }
        throw err;
      }
      const cc = (out.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
      for (const c of ([] as Units[]).concat((cc as never) ?? [])) {
        const units = c.CapacityUnits ?? (c.ReadCapacityUnits ?? 0) + (c.WriteCapacityUnits ?? 0);
        if (WRITES.test(String(context.commandName))) consumed.write += units;
        else consumed.read += units;
      }
      return out;
    };
  client.middlewareStack.add(middleware as never, { step: 'initialize', name: 'consumedCapacity' } as never);
  return consumed;
}

/** An item's size as DynamoDB counts it: UTF-8 names and values, numbers by their digits. */
export function itemSize(item: Record<string, unknown>): number {
  const size = (v: unknown): number => {
    if (typeof v === 'string') return Buffer.byteLength(v);
    if (typeof v === 'number') {
      const digits = String(Math.abs(v)).replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
      return Math.ceil(digits.length / 2) + 1;
    }
    if (typeof v === 'boolean' || v === null) return 1;
    if (Array.isArray(v)) return 3 + v.reduce((n: number, x) => n + 1 + size(x), 0);
    if (typeof v === 'object')
      return 3 + Object.entries(v as object).reduce((n, [k, x]) => n + 1 + Buffer.byteLength(k) + size(x), 0);
    return 0;
  };
  return Object.entries(item).reduce((n, [k, v]) => n + Buffer.byteLength(k) + size(v), 0);
}
