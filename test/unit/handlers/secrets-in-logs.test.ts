import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  DecryptCommand,
  type DecryptCommandInput,
  EncryptCommand,
  type EncryptCommandInput,
  GenerateDataKeyCommand,
  type GenerateDataKeyCommandInput,
  KMSClient,
} from '@aws-sdk/client-kms';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  BatchGetCommand,
  type BatchGetCommandInput,
  DynamoDBDocumentClient,
  GetCommand,
  type GetCommandInput,
  PutCommand,
  type PutCommandInput,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import { seal } from '#adapters/sealed';
import type { DeliveryMessage, EngagementSyncMessage, WebhookJob } from '#core/messages';
import { PLATFORMS, type Platform } from '#core/platforms';
import { type DeliveryRecord, startPublishing, type VariantRecord } from '#core/posts';
import { handler as createPost } from '#handlers/create-post';
import { handler as createWebhookEndpoint } from '#handlers/create-webhook-endpoint';
import { handler as deliveryWorker } from '#handlers/delivery-worker';
import { handler as engagementSyncWorker } from '#handlers/engagement-sync-worker';
import { handler as getPost } from '#handlers/get-post';
import { handler as rotateWebhookSecret } from '#handlers/rotate-webhook-secret';
import { handler as testWebhookEndpoint } from '#handlers/test-webhook-endpoint';
import { handler as webhookDelivery } from '#handlers/webhook-delivery';
import { SCOPES } from '#lib/operations';
import { logger } from '#shared/logger';
import { clearAuthCache } from '#usecases/support/authenticate';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  channel,
  channelItem,
  counters,
  daysFromNow,
  fixedId,
  type Item,
  jsonHeaders,
  jsonOf,
  lambdaContext,
  mediaAsset,
  mediaItem,
  ORG_ID,
  org,
  orgItem,
  post,
  postItem,
  sqsEvent,
  tableReads,
  variant,
  webhookEndpoint,
  webhookEndpointItem,
} from '../support/fixtures.ts';

// Secrets never reach the logs (security review). The local stack's output is not readable from the
// e2e tests, so the handlers run here, at DEBUG, with mocked AWS clients and loopback HTTP servers,
// while everything written to stdout, stderr and the console is captured. Each secret Herald holds
// (API keys, webhook signing secrets, channel tokens and app passwords) goes through its handlers,
// including error paths where a dependency fails with an error that echoes what it was sent (as
// a naive logger would repeat it). Table writes are checked too: a credential may only ever be
// written to its own CREDS# item.
//
// The connector cases point every platform at one loopback server that answers with an error body
// repeating the request (authorization header, query string, form body), as a proxy, an error page
// or a self-hosted Mastodon/PDS may. Until platform error messages are redacted before the delivery
// worker and the engagement sync log and store them, these cases fail for the connectors that put
// the body into their messages (see the security review report).

vi.hoisted(() => {
  vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'DEBUG');
  vi.stubEnv('POWERTOOLS_DEV', undefined);
  vi.stubEnv('POWERTOOLS_LOGGER_LOG_EVENT', undefined);
  vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', undefined);
  vi.stubEnv('HERALD_WEBHOOK_ALLOW_CIDRS', '127.0.0.0/8');
  vi.stubEnv('HERALD_TIME_SCALE', undefined);
});

const ddb = mockClient(DynamoDBDocumentClient);
const kms = mockClient(KMSClient);
const sqs = mockClient(SQSClient);
const s3 = mockClient(S3Client);

// ---- capture of everything logged --------------------------------------------------------------

let captured: string[] = [];
const output = () => captured.join('');

