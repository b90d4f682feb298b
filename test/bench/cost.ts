import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { RoundTripRow } from './round-trips.ts';
import { countConsumedCapacity, itemSize, machine, ROOT, table, today } from './support.ts';

export { itemSize };

// Cost model (issue 8): dollars per million requests of each API operation in AWS. DynamoDB read
// and write units are measured, not estimated: the operations' real handlers run in-process
// against DynamoDB Local with ReturnConsumedCapacity=TOTAL added to every call. Lambda duration is
// modelled from the operation's sequential round trips (measured by round-trips.ts) at a typical
// in-region latency.

/** us-east-1 list prices (2026): Lambda arm64, DynamoDB on-demand, HTTP API. */
export const PRICES = {
  lambdaPerMillionRequests: 0.2,
  lambdaPerGbSecondArm: 0.0000133334,
  dynamoPerMillionWrite: 0.625,
  dynamoPerMillionRead: 0.125,
  httpApiPerMillion: 1.0,
};
/** A DynamoDB call in-region (SDK included), and the handler's own CPU, for the duration model. */
export const MODEL = { msPerRoundTrip: 6, handlerMs: 2 };

/** What the cost workspace holds besides the measured calls' own items: the API benches' page sizes. */
export const SEED = { posts: 25, media: 26, webhookEndpoints: 3 };

/** The DynamoDB units of one warm call of an operation. */
export interface CostMeasurement {
  /** Operation id (lib/operations.ts). */
  op: string;
  /** What is exercised (e.g. `draft` for createPost); empty for the operation's main path. */
  variant: string;
  memoryMb: number;
  readUnits: number;
  writeUnits: number;
}

/** Write units of one admitted request (getPost: the gate is its only write) by active keys. */
export interface GateSize {
  /** API keys that made a request this month (each has a window on the gate item). */
  activeKeys: number;
  /** The gate item's size, bytes (DynamoDB's rules: attribute names + values). */
  itemBytes: number;
  writeUnits: number;
}

/** createPost with an Idempotency-Key in each window after the switch to per-organization records. */
export interface IdempotencyWindow {
  /** `claim` (first 15 min), `read` (until 24 h 15 min), `after`. */
  window: string;
  first: { readUnits: number; writeUnits: number };
  replay: { readUnits: number; writeUnits: number };
}

export interface CostResult {
  measured: CostMeasurement[];
  gate: GateSize[];
  idempotency?: IdempotencyWindow[];
}

export interface OperationCost extends CostMeasurement {
  sequentialRoundTrips: number;
  billedMs: number;
  dollarsPerMillion: { lambda: number; dynamodb: number; apiGateway: number; total: number };
}

type Handler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

/**
 * Sequential round trips of each measured path on the warm path, when round-trips.ts did not run
 * in the same `npm run bench`: the depths it measures (BENCHMARKS.md "AWS round trips per
 * request"), asserted for most of these operations in test/unit/usecases/round-trips.test.ts.
 * Keyed by operation id: createPost's draft path is as deep as its main path.
 */
const DEPTH: Record<string, number> = {
  getPost: 1,
  listPosts: 1,
  listChannels: 1,
  listMedia: 1,
  getUsage: 1,
  getAnalytics: 1,
  createPost: 2,
  // Admitted once it has read and decided (its gate write counts the post only when it counts).
  reschedulePost: 3,
  publishPost: 2,
  deletePost: 2,
  listWebhookEndpoints: 1,
};
/** Paths round-trips.ts does not run, by `op (variant)`: test/unit/usecases/round-trips.test.ts asserts them. */
const VARIANT_DEPTH: Record<string, number> = {
  'createPost (Idempotency-Key)': 4,
  // The record's lookup, then the post count its gate write took given back.
  'createPost (Idempotency-Key, replay)': 3,
  // Decided after the read, as its main path (test/unit/usecases/round-trips.test.ts).
  'reschedulePost (scheduled)': 3,
  // The count its gate write took is given back beside the post's write.
  'publishPost (scheduled)': 2,
};

