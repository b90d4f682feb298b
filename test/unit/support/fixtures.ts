import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  type BatchGetCommandInput,
  type DynamoDBDocumentClient,
  GetCommand,
  type GetCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2, Context, SQSEvent, SQSRecord } from 'aws-lambda';
import type { AwsClientStub } from 'aws-sdk-client-mock';
import { keys } from '#adapters/keys';
import {
  type ApiKeyRecord,
  type ChannelRecord,
  hashApiKey,
  type Org,
  type OrgSettings,
} from '#core/accounts';
import type { Problem } from '#core/errors';
import { ID_PREFIXES, type IdKind } from '#core/ids';
import type { InboxItemRecord } from '#core/inbox';
import type { MediaAssetRecord } from '#core/media';
import type { Platform } from '#core/platforms';
import { dueAt, type PostRecord, type VariantRecord } from '#core/posts';
import type { WebhookEndpointRecord } from '#core/webhooks';
import { findOperation, type Scope } from '#lib/operations';
import { lambdaContext as localLambdaContext } from '../../../bin/local/front-door.ts';
import { update as applyUpdate, condition } from './expressions.ts';

// Typed fixtures shared by the unit tests: records as the table stores them, API Gateway v2 events
// and a Lambda context like the ones the local front door builds.

export type Item = Record<string, unknown>;
export type DocStub = AwsClientStub<DynamoDBDocumentClient>;

export const TABLE = process.env.TABLE_NAME ?? 'herald-test';

/** A valid prefixed ULID, stable per (kind, n). */
export const fixedId = (kind: IdKind, n: number) => `${ID_PREFIXES[kind]}_01JD${String(n).padStart(22, '0')}`;

export const ORG_ID = fixedId('org', 1);
export const OTHER_ORG_ID = fixedId('org', 2);
export const CREATED_AT = '2030-01-01T00:00:00.000Z';

export function org(settings: Partial<OrgSettings> = {}, id = ORG_ID): Org {
  return {
    id,
    name: 'Acme',
    plan: 'team',
    settings: { dangerous_ops: false, approval_required: false, ...settings },
    created_at: CREATED_AT,
    updated_at: CREATED_AT,
  };
}

export function channel(n: number, platform: Platform = 'bluesky', orgId = ORG_ID): ChannelRecord {
  return {
    id: fixedId('channel', n),
    org_id: orgId,
    platform,
    handle: `acme-${n}`,
    avatar_url: null,
    followers: 0,
    status: 'live',
    last_sync_at: null,
    last_error: null,
    created_at: CREATED_AT,
  };
}

export function variant(channelId: string, n = 1): VariantRecord {
  return { id: fixedId('variant', n), channel_id: channelId, body: 'Hello', media: [], options: {} };
}

export function post(overrides: Partial<PostRecord> = {}): PostRecord {
  return {
    id: fixedId('post', 1),
    org_id: ORG_ID,
    status: 'draft',
    type: 'single',
    title: null,
    body: null,
    scheduled_at: null,
    published_at: null,
    created_at: CREATED_AT,
    updated_at: CREATED_AT,
    variants: [variant(fixedId('channel', 1))],
    deliveries: {},
    round: 0,
    version: 1,
    approval: null,
    counted_period: null,
    ...overrides,
  };
}

/** A webhook endpoint, healthy; `secret.current` stands for a KMS ciphertext (base64). */
export function webhookEndpoint(overrides: Partial<WebhookEndpointRecord> = {}): WebhookEndpointRecord {
  return {
    entity: 'webhook_endpoint',
    id: fixedId('webhook', 1),
    org_id: ORG_ID,
    url: 'https://hooks.example/herald',
    description: null,
    event_types: ['post.published'],
    enabled: true,
    state: 'active',
    failure: { consecutive_failures: 0 },
    secret: { current: Buffer.from('sealed-secret').toString('base64') },
    created_at: CREATED_AT,
    updated_at: CREATED_AT,
    version: 1,
    ...overrides,
  };
}

/**
 * A media asset as createMediaUpload stores it: pending, an image, its url and S3 keys built from
 * its id, org and filename (as the use case builds them), the ticket ending 15 minutes after
 * CREATED_AT.
 */
export function mediaAsset(overrides: Partial<MediaAssetRecord> = {}): MediaAssetRecord {
  const id = overrides.id ?? fixedId('media', 1);
  const orgId = overrides.org_id ?? ORG_ID;
  const file = overrides.filename ?? 'a.png';
  return {
    id,
    org_id: orgId,
    status: 'pending',
    kind: 'image',
    url: `https://media.example/orgs/${orgId}/media/${id}/${file}`,
    filename: file,
    content_type: 'image/png',
    size_bytes: 0,
    width: null,
    height: null,
    duration_sec: null,
    poster_url: null,
    upload_key: `uploads/${orgId}/${id}/${file}`,
    object_key: `orgs/${orgId}/media/${id}/${file}`,
    poster_key: null,
    expires_at: '2030-01-01T00:15:00.000Z',
    created_at: CREATED_AT,
    updated_at: CREATED_AT,
    ...overrides,
  };
}

