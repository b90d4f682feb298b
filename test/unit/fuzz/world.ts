import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import {
  BatchWriteItemCommand,
  DeleteItemCommand,
  type DeleteItemCommandInput,
  DynamoDBClient,
  GetItemCommand,
  type GetItemCommandInput,
  PutItemCommand,
  type PutItemCommandInput,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import {
  DecryptCommand,
  type DecryptCommandInput,
  EncryptCommand,
  GenerateDataKeyCommand,
  type GenerateDataKeyCommandInput,
  KMSClient,
} from '@aws-sdk/client-kms';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { GetObjectCommand, HeadObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { SESv2Client } from '@aws-sdk/client-sesv2';
import { SFNClient } from '@aws-sdk/client-sfn';
import { SQSClient } from '@aws-sdk/client-sqs';
import {
  BatchGetCommand,
  BatchWriteCommand,
  type BatchWriteCommandInput,
  DeleteCommand,
  type DeleteCommandInput,
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
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { expect, vi } from 'vitest';
import { sealPending } from '#adapters/channel-connection-secrets';
import { type Pending, putConnection } from '#adapters/channel-connections';
import { sealCredentials } from '#adapters/channel-credentials';
import { keys } from '#adapters/keys';
import { putPlatformApp } from '#adapters/platform-apps';
import { clearGateGuesses } from '#adapters/usage';
import type { ConnectionRecord } from '#core/connections';
import { contracts, type OperationId } from '#core/contracts';
import { PROBLEMS, type Problem, type ProblemCode, problemType } from '#core/errors';
import { PLANS, type PlanName } from '#core/plans';
import { findOperation, type Operation, operations, SCOPES } from '#lib/operations';
import { docsUrl } from '#shared/config';
import { logger } from '#shared/logger';
import { buildOpenApi } from '#usecases/openapi';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  bearer,
  type CounterStart,
  CREATED_AT,
  channel,
  channelItem,
  counters,
  fixedId,
  type Item,
  inboxComment,
  inboxItemItem,
  jsonHeaders,
  lambdaContext,
  mediaAsset,
  mediaItem,
  ORG_ID,
  OTHER_ORG_ID,
  org,
  orgItem,
  post,
  postItem,
  tableReads,
  webhookEndpoint,
  webhookEndpointItem,
} from '../support/fixtures.ts';
import { FakeTable, type Key, type TransactSpec, type WriteAttempt } from './fake-table.ts';

// The world every fuzzed request runs in: all AWS clients mocked (DynamoDB through an in-memory
// table that evaluates conditions, S3, SQS, KMS, Step Functions, SES, Lambda), a seeded workspace,
// every operation's real handler, and the oracle each answer is checked against.
//
// What counts as a state change (the oracle's "no state change" for refused requests):
//
// * The table: its items after the request must equal its items before (a snapshot compare), and
//   no write may have been applied on the way, even one undone later - with one exception: the
//   Powertools idempotency record (`ORG#<org>#IDEMPOTENCY`; in the first 15 minutes after the switch
//   to per-organization records, where this world runs, also the shared `IDEMPOTENCY#createPost`),
//   which an admitted createPost writes as INPROGRESS before the use case runs and deletes when the
//   use case refuses the request. That is
//   the documented Idempotency-Key mechanism (docs/api/idempotency.md: it makes a concurrent retry answer
//   409 idempotency_in_progress), it nets out to nothing, and the oracle requires that it does. A
//   request the gate refuses writes not even that (it comes after the admission).
//   A conditional write that DynamoDB would refuse (e.g. deleteWebhookEndpoint's delete guarded by
//   attribute_exists(pk) on an id that does not exist) changes nothing and is allowed; such
//   attempts are tallied in `observations` for the report.
// * The request gate is a meter, not state. functions/shared/http.ts starts the admission as soon
//   as the key is known, before scope, feature and validation, and docs/architecture/plans-and-limits.md
//   says api_requests counts "every authenticated /v1 call that was not refused with 429 -
//   including 4xx answers such as 400 or 403". So an admitted-then-refused 400 counting one
//   api_request is by design, and the gate's UpdateItems (`ORG#<org>`/`USAGE#<YYYY-MM>` with exactly
//   the gate's two expressions) are served apart from the table, fresh per request (fixtures'
//   counters()). The oracle checks the metering instead: none on a 401; otherwise one or two gate
//   writes (the second when the first guessed the key's burst window wrong), api_requests up by one
//   unless a limit was spent, and a spent limit answered 429 unless a 403 scope/feature problem
//   outranks it. A posts_per_month count is NOT a meter of the request: createPost, publishPost and
//   reschedulePost defer their admission until decided and carry it in the gate's write (the gate
//   forms with `, posts_per_month :one`, served with the gate); a count of its own (an admitted
//   request, e.g. createPost with an Idempotency-Key) goes to the table and counts as a state change.
// * Outside the table: any SQS send, S3 write (PutObject, CopyObject, DeleteObject, multipart),
//   KMS Encrypt/GenerateDataKey/ReEncrypt, Step Functions start, SES send or Lambda invoke, and any
//   call out of the process (fetch: a platform's API or OAuth endpoint, e.g. a revocation). Sealing
//   is a side effect: a data key made (GenerateDataKey) for a refused request sealed something that
//   request had no business sealing - a connection session's PKCE verifier or grant, a channel's
//   credentials, an app secret. Opening (Decrypt) is a read.

const aws = {
  ddb: mockClient(DynamoDBDocumentClient),
  dynamo: mockClient(DynamoDBClient),
  s3: mockClient(S3Client),
  sqs: mockClient(SQSClient),
  kms: mockClient(KMSClient),
  sfn: mockClient(SFNClient),
  ses: mockClient(SESv2Client),
  lambda: mockClient(LambdaClient),
};

// ---- the seeded workspace ----------------------------------------------------------------------------

const FREE_ORG_ID = fixedId('org', 3);
/** An organization that has a key item but no org item (deleted since). */
const GHOST_ORG_ID = fixedId('org', 4);
/** A team-plan organization with Dangerous AI operations off. */
const CAUTIOUS_ORG_ID = fixedId('org', 5);
const ALL_SCOPES = [...SCOPES];

export const KEYS = {
  /** Every scope, team plan, Dangerous AI operations on: gets furthest into every operation. */
  full: apiKey({ scopes: ALL_SCOPES, n: 1 }),
  /** No scope (every scope is some operation's now that ai:generate is createGeneration's). */
  noScope: apiKey({ scopes: [], n: 2 }),
  /** Every scope on the free plan (no webhooks feature). */
  free: apiKey({ scopes: ALL_SCOPES, n: 3, orgId: FREE_ORG_ID }),
  revoked: apiKey({ scopes: ALL_SCOPES, n: 4, revoked: true }),
  ghost: apiKey({ scopes: ALL_SCOPES, n: 5, orgId: GHOST_ORG_ID }),
  /** Well-formed, never stored. */
  unknown: apiKey({ scopes: ALL_SCOPES, n: 6 }),
  cautious: apiKey({ scopes: ALL_SCOPES, n: 7, orgId: CAUTIOUS_ORG_ID }),
};

/** Ids of the workspace's own resources (org 1) and of another organization's (org 2). */
export const OWN = {
  post: fixedId('post', 1),
  /** Published to the Bluesky channel: what unpublishPost takes down. */
  publishedPost: fixedId('post', 3),
  /** A Bluesky channel with sealed credentials and no open session: disconnecting it calls no one. */
  channel: fixedId('channel', 1),
  media: fixedId('media', 1),
  webhook: fixedId('webhook', 1),
  /** A LinkedIn session waiting for the person to pick one of two accounts (selecting_account). */
  connection: fixedId('connection', 1),
  /** An unread comment on the Bluesky channel: what replyToInboxItem answers. */
  inbox: fixedId('inbox', 1),
};
export const FOREIGN = {
  post: fixedId('post', 2),
  channel: fixedId('channel', 2),
  media: fixedId('media', 2),
  webhook: fixedId('webhook', 2),
  /** Another organization's session, in selecting_account too (its grant sealed under its own org). */
  connection: fixedId('connection', 2),
  inbox: fixedId('inbox', 2),
};

/** The accounts the own session's grant covers (the callback read them from LinkedIn). */
export const SESSION_ACCOUNTS = [
  {
    id: 'urn:li:person:fuzz1',
    type: 'person',
    handle: 'acme-person',
    name: 'Acme Person',
    avatar_url: null,
    followers: 12,
  },
  {
    id: 'urn:li:organization:fuzz2',
    type: 'organization',
    handle: 'acme',
    name: 'Acme',
    avatar_url: null,
    followers: 340,
  },
] as const;

/**
 * The OAuth callback's baseline: an own LinkedIn session awaiting authorization that this `state`
 * finds (its OAUTHSTATE item), with a redirect_uri. Kept out of OWN: it is no id the id properties
 * mutate, and its session answers the callback (303) without any network (see validRequest).
 */
export const CALLBACK = {
  connection: fixedId('connection', 3),
  state: 'fuzz-oauth-state-Qm9vdHN0cmFwcGVkLXN0YXRl',
  platform: 'linkedin',
} as const;

/**
 * An own LinkedIn channel whose grant disconnecting revokes at LinkedIn: the revocation is a call
 * out, which fails here (no network) and is ignored. Kept out of OWN, like CALLBACK.
 */
export const LINKEDIN_CHANNEL = fixedId('channel', 3);

/** The operator's LinkedIn app (createChannelConnection's OAuth baseline needs one). */
const PLATFORM_APP = {
  platform: 'linkedin',
  client_id: 'fuzz-linkedin-client',
  client_secret: 'fuzz-linkedin-client-secret',
  redirect_uri: 'https://herald.example/oauth/callback/linkedin',
  scopes: null,
  updated_at: CREATED_AT,
} as const;

/** Where the sessions send the person at the end: on an origin ORG_ID allows. */
export const LANDING = 'https://app.example/connected';
const FAR = '2099-01-01T00:00:00.000Z';

const mediaRecord = (id: string, orgId: string) =>
  mediaAsset({ id, org_id: orgId, filename: 'launch.png', expires_at: '2099-01-01T00:00:00.000Z' });

/**
 * An own video whose bytes were uploaded (an MP4 head, answered by HeadObject and GetObject): completing
 * it probes them (ranged GetObject, the download, ffprobe, a poster frame). Kept out of OWN: the
 * completeMediaUpload baseline is the never-uploaded asset (409).
 */
export const UPLOADED_VIDEO = mediaAsset({
  id: fixedId('media', 3),
  org_id: ORG_ID,
  filename: 'launch.mp4',
  kind: 'video',
  content_type: 'video/mp4',
  expires_at: FAR,
});
/** The start of an MP4 (an ftyp box), enough for the sniffer. */
const MP4_HEAD = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(12)]);
/** An S3 body: a stream (downloads) that also answers transformToByteArray (ranged reads). */
const s3Body = (bytes: Uint8Array) =>
  Object.assign(Readable.from([Buffer.from(bytes)]), { transformToByteArray: async () => bytes });