export async function benchCost(): Promise<CostResult> {
  const { startDynamo, ensureTable, dynamoCredentials, LOCAL_REGION } = await import(
    '../../bin/local/services.ts'
  );
  const dir = mkdtempSync(join(tmpdir(), 'herald-cost-'));
  const credentials = dynamoCredentials(dir);
  const dynamo = await startDynamo(dir, credentials);
  try {
    await ensureTable(dynamo.endpoint, 'herald-cost', credentials);
    Object.assign(process.env, {
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      TABLE_NAME: 'herald-cost',
      HERALD_CURSOR_SECRET: 'cost-bench',
      CONNECTION_SECRETS_KEY_ID: 'alias/herald-cost',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    });
    const { dynamo: client } = await import('#shared/clients');
    const consumed = countConsumedCapacity(client, { failedConditionalWrites: true });
    const admin = await import('#usecases/cli/admin');
    const { operations } = await import('#lib/operations');
    const { apiEvent, lambdaContext } = await import('../unit/support/fixtures.ts');
    const created = await admin.createOrg({
      name: 'Cost',
      plan: 'agency',
      ownerEmail: 'cost@example.com',
      consoleUrl: 'http://localhost',
    });
    const orgId = created.org.id;
    const key = (
      await admin.mintKey({
        orgId,
        by: created.owner.id,
        scopes: [
          'posts:read',
          'posts:write',
          'channels:read',
          'analytics:read',
          'webhooks:read',
          'webhooks:write',
        ],
      })
    ).key;
    await admin.setSettings({ orgId, by: created.owner.id, patch: { dangerous_ops: true } });
    // The channel as a completed connection leaves it (no platform here to verify it with; KMS only
    // seals its tokens, off the measured paths).
    const { KMSClient } = await import('@aws-sdk/client-kms');
    const { mockClient } = await import('aws-sdk-client-mock');
    const { serveDataKeys } = await import('../unit/support/kms.ts');
    const { connectAccount } = await import('#usecases/support/channel-connect');
    const kms = mockClient(KMSClient);
    serveDataKeys(kms);
    const channel = await connectAccount({
      orgId,
      platform: 'mastodon',
      account: {
        id: '109',
        type: 'user',
        handle: 'cost@mastodon.example',
        name: 'Cost',
        avatar_url: null,
        followers: 0,
        credentials: { instance: 'https://mastodon.example', access_token: 'token' },
      },
      connectionId: 'conn_cost',
      reconnect: null,
      now: new Date(),
    });
    kms.restore();

    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const call = async (
      id: string,
      pathParameters?: Record<string, string>,
      body?: unknown,
      extraHeaders: Record<string, string> = {},
    ) => {
      const op = operations.find((o) => o.id === id);
      if (!op) throw new Error(`no operation ${id}`);
      const mod = (await import(join(ROOT, op.entry))) as { handler: Handler };
      const event = apiEvent(id, {
        headers: { ...headers, ...extraHeaders },
        ...(pathParameters ? { pathParameters } : {}),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        requestId: randomUUID(),
      });
      const res = await mod.handler(event, lambdaContext(id, randomUUID()));
      if ((res.statusCode ?? 500) >= 300) throw new Error(`${id}: ${res.statusCode} ${res.body}`);
      return JSON.parse(res.body ?? '{}') as { id: string };
    };
    /** Units of one warm call (the auth cache is warm after the first call of the run). */
    const measure = async (fn: () => Promise<unknown>) => {
      consumed.read = 0;
      consumed.write = 0;
      await fn();
      return { ...consumed };
    };

    const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
    const variants = [{ channel_id: channel.id, body: 'Cost model post' }];
    const scheduled = () => call('createPost', undefined, { variants, scheduled_at: future(1) });
    const draft = () => call('createPost', undefined, { variants, draft: true });

    // The workspace the list operations read: as many posts, media assets and webhook endpoints
    // as the API benches' table (support.ts apiWorld), written through the service's own code.
    await seed(orgId, scheduled);

    const results: CostMeasurement[] = [];
    const add = async (op: string, fn: () => Promise<unknown>, variant = '') => {
      const units = await measure(fn);
      const memoryMb = operations.find((o) => o.id === op)?.memoryMb ?? 1024;
      results.push({ op, variant, memoryMb, readUnits: units.read, writeUnits: units.write });
    };
    const warm = await draft();
    await add('createPost', scheduled);
    await add('createPost', draft, 'draft');
    await add('getPost', () => call('getPost', { id: warm.id }));
    await add('listPosts', () => call('listPosts'));
    await add('listChannels', () => call('listChannels'));
    await add('listMedia', () => call('listMedia'));
    await add('getUsage', () => call('getUsage'));
    await add('getAnalytics', () => call('getAnalytics'));
    await add('reschedulePost', () => call('reschedulePost', { id: warm.id }, { scheduled_at: future(2) }));
    await add(
      'updatePost',
      () =>
        call(
          'updatePost',
          { id: warm.id },
          { variants: [{ ...variants[0], body: 'Cost model post, edited' }] },
        ),
      'scheduled: new text',
    );
    await add('validatePost', () => call('validatePost', undefined, { variants, scheduled_at: future(1) }));
    const toPublish = await draft();
    await add('publishPost', () => call('publishPost', { id: toPublish.id }));
    const toDelete = await draft();
    await add('deletePost', () => call('deletePost', { id: toDelete.id }));
    await add('listWebhookEndpoints', () => call('listWebhookEndpoints'));
    // Posts that counted already (listed after their operation's main path): reschedulePost moves
    // the scheduled post again; publishPost starts a scheduled post.
    const counted: CostMeasurement[] = [];
    const addCounted = async (op: string, fn: () => Promise<unknown>) => {
      await add(op, fn, 'scheduled');
      counted.push(results.pop() as CostMeasurement);
    };
    await addCounted('reschedulePost', () =>
      call('reschedulePost', { id: warm.id }, { scheduled_at: future(3) }),
    );
    const toStart = await scheduled();
    await addCounted('publishPost', () => call('publishPost', { id: toStart.id }));
    for (const m of counted) results.splice(results.findIndex((r) => r.op === m.op) + 1, 0, m);
    // Last: the posts these calls create must not change what the list operations above read.
    const keyedAt = future(1); // one body per key: a replay sends the same request
    const idempotency = await measureIdempotency(measure, (key) =>
      call('createPost', undefined, { variants, scheduled_at: keyedAt }, { 'idempotency-key': key }),
    );
    for (const w of idempotency.filter((x) => x.window === 'after')) {
      // Listed with createPost's other paths.
      results.splice(
        2,
        0,
        { op: 'createPost', variant: 'Idempotency-Key', memoryMb: 1024, ...w.first },
        { op: 'createPost', variant: 'Idempotency-Key, replay', memoryMb: 1024, ...w.replay },
      );
    }

    // The gate item grows by one key window per API key active in the month; DynamoDB bills a
    // write by the item's size in whole KB. Measured: one more key at a time, then getPost.
    const gate: GateSize[] = [];
    const { GetCommand } = await import('@aws-sdk/lib-dynamodb');
    const { ddb } = await import('#shared/clients');
    const { keys } = await import('#adapters/keys');
    const period = new Date().toISOString().slice(0, 7);
    const gateBytes = async () => {
      const res = await ddb.send(
        new GetCommand({ TableName: 'herald-cost', Key: keys.usage(orgId, period) }),
      );
      return itemSize(res.Item ?? {});
    };
    let active = 1;
    for (const target of [1, 10, 20, 21, 22, 30, 45, 50]) {
      while (active < target) {
        const extra = await admin.mintKey({ orgId, by: created.owner.id, scopes: ['posts:read'] });
        const event = apiEvent('getPost', {
          headers: { authorization: `Bearer ${extra.key}` },
          pathParameters: { id: warm.id },
          requestId: randomUUID(),
        });
        const mod = (await import(join(ROOT, 'functions/handlers/get-post.ts'))) as { handler: Handler };
        await mod.handler(event, lambdaContext('getPost', randomUUID()));
        active++;
      }
      const units = await measure(() => call('getPost', { id: warm.id }));
      gate.push({ activeKeys: active, itemBytes: await gateBytes(), writeUnits: units.write });
    }
    return { measured: results, gate, idempotency };
  } finally {
    await dynamo.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * createPost with an Idempotency-Key (a scheduled post, then its replay) in each window after the
 * switch to per-organization records (functions/adapters/idempotency.ts): the switch item set that
 * long ago, on a container that has learnt it (one keyed call first).
 */
async function measureIdempotency(
  measure: (fn: () => Promise<unknown>) => Promise<{ read: number; write: number }>,
  keyed: (key: string) => Promise<unknown>,
): Promise<IdempotencyWindow[]> {
  const { PutCommand } = await import('@aws-sdk/lib-dynamodb');
  const { ddb } = await import('#shared/clients');
  const { keys } = await import('#adapters/keys');
  const { CLAIM_MS, LEGACY_MS, clearIdempotencySwitch } = await import('#adapters/idempotency');
  const windows: Array<[string, number]> = [
    ['claim', 60_000],
    ['read', CLAIM_MS + 60_000],
    ['after', LEGACY_MS + 60_000],
  ];
  const out: IdempotencyWindow[] = [];
  for (const [window, ago] of windows) {
    await ddb.send(
      new PutCommand({
        TableName: process.env.TABLE_NAME,
        Item: { ...keys.idempotencySwitch(), since: Date.now() - ago },
      }),
    );
    clearIdempotencySwitch();
    await keyed(`cost-${window}-warm`);
    const units = (u: { read: number; write: number }) => ({ readUnits: u.read, writeUnits: u.write });
    const first = units(await measure(() => keyed(`cost-${window}`)));
    const replay = units(await measure(() => keyed(`cost-${window}`)));
    out.push({ window, first, replay });
  }
  return out;
}

/**
 * SEED's items in the cost workspace: scheduled posts through createPost, media assets (all but
 * one ready) and webhook endpoints through their adapters. An endpoint's secret is a placeholder
 * ciphertext: listing endpoints never decrypts it.
 */
async function seed(orgId: string, createScheduled: () => Promise<unknown>): Promise<void> {
  const { insertAsset } = await import('#adapters/media');
  const { createEndpoint } = await import('#adapters/webhook-endpoints');
  const { newId } = await import('#core/ids');
  for (let i = 0; i < SEED.posts; i++) await createScheduled();
  const now = new Date().toISOString();
  for (let i = 0; i < SEED.media; i++) {
    const id = newId('media');
    const ready = i < SEED.media - 1;
    await insertAsset({
      id,
      org_id: orgId,
      status: ready ? 'ready' : 'pending',
      kind: 'image',
      url: `https://media.example/orgs/${orgId}/media/${id}/photo.png`,
      filename: 'photo.png',
      content_type: 'image/png',
      size_bytes: 48_213,
      width: ready ? 1280 : null,
      height: ready ? 720 : null,
      duration_sec: null,
      poster_url: null,
      upload_key: `uploads/${orgId}/${id}/photo.png`,
      object_key: `orgs/${orgId}/media/${id}/photo.png`,
      poster_key: null,
      expires_at: new Date(Date.now() + 900_000).toISOString(),
      created_at: now,
      updated_at: now,
    });
  }
  for (let i = 1; i <= SEED.webhookEndpoints; i++) {
    await createEndpoint({
      entity: 'webhook_endpoint',
      id: newId('webhook'),
      org_id: orgId,
      url: `https://hooks.example/${i}`,
      description: `Endpoint ${i}`,
      event_types: ['post.published', 'post.failed'],
      enabled: true,
      state: 'active',
      failure: { consecutive_failures: 0 },
      secret: { current: Buffer.from(`sealed-${i}`).toString('base64') },
      created_at: now,
      updated_at: now,
      version: 1,
    });
  }
}

const labelOf = (m: CostMeasurement) => (m.variant ? `${m.op} (${m.variant})` : m.op);

/**
 * The measured units priced. Sequential round trips: those round-trips.ts measured for the same
 * path in this run when given (`roundTrips`), else DEPTH.
 */
export function priceCosts(measured: CostMeasurement[], roundTrips?: RoundTripRow[]): OperationCost[] {
  const depthOf = (m: CostMeasurement): number => {
    const depth =
      VARIANT_DEPTH[labelOf(m)] ??
      (roundTrips
        ? roundTrips.find((r) => r.op === m.op && (m.variant ? r.variant === m.variant : r.primary))?.depth
        : DEPTH[m.op]);
    if (depth === undefined) throw new Error(`cost: no sequential round trips for ${labelOf(m)}`);
    return depth;
  };
  const round = (n: number) => Number(n.toFixed(3));
  return measured.map((m) => {
    const depth = depthOf(m);
    const billedMs = Math.ceil(MODEL.handlerMs + depth * MODEL.msPerRoundTrip);
    const lambda =
      PRICES.lambdaPerMillionRequests +
      (m.memoryMb / 1024) * (billedMs / 1000) * PRICES.lambdaPerGbSecondArm * 1e6;
    const dynamodb = m.writeUnits * PRICES.dynamoPerMillionWrite + m.readUnits * PRICES.dynamoPerMillionRead;
    return {
      ...m,
      sequentialRoundTrips: depth,
      billedMs,
      dollarsPerMillion: {
        lambda: round(lambda),
        dynamodb: round(dynamodb),
        apiGateway: PRICES.httpApiPerMillion,
        total: round(lambda + dynamodb + PRICES.httpApiPerMillion),
      },
    };
  });
}

/** The section; `roundTrips`: round-trips.ts's rows of the same run, if it ran. */
export function costSection(
  { measured, gate, idempotency }: CostResult,
  roundTrips?: RoundTripRow[],
): string {
  const rows = priceCosts(measured, roundTrips);
  const usd = (n: number) => n.toFixed(2);
  const depths = roundTrips
    ? 'as round-trips.ts measured them in the same run ("AWS round trips per request")'
    : 'as last measured by round-trips.ts ("AWS round trips per request"; not run with this section)';
  return `Measured ${today()} on ${machine()} by \`npm run bench\` (test/bench/cost.ts).
Read/write units: the operations' handlers in-process against DynamoDB Local with
\`ReturnConsumedCapacity: TOTAL\` on every call (a warm call: API key cached; the request gate's one
conditional write included), in an agency-plan workspace seeded first (seeding not counted) with one
Mastodon channel, ${SEED.posts} scheduled posts of one variant each (plus those the measured calls create),
${SEED.media} media assets (${SEED.media - 1} ready, one pending) and ${SEED.webhookEndpoints} webhook endpoints (the sizes of the overhead and round-trips benches' table),
so the list operations read full pages. createPost: a scheduled post (its main path); createPost
(draft): a draft; createPost (Idempotency-Key): a scheduled post with a new key, then (replay) the
same request again; reschedulePost, publishPost and deletePost act on a draft each, and
reschedulePost (scheduled) and publishPost (scheduled) on a scheduled post (counted already). A conditional
write that fails (the replay's) is counted as DynamoDB bills it: the existing item's size in whole
KB, at least 1. Lambda: arm64, the
configured memory, billed duration modelled as ${MODEL.handlerMs} ms + ${MODEL.msPerRoundTrip} ms per sequential DynamoDB
round trip on the warm path, ${depths}. Prices: Lambda $${PRICES.lambdaPerMillionRequests}/M requests +
$${PRICES.lambdaPerGbSecondArm}/GB-s, DynamoDB on-demand $${PRICES.dynamoPerMillionWrite}/M write units and $${PRICES.dynamoPerMillionRead}/M read units,
HTTP API $${PRICES.httpApiPerMillion}/M (us-east-1).

${table(
  [
    'Operation',
    'MB',
    'RRU',
    'WRU',
    'seq. round trips',
    'billed ms',
    'Lambda $/M',
    'DynamoDB $/M',
    'API GW $/M',
    'total $/M',
  ],
  ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
  rows.map((r) => [
    labelOf(r),
    String(r.memoryMb),
    String(r.readUnits),
    String(r.writeUnits),
    String(r.sequentialRoundTrips),
    String(r.billedMs),
    usd(r.dollarsPerMillion.lambda),
    usd(r.dollarsPerMillion.dynamodb),
    usd(r.dollarsPerMillion.apiGateway),
    `**${usd(r.dollarsPerMillion.total)}**`,
  ]),
)}

**The request gate.** Every admitted request is one conditional UpdateItem on the organization's gate
item for the month (\`ORG#<org>\` / \`USAGE#<YYYY-MM>\`), which holds api_requests, posts_per_month and
one burst window per API key used that month. DynamoDB bills a write by the item's size in whole KB,
so the gate costs 1 write unit per request until about ${gateThreshold(gate)} keys have been active in the
month, then one more per further KB (measured: getPost, whose only write is the gate, as keys were
added):

${table(
  ['active keys this month', 'gate item bytes', 'WRU per request'],
  ['r', 'r', 'r'],
  gate.map((g) => [String(g.activeKeys), String(g.itemBytes), String(g.writeUnits)]),
)}${idempotency ? idempotencySection(idempotency) : ''}`;
}

const WINDOW_NAMES: Record<string, string> = {
  claim: 'first 15 min after the switch (the shared record claimed too)',
  read: 'until 24 h 15 min after it (the shared record read)',
  after: 'after that (per organization only)',
};

function idempotencySection(windows: IdempotencyWindow[]): string {
  return `

**createPost with an Idempotency-Key around the upgrade to per-organization records**
(docs/api/idempotency.md): a scheduled post with a new key, then its replay, in each window after the
switch (RRU / WRU):

${table(
  ['window', 'first call RRU', 'first call WRU', 'replay RRU', 'replay WRU'],
  ['l', 'r', 'r', 'r', 'r'],
  windows.map((w) => [
    WINDOW_NAMES[w.window] ?? w.window,
    String(w.first.readUnits),
    String(w.first.writeUnits),
    String(w.replay.readUnits),
    String(w.replay.writeUnits),
  ]),
)}`;
}

/** The most active keys measured at 1 write unit per request. */
function gateThreshold(gate: GateSize[]): number {
  return Math.max(0, ...gate.filter((g) => g.writeUnits <= 1).map((g) => g.activeKeys));
}