/** A 2×3 PNG: the signature, then an IHDR chunk with width 2 and height 3. */
export const PNG_2x3 = Uint8Array.from([
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 2, 0, 0, 0, 3,
  8, 6, 0, 0, 0, 0, 0, 0, 0,
]);

export interface KeyFixture {
  /** The plaintext key a client presents. */
  key: string;
  hash: string;
  record: ApiKeyRecord;
}

export function apiKey(opts: { scopes: Scope[]; n?: number; orgId?: string; revoked?: boolean }): KeyFixture {
  const n = opts.n ?? 1;
  const key = `svc_live_unitTestKey${String(n).padStart(4, '0')}${'x'.repeat(24)}`;
  return {
    key,
    hash: hashApiKey(key),
    record: {
      id: fixedId('key', n),
      org_id: opts.orgId ?? ORG_ID,
      name: null,
      scopes: opts.scopes,
      created_by: fixedId('user', 1),
      created_at: CREATED_AT,
      revoked_at: opts.revoked ? CREATED_AT : null,
      prefix: key.slice(0, 12),
    },
  };
}

// ---- table items -----------------------------------------------------------------------------

export const orgItem = (o: Org): Item => ({ ...keys.org(o.id), entity: 'org', ...o });
export const channelItem = (c: ChannelRecord): Item => ({
  ...keys.channel(c.org_id, c.id),
  entity: 'channel',
  ...c,
});
/** An inbox item (a comment on the org's channel `n`), as the poller stores it. */
export function inboxRecord(n: number, rest: Partial<InboxItemRecord> = {}): InboxItemRecord {
  return {
    id: fixedId('inbox', n),
    org_id: ORG_ID,
    channel_id: fixedId('channel', 1),
    platform: 'bluesky',
    kind: 'comment',
    status: 'unread',
    text: 'Great launch!',
    url: null,
    author: { handle: 'fan.example', name: 'A Fan', avatar_url: null, platform_id: 'did:plc:fan' },
    post_id: null,
    in_reply_to: 'at://did:plc:acme/app.bsky.feed.post/1',
    conversation_id: 'at://did:plc:acme/app.bsky.feed.post/1',
    platform_id: `at://did:plc:fan/app.bsky.feed.post/${n}`,
    created_at: CREATED_AT,
    received_at: CREATED_AT,
    replies: [],
    version: 1,
    ...rest,
  };
}
/** A post's item with its index keys, as adapters/posts.ts writes it (a publishing post is due-work). */
export const postItem = (p: PostRecord): Item => ({
  ...keys.post(p.org_id, p.id),
  ...keys.postByStatus(p.org_id, p.status, p.id),
  ...(p.status === 'publishing' && dueAt(p) ? keys.dueWork(dueAt(p) as string, p.org_id, p.id) : {}),
  entity: 'post',
  ...p,
});
export const apiKeyItem = (k: KeyFixture): Item => ({
  ...keys.apiKey(k.hash),
  ...keys.apiKeyByOrg(k.record.org_id, k.record.id),
  entity: 'api_key',
  ...k.record,
});

export const webhookEndpointItem = (e: WebhookEndpointRecord): Item => ({
  ...keys.webhookEndpoint(e.org_id, e.id),
  ...e,
});
/** A comment on the org's Bluesky channel 1, unread, as the inbox poller stores it (no version yet). */
export function inboxComment(overrides: Partial<InboxItemRecord> = {}): InboxItemRecord {
  return {
    id: fixedId('inbox', 1),
    org_id: ORG_ID,
    channel_id: fixedId('channel', 1),
    platform: 'bluesky',
    kind: 'comment',
    status: 'unread',
    text: 'Nice post!',
    url: 'https://bsky.app/profile/someone.bsky.social/post/3kcomment',
    author: {
      handle: 'someone.bsky.social',
      name: 'Someone',
      avatar_url: null,
      platform_id: 'did:plc:someone',
    },
    post_id: null,
    in_reply_to: 'at://did:plc:acme/app.bsky.feed.post/3kroot',
    conversation_id: 'at://did:plc:acme/app.bsky.feed.post/3kroot',
    platform_id: 'at://did:plc:someone/app.bsky.feed.post/3kcomment',
    created_at: CREATED_AT,
    received_at: CREATED_AT,
    replies: [],
    ...overrides,
  };
}
/** An inbox item with its keys and status entry, as adapters/inbox.ts inboxItemOf writes it. */
export const inboxItemItem = (r: InboxItemRecord): Item => ({
  ...keys.inboxItem(r.org_id, r.id),
  ...keys.inboxByStatus(r.org_id, r.status, r.id),
  entity: 'inbox_item',
  ...r,
  ttl: Math.floor(Date.parse(r.received_at) / 1000) + 90 * 86_400,
});
export const mediaItem = (a: MediaAssetRecord): Item => ({
  ...keys.media(a.org_id, a.id),
  entity: 'media',
  ...a,
});