const endpointRecord = (id: string, orgId: string) =>
  webhookEndpoint({
    id,
    org_id: orgId,
    // TEST-NET-1: forbidden by the address policy, so even a delivery could never leave the process.
    url: 'https://192.0.2.10/hooks',
  });

const SEED: Item[] = [
  // Switched to per-organization idempotency records as this world starts: createPost with a key
  // runs its claim of the shared record too (functions/adapters/idempotency.ts).
  { ...keys.idempotencySwitch(), since: Date.now() },
  ...Object.values(KEYS)
    .filter((k) => k !== KEYS.unknown)
    .map(apiKeyItem),
  orgItem(org({ dangerous_ops: true, landing_origins: [new URL(LANDING).origin] })),
  orgItem(org({}, OTHER_ORG_ID)),
  orgItem({ ...org({}, FREE_ORG_ID), plan: 'free' }),
  orgItem(org({ dangerous_ops: false }, CAUTIOUS_ORG_ID)),
  channelItem(channel(1, 'bluesky')),
  channelItem({ ...channel(2, 'x', OTHER_ORG_ID) }),
  channelItem({ ...channel(3, 'linkedin'), account_id: 'urn:li:person:fuzz3' }),
  postItem(post()),
  postItem(
    post({
      id: OWN.publishedPost,
      status: 'published',
      round: 1,
      deliveries: {
        [OWN.channel]: {
          channel_id: OWN.channel,
          stage: 'published',
          external_id: 'at://did:plc:fuzz/app.bsky.feed.post/3k',
          url: null,
          error: null,
          error_category: null,
          attempts: 1,
          updated_at: '2030-01-01T00:00:00.000Z',
          round: 1,
        },
      },
    }),
  ),
  postItem(post({ id: FOREIGN.post, org_id: OTHER_ORG_ID })),
  mediaItem(mediaRecord(OWN.media, ORG_ID)),
  mediaItem(mediaRecord(FOREIGN.media, OTHER_ORG_ID)),
  mediaItem(UPLOADED_VIDEO),
  webhookEndpointItem(endpointRecord(OWN.webhook, ORG_ID)),
  webhookEndpointItem(endpointRecord(FOREIGN.webhook, OTHER_ORG_ID)),
  { ...keys.webhookCount(ORG_ID), endpoints: 1 },
  inboxItemItem(inboxComment({ id: OWN.inbox })),
  inboxItemItem(inboxComment({ id: FOREIGN.inbox, org_id: OTHER_ORG_ID, channel_id: FOREIGN.channel })),
];