function capture() {
  const line = (prefix: string, text: string) => {
    captured.push(`${prefix} ${text}${text.endsWith('\n') ? '' : '\n'}`);
  };
  const stream =
    (prefix: string) =>
    (chunk: unknown): boolean => {
      line(prefix, typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
      return true;
    };
  vi.spyOn(process.stdout, 'write').mockImplementation(stream('[stdout]') as typeof process.stdout.write);
  vi.spyOn(process.stderr, 'write').mockImplementation(stream('[stderr]') as typeof process.stderr.write);
  for (const m of ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const) {
    vi.spyOn(console, m).mockImplementation((...args: unknown[]) =>
      line(
        `[console.${m}]`,
        args.map((a) => (typeof a === 'string' ? a : (JSON.stringify(a) ?? String(a)))).join(' '),
      ),
    );
  }
}

/** Every secret value a test handled; none may appear in the captured output. */
const secrets = new Set<string>();
const secret = (name: string) => {
  const value = `${name}-${randomBytes(12).toString('hex')}`;
  secrets.add(value);
  return value;
};

/** The secrets and the forms they travel in (HTTP Basic credentials of a client secret). */
function secretForms(): Map<string, string> {
  const forms = new Map<string, string>();
  for (const s of secrets) {
    forms.set(s, s);
    for (const id of ['client-id', 'client-key'])
      forms.set(`base64(${id}:${s})`, Buffer.from(`${id}:${s}`).toString('base64'));
  }
  return forms;
}

const leaksIn = (text: string) =>
  [...secretForms()].filter(([, form]) => text.includes(form)).map(([name]) => name);

function expectNoSecretsLogged() {
  const out = output();
  expect(leaksIn(out), `secrets in the logs:\n${out}`).toEqual([]);
  expect(out).not.toMatch(/svc_live_/);
  expect(out).not.toMatch(/whsec_/);
}

// ---- the mocked table ----------------------------------------------------------------------------

const idOf = (k: Record<string, unknown> | undefined) => `${String(k?.pk)}\u0000${String(k?.sk)}`;
const copy = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
let items = new Map<string, Item>();
/** Every key the handlers read with GetItem or BatchGetItem. */
let reads: string[] = [];
/** Every write the handlers sent (command name, target key, input). */
let writes: Array<{ command: string; key: string; input: unknown }> = [];
/** Makes the next matching command fail with an error that repeats its whole input. */
let failWhen: ((command: string, input: Record<string, unknown>) => boolean) | undefined;
let limiter = counters();

class EchoingDynamoError extends Error {
  constructor(command: string, input: unknown) {
    super(`${command} failed: One or more parameter values were invalid: ${JSON.stringify(input)}`);
    this.name = 'ValidationException';
  }
}

function maybeFail(command: string, input: Record<string, unknown>) {
  if (failWhen?.(command, input)) throw new EchoingDynamoError(command, input);
}

const conditionFailed = () =>
  Object.assign(new Error('The conditional request failed'), { name: 'ConditionalCheckFailedException' });

function applySet(current: Item | undefined, input: UpdateCommandInput): Item {
  const next: Item = { ...current, ...input.Key };
  const expr = (input.UpdateExpression ?? '').replace(/\s+/g, ' ');
  const set = /^SET (.*?)(?: REMOVE .*| ADD .*)?$/.exec(expr)?.[1] ?? '';
  for (const clause of set.split(/,(?![^(]*\))/)) {
    const [name = '', value = ''] = clause.split('=').map((s) => s.trim());
    if (!value.startsWith(':')) continue;
    const path = name.split('.').map((n) => input.ExpressionAttributeNames?.[n] ?? n);
    // A delivery's own write (`deliveries.<channel> = :d`): one level deep is all the worker writes.
    if (path.length === 2) {
      const [map = '', member = ''] = path;
      next[map] = { ...(next[map] as Item | undefined), [member]: input.ExpressionAttributeValues?.[value] };
      continue;
    }
    if (path.length > 2) continue;
    next[path[0] ?? name] = input.ExpressionAttributeValues?.[value];
  }
  return next;
}

function serveTable(seed: Item[]) {
  items = new Map(seed.map((i) => [idOf(i), copy(i)]));
  const answer = tableReads((k) => {
    const found = items.get(idOf(k));
    return found ? copy(found) : undefined;
  });
  ddb.on(GetCommand).callsFake((input: GetCommandInput) => {
    reads.push(idOf(input.Key));
    maybeFail('GetItem', input as never);
    return answer.get(input);
  });
  ddb.on(BatchGetCommand).callsFake((input: BatchGetCommandInput) => {
    for (const req of Object.values(input.RequestItems ?? {})) reads.push(...(req.Keys ?? []).map(idOf));
    maybeFail('BatchGetItem', input as never);
    return answer.batchGet(input);
  });
  ddb.on(QueryCommand).callsFake((input: QueryCommandInput) => {
    // The engagement sync's SYNC#<day> buckets: every published post of the seed, under today.
    const bucket = String(input.ExpressionAttributeValues?.[':p'] ?? '');
    if (input.IndexName !== 'gsi2' || bucket !== `SYNC#${new Date().toISOString().slice(0, 10)}`)
      return { Items: [] };
    const published = [...items.values()].filter((i) => i.entity === 'post' && i.status === 'published');
    return {
      Items: published.map((i) => ({
        gsi2sk: `${String(i.published_at)}#${String(i.org_id)}#${String(i.id)}`,
      })),
    };
  });
  ddb.on(PutCommand).callsFake((input: PutCommandInput) => {
    writes.push({ command: 'PutItem', key: idOf(input.Item), input });
    maybeFail('PutItem', input as never);
    const item = input.Item ?? {};
    const current = items.get(idOf(item));
    if (input.ConditionExpression === 'version = :v') {
      if (current?.version !== input.ExpressionAttributeValues?.[':v']) throw conditionFailed();
    } else if (input.ConditionExpression === 'attribute_not_exists(pk)' && current) {
      throw conditionFailed();
    }
    items.set(idOf(item), copy(item));
    return {};
  });
  ddb.on(UpdateCommand).callsFake((input: UpdateCommandInput) => {
    const key = input.Key ?? {};
    // The request gate.
    if (String(key.sk).startsWith('USAGE#')) return limiter.update(input);
    writes.push({ command: 'UpdateItem', key: idOf(key), input });
    maybeFail('UpdateItem', input as never);
    const current = items.get(idOf(key));
    if (input.ConditionExpression?.startsWith('attribute_exists(pk)') && !current) throw conditionFailed();
    const next = applySet(current, input);
    items.set(idOf(key), copy(next));
    return input.ReturnValues === 'ALL_NEW' ? { Attributes: copy(next) } : {};
  });
  ddb.on(TransactWriteCommand).callsFake((input: TransactWriteCommandInput) => {
    for (const t of input.TransactItems ?? []) {
      const put = t.Put?.Item;
      const k = put ?? t.Update?.Key ?? t.Delete?.Key ?? t.ConditionCheck?.Key;
      writes.push({ command: 'TransactWriteItems', key: idOf(k), input: t });
    }
    maybeFail('TransactWriteItems', input as never);
    for (const t of input.TransactItems ?? []) if (t.Put?.Item) items.set(idOf(t.Put.Item), copy(t.Put.Item));
    return {};
  });
}

/** Writes outside a channel's CREDS# item that carry a secret (a token copied into a post, channel or log). */
function storedLeaks(): string[] {
  return writes
    .filter((w) => !w.key.includes('\u0000CREDS#'))
    .flatMap((w) =>
      leaksIn(JSON.stringify(w.input)).map((s) => `${w.command} ${w.key.replace('\u0000', ' ')}: ${s}`),
    );
}

function expectNoSecretsStored() {
  expect(storedLeaks()).toEqual([]);
}

// ---- KMS: sealed secrets ------------------------------------------------------------------------

const sealed = new Map<string, string>();

function serveKms() {
  kms.on(EncryptCommand).callsFake((input: EncryptCommandInput) => {
    const plain = Buffer.from(input.Plaintext ?? []).toString('utf8');
    secrets.add(plain);
    const blob = Buffer.from(`sealed:${randomUUID()}`);
    sealed.set(blob.toString('base64'), plain);
    return { CiphertextBlob: blob, KeyId: input.KeyId };
  });
  // Data keys of envelope-sealed values (channel tokens, platform apps' secrets).
  kms.on(GenerateDataKeyCommand).callsFake((input: GenerateDataKeyCommandInput) => {
    const key = randomBytes(32);
    const blob = Buffer.from(`datakey:${randomUUID()}`);
    sealed.set(blob.toString('base64'), key.toString('base64'));
    return { Plaintext: new Uint8Array(key), CiphertextBlob: blob, KeyId: input.KeyId };
  });
  kms.on(DecryptCommand).callsFake((input: DecryptCommandInput) => {
    const id = Buffer.from(input.CiphertextBlob ?? []).toString('base64');
    if (
      Buffer.from(input.CiphertextBlob ?? [])
        .toString('utf8')
        .startsWith('datakey:')
    ) {
      const key = sealed.get(id);
      if (!key)
        throw Object.assign(new Error('InvalidCiphertextException'), { name: 'InvalidCiphertextException' });
      return { Plaintext: Buffer.from(key, 'base64'), KeyId: input.KeyId };
    }
    const plain = sealed.get(id);
    if (!plain)
      throw Object.assign(new Error('InvalidCiphertextException'), { name: 'InvalidCiphertextException' });
    return { Plaintext: Buffer.from(plain, 'utf8'), KeyId: input.KeyId };
  });
}

function sealedSecret(): { plain: string; blob: string } {
  const plain = `whsec_${randomBytes(32).toString('base64')}`;
  secrets.add(plain);
  const blob = Buffer.from(`sealed:${randomUUID()}`).toString('base64');
  sealed.set(blob, plain);
  return { plain, blob };
}

// ---- loopback servers ---------------------------------------------------------------------------

/**
 * One server for webhook receivers and platform APIs. It answers `status` with a body that repeats
 * everything it was sent (authorization header, URL with its query, body): a platform echoing the
 * credentials in its error, the worst case for a connector that puts error bodies into messages.
 */
let server: http.Server;
let origin = '';
let status = 401;
let seen: Array<{ method: string; url: string }> = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '' });
      const echo = `denied: authorization=${req.headers.authorization ?? '-'} url=${req.url} body=${Buffer.concat(chunks).toString('utf8')}`;
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(echo);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  for (const p of ['x', 'linkedin', 'linkedin_oauth', 'threads', 'instagram', 'facebook', 'tiktok']) {
    vi.stubEnv(`HERALD_PLATFORM_${p.toUpperCase()}_URL`, origin);
  }
  for (const p of ['youtube', 'youtube_oauth', 'pinterest']) {
    vi.stubEnv(`HERALD_PLATFORM_${p.toUpperCase()}_URL`, origin);
  }
  logger.setLogLevel('DEBUG');
});