const keyOf = (k: Record<string, unknown>) => `${String(k.pk)}\u0000${String(k.sk)}`;

/** The item under a key, if any. */
export type Lookup = (key: Record<string, unknown>) => Item | undefined;

/** GetItem and BatchGetItem answers from `items` (or a lookup), as the table would give them. */
export function tableReads(items: Item[] | Lookup) {
  let lookup: Lookup;
  if (Array.isArray(items)) {
    const byKey = new Map<string, Item>(items.map((i) => [keyOf(i), i]));
    lookup = (k) => byKey.get(keyOf(k));
  } else {
    lookup = items;
  }
  return {
    get: (input: GetCommandInput) => ({ Item: lookup(input.Key ?? {}) }),
    batchGet: (input: BatchGetCommandInput) => {
      const responses: Record<string, Item[]> = {};
      for (const [table, req] of Object.entries(input.RequestItems ?? {})) {
        responses[table] = (req.Keys ?? []).flatMap((k): Item[] => {
          const found = lookup(k);
          return found ? [found] : [];
        });
      }
      return { Responses: responses, UnprocessedKeys: {} };
    },
  };
}

/** Answers GetItem and BatchGetItem from `items`, as the table would. */
export function serveItems(ddb: DocStub, items: Item[]): void {
  const reads = tableReads(items);
  ddb.on(GetCommand).callsFake(reads.get);
  ddb.on(BatchGetCommand).callsFake(reads.batchGet);
}

/** Starting values of the request gate's counters nobody has touched yet (a fresh month is empty). */
export interface CounterStart {
  /** Every key's count in the current burst window (the gate's `<key id>.n`). */
  burst?: number;
  /** The org's api_requests this month (`ORG#<org>` / `USAGE#<YYYY-MM>`). */
  api_requests?: number;
  posts_per_month?: number;
  /** Every key presented was revoked at the gate (its entry is `{r: revoked_at}`, as `key revoke` writes). */
  revoked?: boolean;
}

/**
 * UpdateItem answered by an in-memory table with DynamoDB's semantics (the shared expression
 * evaluator): conditions refuse with ConditionalCheckFailedException, carrying the old item when
 * ReturnValuesOnConditionCheckFailure is ALL_OLD; UPDATED_NEW answers the touched attributes.
 * `items` holds the items written, keyed `pk sk`, for inspection; the gate item of a month starts
 * from `start`, its key windows in the current minute.
 */
export function counters(start: CounterStart = {}) {
  const items = new Map<string, Item>();
  const initial = (input: UpdateCommandInput): Item => {
    const out: Item = {};
    if (!String(input.Key?.sk).startsWith('USAGE#')) return out;
    if (start.api_requests !== undefined) out.api_requests = start.api_requests;
    if (start.posts_per_month !== undefined) out.posts_per_month = start.posts_per_month;
    const keyId = input.ExpressionAttributeNames?.['#k'];
    if (start.revoked && keyId) out[keyId] = { r: new Date().toISOString() };
    else if (start.burst !== undefined && keyId)
      out[keyId] = { w: Math.floor(Date.now() / 60_000), n: start.burst };
    return out;
  };
  const update = (input: UpdateCommandInput) => {
    const key = input.Key ?? {};
    const id = `${String(key.pk)} ${String(key.sk)}`;
    const item = items.get(id) ?? initial(input);
    const names = input.ExpressionAttributeNames;
    const values = input.ExpressionAttributeValues;
    if (input.ConditionExpression && !condition(input.ConditionExpression, names, values)(item)) {
      const err = new ConditionalCheckFailedException({
        message: 'The conditional request failed',
        $metadata: {},
      });
      if (input.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && Object.keys(item).length > 0)
        Object.assign(err, { Item: structuredClone(item) });
      throw err;
    }
    const { next, touched } = applyUpdate(item, input.UpdateExpression ?? '', names, values);
    items.set(id, next);
    if (input.ReturnValues === 'UPDATED_NEW')
      return { Attributes: Object.fromEntries([...touched].map((a) => [a, structuredClone(next[a])])) };
    return input.ReturnValues === 'ALL_NEW' ? { Attributes: structuredClone(next) } : {};
  };
  return { items, update };
}