const session = (id: string, orgId: string, rest: Partial<ConnectionRecord> = {}): ConnectionRecord => ({
  id,
  org_id: orgId,
  platform: 'linkedin',
  status: 'selecting_account',
  redirect_uri: LANDING,
  authorize_url: null,
  callback_uri: PLATFORM_APP.redirect_uri,
  channel_id: null,
  instance: null,
  accounts: SESSION_ACCOUNTS.map((a) => ({ ...a })),
  error: null,
  expires_at: FAR,
  created_at: CREATED_AT,
  updated_at: CREATED_AT,
  ...rest,
});

/** The grant of a session in selecting_account: LinkedIn tokens per account it covers. */
const grants = (orgId: string): Pending => ({
  grants: Object.fromEntries(
    SESSION_ACCOUNTS.map((a) => [
      a.id,
      { access_token: `fuzz-access-${orgId}`, expires_at: FAR, account_id: a.id },
    ]),
  ),
});

/** What one write of a real adapter would store, captured instead of stored (for the seed). */
async function written(write: () => Promise<unknown>): Promise<Item[]> {
  const items: Item[] = [];
  aws.ddb.on(PutCommand).callsFake((input: PutCommandInput) => {
    items.push(input.Item ?? {});
    return {};
  });
  aws.ddb.on(TransactWriteCommand).callsFake((input: TransactWriteCommandInput) => {
    for (const t of input.TransactItems ?? []) if (t.Put) items.push(t.Put.Item ?? {});
    return {};
  });
  await write();
  return items;
}

/**
 * What the connection operations need, written or sealed by the production adapters themselves (so
 * the seed has exactly their item shapes and seals): the operator's LinkedIn app with its sealed
 * secret, the own and foreign sessions in selecting_account with sealed grants, the callback's
 * session awaiting authorization with its state, the own Bluesky channel's sealed credentials (no
 * Bluesky session is open for them, so disconnecting it revokes nothing over the network) and the
 * LinkedIn channel's sealed tokens (disconnecting it tries LinkedIn's revocation endpoint).
 */
async function connectionSeed(): Promise<Item[]> {
  const own = session(OWN.connection, ORG_ID);
  const foreign = session(FOREIGN.connection, OTHER_ORG_ID);
  const awaiting = session(CALLBACK.connection, ORG_ID, {
    status: 'awaiting_authorization',
    accounts: null,
    authorize_url: `https://www.linkedin.com/oauth/v2/authorization?client_id=${PLATFORM_APP.client_id}`,
  });
  return [
    ...(await written(() => putPlatformApp({ ...PLATFORM_APP }))),
    ...(await written(async () => putConnection(own, await sealPending(own, grants(ORG_ID)), null))),
    ...(await written(async () =>
      putConnection(foreign, await sealPending(foreign, grants(OTHER_ORG_ID)), null),
    )),
    ...(await written(async () =>
      putConnection(awaiting, await sealPending(awaiting, { codeVerifier: null }), CALLBACK.state),
    )),
    {
      ...keys.channelCredentials(ORG_ID, OWN.channel),
      entity: 'channel_credentials',
      sealed: await sealCredentials(ORG_ID, OWN.channel, {
        identifier: 'acme-1.bsky.social',
        app_password: 'fuzz-fuzz-fuzz-fuzz',
        service: 'https://pds.example',
      }),
      version: 1,
    },
    {
      ...keys.channelCredentials(ORG_ID, LINKEDIN_CHANNEL),
      entity: 'channel_credentials',
      sealed: await sealCredentials(ORG_ID, LINKEDIN_CHANNEL, {
        access_token: 'fuzz-linkedin-access',
        refresh_token: 'fuzz-linkedin-refresh',
        expires_at: FAR,
        account_id: 'urn:li:person:fuzz3',
      }),
      version: 1,
    },
  ];
}

// ---- the mocked clients ----------------------------------------------------------------------------

type MeterKind = 'gate';
let meterCalls: Array<{ kind: MeterKind; key: Key }> = [];
let meters = counters();
/** The limits this request's gate writes checked (Infinity when it made none). */
let lastLimits = { burst: Number.POSITIVE_INFINITY, api_requests: Number.POSITIVE_INFINITY };