afterAll(async () => {
  vi.unstubAllEnvs();
  server.closeAllConnections();
  await new Promise<void>((ok) => server.close(() => ok()));
});

// ---- fixtures ------------------------------------------------------------------------------------

const KEY = apiKey({ scopes: [...SCOPES], n: 1 });
const ENDPOINT_ID = fixedId('webhook', 1);

const endpointItem = (secretBlob: string): Item =>
  webhookEndpointItem(
    webhookEndpoint({ id: ENDPOINT_ID, url: `${origin}/hooks`, secret: { current: secretBlob } }),
  );

const call = (
  h: (e: ReturnType<typeof apiEvent>, c: ReturnType<typeof lambdaContext>) => Promise<unknown>,
  op: string,
  opts: { body?: unknown; id?: string; headers?: Record<string, string> } = {},
) =>
  h(
    apiEvent(op, {
      headers: opts.headers ?? jsonHeaders(KEY),
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
      ...(opts.id ? { pathParameters: { id: opts.id } } : {}),
    }),
    lambdaContext(op),
  ) as Promise<{ statusCode: number; body?: string }>;

const baseItems = () => [apiKeyItem(KEY), orgItem(org({ dangerous_ops: true }))];

beforeEach(() => {
  ddb.reset();
  kms.reset();
  sqs.reset();
  s3.reset();
  s3.on(GetObjectCommand).resolves({
    Body: { transformToByteArray: async () => new Uint8Array(2048) },
  } as never);
  clearAuthCache();
  reads = [];
  writes = [];
  failWhen = undefined;
  limiter = counters();
  status = 401;
  seen = [];
  serveKms();
  sqs.on(SendMessageCommand).resolves({});
  sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
  captured = [];
  secrets.clear();
  secrets.add(KEY.key);
  capture();
});