/** Serves UpdateItem from `counters(start)`; returns the counter items, keyed `pk sk`. */
export function serveCounters(ddb: DocStub, start: CounterStart = {}): Map<string, Item> {
  const c = counters(start);
  ddb.on(UpdateCommand).callsFake(c.update);
  return c.items;
}

// ---- Lambda ------------------------------------------------------------------------------------

export function lambdaContext(functionName = 'unit', requestId = 'aws-req-unit'): Context {
  return localLambdaContext(functionName, requestId);
}

/** A message as an SQS record carries it; only the body is required. */
export interface SqsMessage {
  body: string;
  id?: string;
  receiveCount?: number;
  /** ms since epoch */
  sentAt?: number;
  queueUrl?: string;
}

/** The SQS event the event source mapping hands a worker for `messages`. */
export function sqsEvent(messages: SqsMessage[]): SQSEvent {
  return {
    Records: messages.map((m, i): SQSRecord => {
      const id = m.id ?? `m-${i}-${randomUUID()}`;
      return {
        messageId: id,
        receiptHandle: `rh-${id}`,
        body: m.body,
        attributes: {
          ApproximateReceiveCount: String(m.receiveCount ?? 1),
          SentTimestamp: String(m.sentAt ?? Date.now()),
          SenderId: 'unit',
          ApproximateFirstReceiveTimestamp: String(Date.now()),
        },
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
        eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:${m.queueUrl?.split('/').pop() ?? 'herald-unit'}`,
        awsRegion: 'us-east-1',
      };
    }),
  };
}

export interface EventOptions {
  headers?: Record<string, string>;
  pathParameters?: Record<string, string>;
  query?: Record<string, string>;
  body?: string;
  requestId?: string;
}

/** An HTTP API (payload v2) event for a manifest operation, built as API Gateway builds it. */
export function apiEvent(operationId: string, opts: EventOptions = {}): APIGatewayProxyEventV2 {
  const op = findOperation(operationId);
  const path = op.path.replace(/\{(\w+)\}/g, (_m, name: string) => opts.pathParameters?.[name] ?? '');
  const requestId = opts.requestId ?? 'req-unit-1';
  return {
    version: '2.0',
    routeKey: `${op.method} ${op.path}`,
    rawPath: path,
    rawQueryString: new URLSearchParams(opts.query ?? {}).toString(),
    headers: opts.headers ?? {},
    ...(opts.query ? { queryStringParameters: opts.query } : {}),
    ...(opts.pathParameters ? { pathParameters: opts.pathParameters } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'unit',
      domainName: 'api.unit',
      domainPrefix: 'api',
      http: { method: op.method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'vitest' },
      requestId,
      routeKey: `${op.method} ${op.path}`,
      stage: '$default',
      time: CREATED_AT,
      timeEpoch: Date.parse(CREATED_AT),
    },
    ...(opts.body !== undefined ? { body: opts.body } : {}),
    isBase64Encoded: false,
  };
}

export const bearer = (k: KeyFixture) => ({ authorization: `Bearer ${k.key}` });
export const jsonHeaders = (k: KeyFixture) => ({ ...bearer(k), 'content-type': 'application/json' });

export function problemOf(res: { body?: string | undefined }): Problem {
  return JSON.parse(res.body ?? '') as Problem;
}

export function jsonOf<T>(res: { body?: string | undefined }): T {
  return JSON.parse(res.body ?? '') as T;
}

/** An ISO time `days` from now (real clock: handlers read `new Date()`). */
export const daysFromNow = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

/** The MCP tools, in manifest order (written out: the tests' oracle, not derived from the code). */
export const MCP_TOOL_NAMES = [
  'list_channels',
  'list_media',
  'create_media_upload',
  'complete_media_upload',
  'import_media',
  'get_media',
  'delete_media',
  'list_posts',
  'create_post',
  'get_post',
  'reschedule_post',
  'delete_post',
  'publish_post',
  'update_post',
  'validate_post',
  'unpublish_post',
  'reply_to_inbox_item',
  'create_generation',
  'get_analytics',
  'get_usage',
  'list_webhook_endpoints',
  'create_webhook_endpoint',
  'update_webhook_endpoint',
  'delete_webhook_endpoint',
  'test_webhook_endpoint',
  'rotate_webhook_secret',
  'list_webhook_deliveries',
  'create_channel_connection',
  'get_channel_connection',
  'select_channel_account',
  'disconnect_channel',
  'get_channel',
  'get_channel_options',
  'list_inbox',
  'get_inbox_item',
  'update_inbox_item',
];