const GATE_UPDATES = new Set(
  [
    'ADD api_requests :n, #k.n :n',
    'SET #k.t = :t ADD api_requests :n, #k.n :n',
    'SET #k = :fresh ADD api_requests :n',
  ].flatMap((u) => [u, `${u}, posts_per_month :one`]),
);

/** The request gate's own UpdateItems, recognised strictly by key and expression. */
function meterKind(input: UpdateCommandInput): MeterKind | null {
  const pk = String(input.Key?.pk ?? '');
  const sk = String(input.Key?.sk ?? '');
  if (pk.startsWith('ORG#') && sk.startsWith('USAGE#') && GATE_UPDATES.has(input.UpdateExpression ?? ''))
    return 'gate';
  return null;
}

const lowLevel = {
  key: (k: Record<string, unknown> | undefined) => unmarshall((k ?? {}) as never) as Key,
  values: (v: Record<string, unknown> | undefined) => (v ? (unmarshall(v as never) as Item) : undefined),
};

function s3NotFound(): S3ServiceException {
  return new S3ServiceException({
    name: 'NotFound',
    $fault: 'client',
    $metadata: { httpStatusCode: 404 },
    message: 'Not Found',
  });
}

/** What the KMS stand-in's wrapped data keys start with (anything else is no data key of it). */
const DATA_KEY = 'fuzz-data-key:';
const canonical = (context: Record<string, string> | undefined) =>
  JSON.stringify(Object.entries(context ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
const kmsRefusal = (message: string) =>
  Object.assign(new Error(message), { name: 'InvalidCiphertextException' });

function installMocks(): void {
  for (const m of Object.values(aws)) m.reset();

  // Anything not served below is a gap of this world, not of the code: it fails loudly (as a 500
  // whose logged cause, shown in the failure message, names the world).
  aws.ddb.onAnyCommand().rejects(new Error('fuzz world: unmocked DynamoDB document command'));
  const reads = tableReads((k) => table.get(k));
  aws.ddb.on(GetCommand).callsFake(reads.get);
  aws.ddb.on(BatchGetCommand).callsFake(reads.batchGet);
  aws.ddb.on(QueryCommand).callsFake((input: QueryCommandInput) => {
    const items = table.query(input);
    return { Items: items, Count: items.length };
  });
  aws.ddb.on(PutCommand).callsFake((input: PutCommandInput) => {
    table.put({ ...input, Item: input.Item ?? {} });
    return {};
  });
  aws.ddb.on(UpdateCommand).callsFake((input: UpdateCommandInput) => {
    const kind = meterKind(input);
    if (kind) {
      meterCalls.push({ kind, key: input.Key ?? {} });
      const values = input.ExpressionAttributeValues ?? {};
      // The write checks room for its n requests: the limits are room + n.
      const n = Number(values[':n']);
      if (values[':burstRoom'] !== undefined) lastLimits.burst = Number(values[':burstRoom']) + n;
      lastLimits.api_requests = Number(values[':monthRoom']) + n;
      return meters.update(input);
    }
    const after = table.update({ ...input, Key: input.Key ?? {} });
    return input.ReturnValues === 'ALL_NEW' ? { Attributes: after } : {};
  });
  aws.ddb.on(DeleteCommand).callsFake((input: DeleteCommandInput) => {
    // ReturnValues ALL_OLD: the OAuth callback takes its single-use state this way.
    const old = input.ReturnValues === 'ALL_OLD' ? table.get(input.Key ?? {}) : undefined;
    table.delete({ ...input, Key: input.Key ?? {} });
    return old ? { Attributes: old } : {};
  });
  aws.ddb.on(TransactWriteCommand).callsFake((input: TransactWriteCommandInput) => {
    table.transact((input.TransactItems ?? []) as TransactSpec[]);
    return {};
  });
  aws.ddb.on(BatchWriteCommand).callsFake((input: BatchWriteCommandInput) => {
    for (const reqs of Object.values(input.RequestItems ?? {}))
      table.batchWrite(reqs as Parameters<FakeTable['batchWrite']>[0]);
    return { UnprocessedItems: {} };
  });

  // The low-level client: Powertools idempotency (createPost with Idempotency-Key).
  aws.dynamo.onAnyCommand().rejects(new Error('fuzz world: unmocked DynamoDB command'));
  aws.dynamo.on(GetItemCommand).callsFake((input: GetItemCommandInput) => {
    const found = table.get(lowLevel.key(input.Key));
    return found ? { Item: marshall(found, { removeUndefinedValues: true }) } : {};
  });
  aws.dynamo.on(PutItemCommand).callsFake((input: PutItemCommandInput) => {
    table.put({
      Item: unmarshall((input.Item ?? {}) as never) as Item,
      ConditionExpression: input.ConditionExpression,
      ExpressionAttributeNames: input.ExpressionAttributeNames,
      ExpressionAttributeValues: lowLevel.values(input.ExpressionAttributeValues),
    });
    return {};
  });
  aws.dynamo.on(UpdateItemCommand).callsFake((input: UpdateItemCommandInput) => {
    table.update({
      Key: lowLevel.key(input.Key),
      ConditionExpression: input.ConditionExpression,
      ExpressionAttributeNames: input.ExpressionAttributeNames,
      ExpressionAttributeValues: lowLevel.values(input.ExpressionAttributeValues),
    });
    return {};
  });
  aws.dynamo.on(DeleteItemCommand).callsFake((input: DeleteItemCommandInput) => {
    table.delete({
      Key: lowLevel.key(input.Key),
      ConditionExpression: input.ConditionExpression,
      ExpressionAttributeNames: input.ExpressionAttributeNames,
      ExpressionAttributeValues: lowLevel.values(input.ExpressionAttributeValues),
    });
    return {};
  });
  aws.dynamo.on(TransactWriteItemsCommand).rejects(new Error('fuzz world: low-level transactions unused'));
  aws.dynamo.on(BatchWriteItemCommand).rejects(new Error('fuzz world: low-level batch writes unused'));

  // Nothing was ever uploaded; every send-like call succeeds so that, were one made, the oracle sees
  // the side effect itself rather than a crash it caused.
  aws.s3.onAnyCommand().resolves({});
  aws.s3.on(HeadObjectCommand).rejects(s3NotFound());
  aws.s3
    .on(HeadObjectCommand, { Key: UPLOADED_VIDEO.upload_key })
    .resolves({ ContentLength: MP4_HEAD.length, ContentType: UPLOADED_VIDEO.content_type });
  aws.s3
    .on(GetObjectCommand, { Key: UPLOADED_VIDEO.upload_key })
    .callsFake(() => ({ Body: s3Body(MP4_HEAD) }));
  aws.sqs.onAnyCommand().resolves({ Successful: [], Failed: [] });
  aws.kms.onAnyCommand().resolves({});
  // Webhook signing secrets: KMS Encrypt of the secret itself (any ciphertext opens to one secret).
  aws.kms.on(EncryptCommand).resolves({ CiphertextBlob: Buffer.from('fuzz-ciphertext') });
  // Connection secrets (adapters/sealed.ts): a fresh data key per GenerateDataKey, wrapped with its
  // encryption context; Decrypt unwraps it only under the same context, as KMS does.
  aws.kms.on(GenerateDataKeyCommand).callsFake((input: GenerateDataKeyCommandInput) => {
    const key = randomBytes(32);
    const wrapped = `${DATA_KEY}${JSON.stringify({ key: key.toString('base64'), ctx: canonical(input.EncryptionContext) })}`;
    return { KeyId: input.KeyId, Plaintext: new Uint8Array(key), CiphertextBlob: Buffer.from(wrapped) };
  });
  aws.kms.on(DecryptCommand).callsFake((input: DecryptCommandInput) => {
    const blob = Buffer.from(input.CiphertextBlob ?? new Uint8Array()).toString('utf8');
    if (!blob.startsWith(DATA_KEY)) {
      if (input.EncryptionContext?.endpoint_id) return { Plaintext: Buffer.from(`whsec_${'A'.repeat(43)}`) };
      throw kmsRefusal('fuzz world: not a ciphertext of the KMS stand-in');
    }
    const { key, ctx } = JSON.parse(blob.slice(DATA_KEY.length)) as { key: string; ctx: string };
    if (ctx !== canonical(input.EncryptionContext))
      throw kmsRefusal(
        `fuzz world: data key sealed under ${ctx}, opened under ${canonical(input.EncryptionContext)}`,
      );
    return { Plaintext: new Uint8Array(Buffer.from(key, 'base64')) };
  });
  aws.sfn.onAnyCommand().resolves({ executionArn: 'arn:aws:states:us-east-1:000000000000:execution:fuzz' });
  aws.ses.onAnyCommand().resolves({ MessageId: 'fuzz' });
  // The probe function (completeMediaUpload invokes it) runs its real handler here; the MCP
  // server's tool calls answer nothing.
  aws.lambda.onAnyCommand().callsFake(async (input: { FunctionName?: string; Payload?: Uint8Array }) => {
    if (input.FunctionName !== 'probeMedia') return { StatusCode: 200 };
    const { handler } = await import('#handlers/probe-media');
    const payload = JSON.parse(Buffer.from(input.Payload ?? []).toString('utf8')) as unknown;
    const answer = await handler(payload, lambdaContext('probeMedia', 'fuzz-probe'));
    return { StatusCode: 200, Payload: new Uint8Array(Buffer.from(JSON.stringify(answer))) };
  });
}

// Sealing the seed goes through the KMS stand-in; the mocks are installed again once the table
// exists (connectionSeed captured the adapters' writes instead of storing them).
installMocks();
SEED.push(...(await connectionSeed()));
const table = new FakeTable(SEED);
installMocks();

/** Commands that change something outside the table (reads, Decrypt and HeadObject are not). */
const SIDE_EFFECTS: Record<keyof typeof aws, RegExp | null> = {
  ddb: null,
  dynamo: null,
  s3: /^(PutObject|CopyObject|DeleteObjects?|CreateMultipartUpload|UploadPart|UploadPartCopy|CompleteMultipartUpload)Command$/,
  sqs: /./,
  kms: /^(Encrypt|GenerateDataKey\w*|ReEncrypt)Command$/,
  sfn: /./,
  ses: /./,
  lambda: /./,
};

/**
 * No request leaves the process. Platforms' APIs and OAuth endpoints go through the global fetch,
 * which fails here as an unreachable network does (and is recorded: on a refused request, any call
 * out is a side effect, e.g. a revocation). Servers a user names (Mastodon instances, Bluesky PDSs)
 * go through the address-checked client, whose lookups private-dns.ts points at private space.
 */
let network: string[] = [];
vi.stubGlobal('fetch', async (input: string | URL | Request, init?: RequestInit) => {
  const url = input instanceof Request ? input.url : String(input);
  const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
  network.push(`${method} ${url.split('?')[0]}`);
  throw new TypeError('fetch failed', { cause: new Error('fuzz world: no network') });
});

// ---- handlers ---------------------------------------------------------------------------------------

type Handler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;
type Result = APIGatewayProxyStructuredResultV2 & { headers?: Record<string, string> };

const handlers = new Map<string, Handler>();
const ROOT = resolve(import.meta.dirname, '../../..');

/** Imports every operation's real handler module, as the stack deploys them (op.entry). */
export async function loadHandlers(): Promise<void> {
  for (const op of operations) {
    if (handlers.has(op.id)) continue;
    const mod = (await import(resolve(ROOT, op.entry))) as { handler?: Handler };
    if (typeof mod.handler !== 'function') throw new Error(`${op.entry} exports no handler`);
    handlers.set(op.id, mod.handler);
  }
}

// ---- documented responses (the OpenAPI document the API serves) --------------------------------------

interface Documented {
  /** The success statuses (oauthCallback has two: a 303 redirect and a 200 page). */
  success: number[];
  /** Problem codes per status, from the examples of each problem response. */
  problems: Map<number, Set<string>>;
}

type ResponsesDoc = Record<
  string,
  { content?: Record<string, { examples?: Record<string, unknown> } | undefined> } | undefined
>;
const openApi = buildOpenApi({ docsUrl: docsUrl(), version: 'test' }) as {
  paths: Record<string, Record<string, { responses: ResponsesDoc }>>;
};

export const documented = new Map<string, Documented>(
  operations.map((op) => {
    const responses = openApi.paths[op.path]?.[op.method.toLowerCase()]?.responses ?? {};
    const problems = new Map<number, Set<string>>();
    const success: number[] = [];
    for (const [status, r] of Object.entries(responses)) {
      const examples = r?.content?.['application/problem+json']?.examples;
      if (examples) problems.set(Number(status), new Set(Object.keys(examples)));
      else success.push(Number(status));
    }
    return [op.id, { success, problems }];
  }),
);

export const bodyOperations = operations.filter(
  (op) => (contracts[op.id as OperationId] as { body?: unknown }).body !== undefined,
);
export const idOperations = operations.filter((op) => op.path.includes('{id}'));
export const keyedOperations = operations.filter((op) => op.scope !== null);
export const opById = (id: string): Operation => findOperation(id);

// ---- requests ---------------------------------------------------------------------------------------

export interface FuzzRequest {
  op: OperationId;
  /** Header names are lowercased, as API Gateway (payload v2) delivers them. */
  headers?: Record<string, string>;
  query?: Record<string, string>;
  params?: Record<string, string>;
  body?: string;
  base64?: boolean;
}

export const auth = (k = KEYS.full) => bearer(k);
export const jsonAuth = (k = KEYS.full) => jsonHeaders(k);

let sequence = 0;

function eventOf(req: FuzzRequest): APIGatewayProxyEventV2 {
  const headers = Object.fromEntries(
    Object.entries(req.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v] as const),
  );
  // API Gateway always passes the Host the request came in on (the Mastodon callback URL falls back
  // to it when HERALD_PUBLIC_URL is unset, as in this world); a request may still send its own.
  const event = apiEvent(req.op, {
    headers: { host: 'api.unit', ...headers },
    requestId: `fuzz-${++sequence}`,
    ...(req.params ? { pathParameters: req.params } : {}),
    ...(req.query ? { query: req.query } : {}),
    ...(req.body !== undefined ? { body: req.body } : {}),
  });
  return req.base64 ? { ...event, isBase64Encoded: true } : event;
}

export interface Outcome {
  req: FuzzRequest;
  event: APIGatewayProxyEventV2;
  res: Result | undefined;
  /** The handler rejected instead of answering (middy's problem+json should make this impossible). */
  crash: unknown;
  tableChanged: boolean;
  attempts: WriteAttempt[];
  sideEffects: string[];
  /** Every AWS call made, as `client:Command`; the request gate's own UpdateItems end in ` (gate)`. */
  calls: string[];
  meters: Array<{ kind: MeterKind; key: Key }>;
  /** The meters before and after, and the limits the limiter checked them against. */
  limits: {
    burstBefore: number;
    burst: number;
    apiRequestsBefore: number;
    apiRequestsAfter: number;
    apiRequests: number;
  };
  /** DynamoDB reads other than the API key and its organization. */
  businessReads: string[];
  /** Calls out of the process the code attempted (all refused; also in sideEffects). */
  network: string[];
  /** What the handler logged as the cause of a 5xx (problem+json hides it from the client). */
  logged: string | undefined;
}

/** Tallies of allowed-but-notable behaviour, for the report (printed with HERALD_FUZZ_REPORT=1). */
const observations = new Map<string, number>();
const observe = (what: string) => observations.set(what, (observations.get(what) ?? 0) + 1);

function commandName(call: { args: unknown[] }): string {
  return (call.args[0] as { constructor: { name: string } }).constructor.name;
}

/** The org's api_requests after the request: the counter item, or where it started if untouched. */
function apiRequestsOf(start: CounterStart): number {
  for (const [id, item] of meters.items) if (id.includes(' USAGE#')) return Number(item.api_requests ?? 0);
  return start.api_requests ?? 0;
}

// problemJson() logs the cause of every 5xx; keep it for the failure message (the log level is SILENT).
let loggedError: unknown;
vi.spyOn(logger, 'error').mockImplementation((...args: unknown[]) => {
  loggedError = (args[1] as { error?: unknown } | undefined)?.error ?? args[0];
});

function describeError(err: unknown): string | undefined {
  if (err === undefined) return undefined;
  if (!(err instanceof Error)) return String(err);
  const frames = (err.stack ?? '')
    .split('\n')
    .filter((l) => l.trim().startsWith('at '))
    .slice(0, 3);
  return `${err.name}: ${err.message} ${frames.map((f) => f.trim()).join(' ← ')}`;
}

/**
 * The burst limit of the key a request presents, from the seeded organization's plan: the gate
 * sends it only with its "same window" write, and refuses a spent window from the item it reads.
 */
function burstLimitOf(req: FuzzRequest): number {
  const presented = JSON.stringify(req.headers ?? {});
  const key = Object.values(KEYS).find((k) => presented.includes(k.key));
  const orgItem = SEED.find((i) => i.entity === 'org' && i.id === key?.record.org_id);
  return orgItem ? PLANS[orgItem.plan as PlanName].limits.burst : Number.POSITIVE_INFINITY;
}

/** Sends one request through the operation's real handler, from a fresh copy of the workspace. */
export async function send(req: FuzzRequest, start: CounterStart = {}): Promise<Outcome> {
  const handler = handlers.get(req.op);
  if (!handler) throw new Error(`no handler loaded for ${req.op}; call loadHandlers() in beforeAll`);
  for (const m of Object.values(aws)) m.resetHistory();
  table.reset();
  meterCalls = [];
  meters = counters(start);
  clearGateGuesses();
  lastLimits = { burst: Number.POSITIVE_INFINITY, api_requests: Number.POSITIVE_INFINITY };
  loggedError = undefined;
  network = [];
  const before = table.snapshot();
  const event = eventOf(req);
  let res: Result | undefined;
  let crash: unknown;
  try {
    res = (await handler(event, lambdaContext(req.op, event.requestContext.requestId))) as Result;
  } catch (err) {
    crash = err ?? new Error('rejected with nothing');
  }
  const sideEffects: string[] = [];
  for (const [name, m] of Object.entries(aws) as Array<[keyof typeof aws, (typeof aws)[keyof typeof aws]]>) {
    const pattern = SIDE_EFFECTS[name];
    if (!pattern) continue;
    for (const call of m.calls()) {
      const cmd = commandName(call);
      if (pattern.test(cmd)) sideEffects.push(`${name}:${cmd}`);
    }
  }
  sideEffects.push(...network.map((call) => `network:${call}`));
  const calls = (Object.entries(aws) as Array<[string, (typeof aws)[keyof typeof aws]]>).flatMap(
    ([name, m]) =>
      m.calls().map((call) => {
        const cmd = commandName(call);
        const input = (call.args[0] as { input: UpdateCommandInput }).input;
        return name === 'ddb' && cmd === 'UpdateCommand' && meterKind(input)
          ? `${name}:${cmd} (gate)`
          : `${name}:${cmd}`;
      }),
  );
  const businessReads = aws.ddb.calls().flatMap((call) => {
    const cmd = commandName(call);
    if (cmd === 'GetCommand') {
      const key = (call.args[0] as { input: GetCommandInput }).input.Key ?? {};
      const pk = String(key.pk);
      if (pk.startsWith('APIKEY#') || key.sk === 'ORG') return [];
      return [`GetItem ${pk} ${String(key.sk)}`];
    }
    return cmd === 'BatchGetCommand' || cmd === 'QueryCommand' ? [cmd.replace(/Command$/, '')] : [];
  });
  return {
    req,
    event,
    res,
    crash,
    tableChanged: table.snapshot() !== before,
    attempts: [...table.attempts],
    sideEffects,
    calls,
    meters: [...meterCalls],
    limits: {
      burstBefore: start.burst ?? 0,
      burst: Number.isFinite(lastLimits.burst) ? lastLimits.burst : burstLimitOf(req),
      apiRequestsBefore: start.api_requests ?? 0,
      apiRequestsAfter: apiRequestsOf(start),
      apiRequests: lastLimits.api_requests,
    },
    businessReads,
    network: [...network],
    logged: describeError(loggedError),
  };
}

// ---- the oracle ---------------------------------------------------------------------------------------

const clip = (s: string, n = 160) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);