afterEach(() => {
  vi.restoreAllMocks();
});

// ---- the tests -------------------------------------------------------------------------------------

describe('the capture', () => {
  it('sees the handlers’ logger at DEBUG (so the absence of secrets below means something)', () => {
    logger.debug('canary', { marker: 'debug-canary' });
    logger.error('canary', { error: new Error('error-canary') });
    expect(output()).toContain('debug-canary');
    expect(output()).toContain('error-canary');
  });
});

describe('API keys', () => {
  it('a bad key and a good key are never logged, nor is the good key when its lookup fails', async () => {
    serveTable(baseItems());
    const bad = `svc_live_${randomBytes(24).toString('base64url')}`;
    secrets.add(bad);
    const refused = await call(getPost, 'getPost', {
      id: fixedId('post', 9),
      headers: { authorization: `Bearer ${bad}` },
    });
    expect(refused.statusCode).toBe(401);
    const viaHeader = await call(getPost, 'getPost', {
      id: fixedId('post', 9),
      headers: { 'x-api-key': bad },
    });
    expect(viaHeader.statusCode).toBe(401);
    const missing = await call(getPost, 'getPost', { id: fixedId('post', 9) });
    expect(missing.statusCode).toBe(404);
    // The key lookup itself fails with an error that repeats its whole request.
    clearAuthCache();
    failWhen = (cmd, input) => cmd === 'GetItem' && String((input.Key as Item).pk).startsWith('APIKEY#');
    const failed = await call(getPost, 'getPost', { id: fixedId('post', 9) });
    expect(failed.statusCode).toBe(500);
    expect(output()).toContain('request failed');
    // The request did reach the logs: by its hash, never by the key.
    expect(output()).toContain(`APIKEY#${KEY.hash}`);
    expectNoSecretsLogged();
  });
});