/** A short description of the request for failure messages (fast-check also prints the seed). */
function describeRequest(o: Outcome): string {
  const { req } = o;
  const parts = [`${req.op}`];
  if (req.params) parts.push(`params=${clip(JSON.stringify(req.params))}`);
  if (req.query) parts.push(`query=${clip(JSON.stringify(req.query))}`);
  if (req.headers) parts.push(`headers=${clip(JSON.stringify(req.headers), 400)}`);
  if (req.body !== undefined) parts.push(`body=${clip(JSON.stringify(req.body))}`);
  if (req.base64) parts.push('base64');
  parts.push(`→ ${o.res?.statusCode ?? 'crash'} ${clip(o.res?.body ?? String(o.crash), 400)}`);
  if (o.logged) parts.push(`(logged: ${clip(o.logged, 600)})`);
  return parts.join(' ');
}

export interface Expectation {
  status?: number | readonly number[];
  code?: ProblemCode | readonly ProblemCode[];
}

const asList = <T>(v: T | readonly T[] | undefined): readonly T[] | undefined =>
  v === undefined ? undefined : Array.isArray(v) ? (v as readonly T[]) : [v as T];

function expectCleanHeaders(o: Outcome, why: string): void {
  for (const [name, value] of Object.entries(o.res?.headers ?? {})) {
    expect(
      /[\r\n\0]/.test(name) || /[\r\n\0]/.test(String(value)),
      `${why}: response header ${name} carries CR/LF/NUL`,
    ).toBe(false);
  }
}

function expectMetering(o: Outcome, status: number, why: string): void {
  const op = opById(o.req.op);
  const headers = o.res?.headers ?? {};
  if (op.scope === null || status === 401) {
    expect(o.meters, `${why}: an unauthenticated request must not be metered`).toEqual([]);
    expect(headers['x-ratelimit-limit'], `${why}: no rate-limit headers without a key`).toBeUndefined();
    return;
  }
  // The gate's rules (functions/adapters/usage.ts, docs/architecture/plans-and-limits.md): over the burst or the month, nothing
  // is counted and the request is refused with 429 unless a 401/403 scope or feature problem
  // outranks it; otherwise api_requests counts it, 4xx answers included.
  expect(o.meters.length, `${why}: one gate write, or two when the window guess was wrong`).toBeGreaterThan(
    0,
  );
  expect(
    o.meters.length,
    `${why}: one gate write, or two when the window guess was wrong`,
  ).toBeLessThanOrEqual(2);
  const burstRefused = o.limits.burstBefore >= o.limits.burst;
  const quotaRefused = o.limits.apiRequestsBefore >= o.limits.apiRequests;
  expect(o.limits.apiRequestsAfter - o.limits.apiRequestsBefore, `${why}: api_requests delta`).toBe(
    burstRefused || quotaRefused ? 0 : 1,
  );
  if (burstRefused || quotaRefused) {
    const code = /"code":"(\w+)"/.exec(o.res?.body ?? '')?.[1] ?? '';
    expect(
      status === 429 || ['insufficient_scope', 'feature_not_enabled'].includes(code),
      `${why}: a limiter refusal is answered 429 unless a 403 outranks it`,
    ).toBe(true);
    if (status === 429)
      expect(code, `${why}: which limit`).toBe(burstRefused ? 'rate_limited' : 'quota_exhausted');
  } else {
    expect(status, `${why}: 429 without a spent limit`).not.toBe(429);
  }
  expect(headers['ratelimit-policy'], `${why}: rate-limit headers on every API-key answer`).toMatch(
    /^"per-key-minute";q=\d+;w=60$/,
  );
  expect(headers['x-ratelimit-limit'], `${why}: X-RateLimit-Limit`).toMatch(/^\d+$/);
}