describe('webhook signing secrets', () => {
  it('createWebhookEndpoint answers the secret once and never logs it, even when the write fails', async () => {
    serveTable(baseItems());
    const body = { url: `${origin}/hooks`, event_types: ['post.published'] };
    const created = await call(createWebhookEndpoint, 'createWebhookEndpoint', { body });
    expect(created.statusCode).toBe(201);
    const secretValue = jsonOf<{ secret: string }>(created).secret;
    expect(secretValue).toMatch(/^whsec_/);
    expect(secrets).toContain(secretValue);

    failWhen = (cmd) => cmd === 'TransactWriteItems';
    const failed = await call(createWebhookEndpoint, 'createWebhookEndpoint', { body });
    expect(failed.statusCode).toBe(500);
    expect(failed.body).not.toContain('whsec_');
    expect(output()).toContain('request failed');
    // The echo of the write reached the logs: the endpoint item, with its secret sealed.
    expect(output()).toContain('WHE#');
    expectNoSecretsLogged();
    expectNoSecretsStored();
  });

  it('rotateWebhookSecret never logs the new or the previous secret, even when the write fails', async () => {
    const current = sealedSecret();
    serveTable([...baseItems(), endpointItem(current.blob)]);
    const rotated = await call(rotateWebhookSecret, 'rotateWebhookSecret', { id: ENDPOINT_ID });
    expect(rotated.statusCode).toBe(200);
    expect(jsonOf<{ secret: string }>(rotated).secret).toMatch(/^whsec_/);

    failWhen = (cmd, input) => cmd === 'UpdateItem' && String((input.Key as Item).sk).startsWith('WHE#');
    const failed = await call(rotateWebhookSecret, 'rotateWebhookSecret', { id: ENDPOINT_ID });
    expect(failed.statusCode).toBe(500);
    expect(output()).toContain('request failed');
    expectNoSecretsLogged();
    expectNoSecretsStored();
  });

  it('testWebhookEndpoint signs with the secret without logging it, on success, refusal and a failing write', async () => {
    const current = sealedSecret();
    serveTable([...baseItems(), endpointItem(current.blob)]);
    status = 200;
    const delivered = await call(testWebhookEndpoint, 'testWebhookEndpoint', { id: ENDPOINT_ID });
    expect(jsonOf<{ delivered: boolean }>(delivered)).toMatchObject({ delivered: true });
    status = 500;
    const refused = await call(testWebhookEndpoint, 'testWebhookEndpoint', { id: ENDPOINT_ID });
    expect(jsonOf<{ delivered: boolean }>(refused)).toMatchObject({ delivered: false, status_code: 500 });

    failWhen = (cmd) => cmd === 'PutItem';
    const failed = await call(testWebhookEndpoint, 'testWebhookEndpoint', { id: ENDPOINT_ID });
    expect(failed.statusCode).toBe(500);
    expect(output()).toContain('request failed');
    expect(seen.filter((r) => r.url === '/hooks')).toHaveLength(3);
    expectNoSecretsLogged();
    expectNoSecretsStored();
  });

  it('the webhook delivery worker signs and retries without logging the secret, and fails a batch item quietly', async () => {
    const current = sealedSecret();
    serveTable([...baseItems(), endpointItem(current.blob)]);
    const job = (eventId: string): WebhookJob => ({
      org_id: ORG_ID,
      endpoint_id: ENDPOINT_ID,
      event: {
        id: eventId,
        type: 'post.published',
        timestamp: new Date().toISOString(),
        data: { post_id: fixedId('post', 1) },
      },
      attempt: 1,
      due_at: new Date().toISOString(),
    });
    status = 500;
    const ok = await webhookDelivery(
      sqsEvent([{ body: JSON.stringify(job(fixedId('message', 1))) }]),
      lambdaContext('webhookDelivery'),
    );
    expect(ok.batchItemFailures).toEqual([]);
    expect(output()).toContain('webhook attempt');
    // Recording the attempt fails with an error echoing it.
    failWhen = (cmd, input) =>
      cmd === 'UpdateItem' && input.ConditionExpression === 'claim_token = :token AND claim_n = :n';
    const failed = await webhookDelivery(
      sqsEvent([{ body: JSON.stringify(job(fixedId('message', 2))) }]),
      lambdaContext('webhookDelivery'),
    );
    expect(failed.batchItemFailures).toHaveLength(1);
    expect(seen.filter((r) => r.url === '/hooks')).toHaveLength(2);
    expectNoSecretsLogged();
    expectNoSecretsStored();
  });
});