function expectNoStateChange(o: Outcome, why: string): void {
  expect(o.sideEffects, `${why}: side effects outside the table`).toEqual([]);
  expect(o.tableChanged, `${why}: the table changed`).toBe(false);
  const applied = o.attempts.filter((a) => a.applied);
  const transient = applied.filter(
    (a) => String(a.key.pk).endsWith('#IDEMPOTENCY') || String(a.key.pk) === 'IDEMPOTENCY#createPost',
  );
  expect(
    applied
      .filter((a) => !transient.includes(a))
      .map((a) => `${a.kind} ${String(a.key.pk)} ${String(a.key.sk)}`),
    `${why}: writes applied for a refused request`,
  ).toEqual([]);
  const gateRefused =
    o.limits.burstBefore >= o.limits.burst || o.limits.apiRequestsBefore >= o.limits.apiRequests;
  if (gateRefused)
    expect(transient, `${why}: an idempotency record for a request the gate refused`).toEqual([]);
  if (transient.length) observe(`${o.req.op}: idempotency record written and removed on a refusal`);
  for (const a of o.attempts.filter((x) => !x.applied))
    observe(
      `${o.req.op}: conditional ${a.kind} refused by its condition (${a.condition ?? ''}) on a refusal`,
    );
}

/**
 * Asserts the answer is a clean refusal: a documented 4xx for this operation, an RFC 9457 body
 * whose fields agree with the status and the request, no 5xx, metered as designed, and nothing
 * changed. Returns the problem for further checks.
 */
export function expectRefused(o: Outcome, expected: Expectation = {}): Problem {
  const why = describeRequest(o);
  expect(o.crash, `${why}: the handler rejected`).toBeUndefined();
  const res = o.res!;
  const status = res.statusCode ?? 0;
  const doc = documented.get(o.req.op)!;
  expect(status, `${why}: never a 5xx`).toBeLessThan(500);
  expect(status, `${why}: a refusal is a 4xx`).toBeGreaterThanOrEqual(400);
  expect([...doc.problems.keys()], `${why}: status ${status} is not documented for ${o.req.op}`).toContain(
    status,
  );
  const statuses = asList(expected.status);
  if (statuses) expect(statuses, `${why}: expected status ${statuses.join('/')}`).toContain(status);

  expect(res.headers?.['content-type'], `${why}: content-type`).toBe('application/problem+json');
  expect(res.headers?.['cache-control'], `${why}: cache-control`).toBe('no-store');
  let problem: Problem;
  try {
    problem = JSON.parse(res.body ?? '') as Problem;
  } catch {
    throw new Error(`${why}: the body is not JSON`);
  }
  expect(Object.keys(problem).sort(), `${why}: problem members`).toEqual(
    ['code', 'detail', 'request_id', 'status', 'title', 'type', ...(problem.errors ? ['errors'] : [])].sort(),
  );
  expect(problem.status, `${why}: problem.status = HTTP status`).toBe(status);
  expect(Object.keys(PROBLEMS), `${why}: unknown code ${problem.code}`).toContain(problem.code);
  expect(PROBLEMS[problem.code].status, `${why}: code ${problem.code} has another status`).toBe(status);
  expect([...(doc.problems.get(status) ?? [])], `${why}: code ${problem.code} is not documented`).toContain(
    problem.code,
  );
  const codes = asList(expected.code);
  if (codes) expect(codes, `${why}: expected code ${codes.join('/')}`).toContain(problem.code);
  expect(problem.title, `${why}: title`).toBe(PROBLEMS[problem.code].title);
  expect(problem.type, `${why}: type`).toBe(
    problemType(docsUrl(o.event.requestContext.domainName), problem.code),
  );
  expect(typeof problem.detail === 'string' && problem.detail.length > 0, `${why}: detail`).toBe(true);
  expect(problem.request_id, `${why}: request_id`).toBe(o.event.requestContext.requestId);
  expect(res.headers?.['x-request-id'], `${why}: x-request-id`).toBe(problem.request_id);
  if (problem.errors !== undefined) {
    expect(problem.code, `${why}: field errors only on validation_failed`).toBe('validation_failed');
    for (const e of problem.errors) {
      expect(Object.keys(e).sort(), `${why}: field error members`).toEqual(['code', 'message', 'pointer']);
      expect(e.pointer === '' || e.pointer.startsWith('/'), `${why}: pointer ${e.pointer}`).toBe(true);
      expect(typeof e.code === 'string' && typeof e.message === 'string', `${why}: field error`).toBe(true);
    }
  }
  if (status === 429) expect(res.headers?.['retry-after'], `${why}: Retry-After`).toMatch(/^\d+$/);
  expectCleanHeaders(o, why);
  expectMetering(o, status, why);
  expectNoStateChange(o, why);
  return problem;
}

/**
 * For requests that may or may not be valid: either the documented success status, or a clean
 * refusal as in expectRefused. Never a 5xx. Returns the status.
 */
export function expectDocumented(o: Outcome): number {
  const why = describeRequest(o);
  expect(o.crash, `${why}: the handler rejected`).toBeUndefined();
  const status = o.res?.statusCode ?? 0;
  if (status < 400) {
    expect(documented.get(o.req.op)?.success, `${why}: success status`).toContain(status);
    expectCleanHeaders(o, why);
    expectMetering(o, status, why);
    return status;
  }
  expectRefused(o);
  return status;
}

/** Prints the observations when HERALD_FUZZ_REPORT is set (for the report, not the assertions). */
export function printObservations(file: string): void {
  if (!process.env.HERALD_FUZZ_REPORT || observations.size === 0) return;
  console.info(
    `[fuzz ${file}] observations:\n${[...observations].map(([k, n]) => `  ${n} × ${k}`).join('\n')}`,
  );
}