// ---- channel credentials ------------------------------------------------------------------------

/** Every connector, written out (the env stubs above name their API origins): checked against PLATFORMS below. */
const CONNECTOR_PLATFORMS: Platform[] = [
  'bluesky',
  'mastodon',
  'x',
  'linkedin',
  'threads',
  'instagram',
  'facebook',
  'tiktok',
  'youtube',
  'pinterest',
];

/** Credentials as `herald channel connect` stores them, every secret distinctive; expired, so refreshes run. */
function credentialsFor(platform: Platform): Item {
  if (platform === 'bluesky')
    return { service: origin, identifier: 'acme.bsky.social', app_password: secret('app-password') };
  if (platform === 'mastodon') return { instance: origin, access_token: secret('access-token') };
  return {
    access_token: secret('access-token'),
    refresh_token: secret('refresh-token'),
    expires_at: '2020-01-01T00:00:00.000Z',
    account_id: platform === 'linkedin' ? 'urn:li:person:abc' : '1234567890',
  };
}

const CH = (platform: Platform) => channel(1, platform);

/** The operator's app of an OAuth platform, its client secret sealed (refreshes open it). */
async function platformAppItem(platform: Platform): Promise<Item[]> {
  if (platform === 'bluesky' || platform === 'mastodon') return [];
  return [
    {
      ...keys.platformApp(platform),
      entity: 'platform_app',
      platform,
      client_id: platform === 'tiktok' ? 'client-key' : 'client-id',
      secret: await seal({ purpose: 'platform_app', platform }, secret('client-secret')),
      redirect_uri: `https://api.example.com/oauth/callback/${platform}`,
      scopes: null,
      updated_at: '2030-01-01T00:00:00.000Z',
    },
  ];
}
const credsItem = (platform: Platform) => ({
  ...keys.channelCredentials(ORG_ID, CH(platform).id),
  entity: 'channel_credentials',
  credentials: credentialsFor(platform),
});

/** Platforms that refuse a post without media get a ready asset (its bytes come from the mocked bucket). */
const NEEDS_MEDIA: Partial<Record<Platform, 'image' | 'video'>> = {
  instagram: 'image',
  pinterest: 'image',
  tiktok: 'video',
  youtube: 'video',
};
const MEDIA_ID = fixedId('media', 1);

function mediaFor(platform: Platform): { variantMedia: VariantRecord['media']; items: Item[] } {
  const kind = NEEDS_MEDIA[platform];
  if (!kind) return { variantMedia: [], items: [] };
  const asset = mediaAsset({
    id: MEDIA_ID,
    status: 'ready',
    kind,
    filename: kind === 'image' ? 'a.png' : 'a.mp4',
    content_type: kind === 'image' ? 'image/png' : 'video/mp4',
    size_bytes: 2048,
    width: 640,
    height: 640,
    duration_sec: kind === 'video' ? 5 : null,
  });
  return { variantMedia: [{ url: asset.url, type: kind, alt: 'alt' }], items: [mediaItem(asset)] };
}

describe('channel credentials', () => {
  it('createPost never reads, copies or logs them, even when the insert fails', async () => {
    const ch = CH('mastodon');
    serveTable([...baseItems(), channelItem(ch), credsItem('mastodon')]);
    const body = { variants: [{ channel_id: ch.id, body: 'Hello' }], scheduled_at: daysFromNow(3) };
    const created = await call(createPost, 'createPost', { body });
    expect(created.statusCode).toBe(201);
    failWhen = (cmd, input) => cmd === 'PutItem' && (input.Item as Item | undefined)?.entity === 'post';
    const failed = await call(createPost, 'createPost', { body });
    expect(failed.statusCode).toBe(500);
    expect(output()).toContain('request failed');
    expect(reads, 'the channel was read (so the reads were recorded)').toContain(
      idOf(keys.channel(ORG_ID, ch.id)),
    );
    expect(
      reads.filter((k) => k.split('\u0000').some((part) => part.startsWith('CREDS#'))),
      'credentials read',
    ).toEqual([]);
    expectNoSecretsLogged();
    expectNoSecretsStored();
  });

  it('the cases below cover every platform', () => {
    expect([...CONNECTOR_PLATFORMS].sort()).toEqual([...PLATFORMS].sort());
  });

  it.each(CONNECTOR_PLATFORMS.flatMap((p) => [401, 400, 503].map((s) => [p, s] as const)))(
    'the delivery worker publishing to %s, answered %i with the credentials echoed, logs and stores none of them',
    async (platform, answer) => {
      const ch = CH(platform);
      const postId = fixedId('post', 1);
      const media = mediaFor(platform);
      const publishing = startPublishing(
        post({
          id: postId,
          variants: [{ ...variant(ch.id, 1), body: 'Hello from Herald', media: media.variantMedia }],
        }),
        new Date(Date.now() - 5_000),
      );
      serveTable([
        ...baseItems(),
        ...(await platformAppItem(platform)),
        postItem(publishing),
        channelItem(ch),
        credsItem(platform),
        ...media.items,
      ]);
      status = answer;
      const msg: DeliveryMessage = { org_id: ORG_ID, post_id: postId, channel_id: ch.id, round: 1 };
      const res = await deliveryWorker(
        sqsEvent([{ body: JSON.stringify(msg) }]),
        lambdaContext('deliveryWorker'),
      );
      expect(res.batchItemFailures).toEqual([]);
      expect(seen.length, 'the connector called the platform').toBeGreaterThan(0);
      // The attempt's outcome line, which carries the platform's error (redacted).
      expect(output()).toMatch(/"message":"delivery (retrying|failed)".*"error":/);
      const out = output();
      expect({ logged: leaksIn(out), stored: storedLeaks() }, out).toEqual({ logged: [], stored: [] });
      expect(out).not.toMatch(/svc_live_|whsec_/);
    },
  );

  it.each(CONNECTOR_PLATFORMS.flatMap((p) => [401, 503].map((s) => [p, s] as const)))(
    'the engagement sync asking %s for metrics, answered %i with the credentials echoed, logs and stores none of them',
    async (platform, answer) => {
      const ch = CH(platform);
      const now = new Date().toISOString();
      const delivery = {
        channel_id: ch.id,
        stage: 'published',
        external_id: '1111111111',
        url: null,
        error: null,
        error_category: null,
        attempts: 1,
        updated_at: now,
        round: 1,
      } as DeliveryRecord;
      const published = post({
        id: fixedId('post', 2),
        status: 'published',
        published_at: now,
        round: 1,
        variants: [variant(ch.id, 1)],
        deliveries: { [ch.id]: delivery },
      });
      serveTable([
        ...baseItems(),
        ...(await platformAppItem(platform)),
        postItem(published),
        channelItem(ch),
        credsItem(platform),
      ]);
      status = answer;
      const msg: EngagementSyncMessage = { posts: [{ org_id: ORG_ID, post_id: published.id }] };
      const res = await engagementSyncWorker(
        sqsEvent([{ body: JSON.stringify(msg) }]),
        lambdaContext('engagementSyncWorker'),
      );
      expect(res.batchItemFailures).toEqual([]);
      expect(seen.length, 'the connector called the platform').toBeGreaterThan(0);
      const out = output();
      expect({ logged: leaksIn(out), stored: storedLeaks() }, out).toEqual({ logged: [], stored: [] });
      expect(out).not.toMatch(/svc_live_|whsec_/);
    },
  );
});
