import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DeleteItemCommandInput,
  DynamoDBClient,
  GetItemCommand,
  type GetItemCommandInput,
  PutItemCommand,
  type PutItemCommandInput,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { CLAIM_MS, clearIdempotencySwitch, LEGACY_MS } from '#adapters/idempotency';
import { keys } from '#adapters/keys';
import { clearGateGuesses } from '#adapters/usage';
import { handler as createPost } from '#handlers/create-post';
import { handler as deletePost } from '#handlers/delete-post';
import { handler as getInboxItem } from '#handlers/get-inbox-item';
import { handler as getPost } from '#handlers/get-post';
import { handler as getUsage } from '#handlers/get-usage';
import { handler as listChannels } from '#handlers/list-channels';
import { handler as listInbox } from '#handlers/list-inbox';
import { handler as listPosts } from '#handlers/list-posts';
import { handler as publishPost } from '#handlers/publish-post';
import { handler as reschedulePost } from '#handlers/reschedule-post';
import { handler as unpublishPost } from '#handlers/unpublish-post';
import { handler as updateInboxItem } from '#handlers/update-inbox-item';
import { authenticate, clearAuthCache } from '#usecases/support/authenticate';
import { condition, update } from '../support/expressions.ts';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  bearer,
  channel,
  channelItem,
  counters,
  daysFromNow,
  type EventOptions,
  fixedId,
  type Item,
  inboxComment,
  inboxItemItem,
  jsonHeaders,
  lambdaContext,
  org,
  orgItem,
  post,
  postItem,
  tableReads,
} from '../support/fixtures.ts';

// DynamoDB requests per operation through the real handlers, on the warm path (API key and org in
// the per-container auth cache), and how many of them are sequential on the critical path.
// BENCHMARKS.md cites these numbers: a change here adds or removes a round trip on the request path
// and must be deliberate.
//
// Sequential depth: every mocked DynamoDB call resolves after a real delay; a call's generation is
// 1 + the highest generation among the calls that had completed before it started, and the depth
// of an operation is its highest generation (1: everything ran concurrently).
//
// Measured through these handlers. Calls: DynamoDB requests per invocation; depth: how many of
// them are sequential on the critical path. "Gate" is the request gate's one UpdateItem (before the
// gate: two, the key's burst window and the org's api_requests, on two items).
//
// | operation                           | calls (before the gate)             | calls now                                  | depth |
// |-------------------------------------|-------------------------------------|--------------------------------------------|-------|
// | getPost                             | 3 = GetItem + the gate              | 2 = GetItem + gate                         | 1     |
// | listPosts (with or without status)  | 3 = Query + the gate                | 2 = Query + gate                           | 1     |
// | listChannels (issue 35: + poll states)| 3 = Query + the gate                | 3 = Query + Query + gate                   | 1     |
// | getUsage                            | 3 = BatchGetItem + the gate         | 2 = BatchGetItem + gate                    | 1     |
// | createPost scheduled, no Idem-Key   | 4 = BG + the gate, then TWI[2]      | 2 = BG + gate+count, then PutItem          | 2     |
// | createPost draft, no Idem-Key       | 4 = BG + the gate, then PutItem     | 3 = BG + gate, then PutItem                | 2     |
// | publishPost (of a draft)            | 4 = BG + the gate, then TWI[3]      | 3 = BG + gate+count, then UpdateItem       | 2     |
// | reschedulePost (of a draft)         | 4 = BG + the gate, then TWI[3]      | 3 = BG, then gate+count, then UpdateItem   | 3     |
// | reschedulePost (already counted)    | 4 = BG + the gate, then TWI[2]      | 3 = BG, then gate, then UpdateItem         | 3     |
// | deletePost                          | 4 = BG + the gate, then TWI[2]      | 3 = BG + gate, then DeleteItem             | 2     |
// | unpublishPost (new in issue 34)     |                                     | 4 = BG + Query + gate, then UpdateItem     | 2     |
// | getInboxItem, listInbox (issue 35)  |                                     | 2 = GetItem or Query + gate                | 1     |
// | updateInboxItem (issue 35)          |                                     | 3 = GetItem + gate, then UpdateItem        | 2     |
// | cold request (getPost, key uncached)| 5 (+2 GetItem: key, then org)       | 4 (+2 GetItem: key, then org)              | 3     |
//
// BG = BatchGetItem, TWI[n] = TransactWriteItems of n items (what these operations wrote before
// issue 24: a transaction bills every unit twice, GSI writes included).
//
// The gate (`ORG#<org>` / `USAGE#<YYYY-MM>`) starts as soon as the key is known and runs
// concurrently with the operation's read, so it adds a call but no sequential depth. createPost
// (scheduling or publishing) and publishPost ask that write to count the post against
// posts_per_month as well (one write for both, not two, nor a transaction), and give the count back
// beside their write when the post does not count after all. Two exceptions. The first request of
// a key in a new minute on a container that has not counted the key in that minute, when another
// container already opened the window, takes a second, sequential gate write (tested last). And
// reschedulePost, whose post usually counted already, is admitted once it has read and decided, so
// that its gate write counts the post only when it does: one round trip more.

const ddb = mockClient(DynamoDBDocumentClient);
const dynamo = mockClient(DynamoDBClient);

const DELAY_MS = 5;

const KEY = apiKey({
  scopes: ['posts:read', 'posts:write', 'channels:read', 'analytics:read', 'inbox:read', 'inbox:write'],
});
const INBOX_ITEM = inboxComment();
const CH1 = channel(1, 'bluesky');
const DRAFT = post();
const PUBLISHED = post({
  id: fixedId('post', 3),
  status: 'published',
  round: 1,
  deliveries: {
    [CH1.id]: {
      channel_id: CH1.id,
      stage: 'published',
      external_id: 'at://did:plc:acme/app.bsky.feed.post/3k',
      url: null,
      error: null,
      error_category: null,
      attempts: 1,
      updated_at: '2030-01-01T00:00:00.000Z',
      round: 1,
    },
  },
});
const COUNTED = post({
  id: fixedId('post', 2),
  status: 'scheduled',
  scheduled_at: daysFromNow(1),
  counted_period: new Date().toISOString().slice(0, 7),
});

type Handler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

interface Traced {
  /** e.g. `GetItem`, `UpdateItem (burst)`, `TransactWriteItems[3]`. */
  call: string;
  generation: number;
}

let traced: Traced[] = [];
let completed: number[] = [];
let queryItems: Item[] = [];
let limiter = counters();
/** Powertools' idempotency records (the low-level client), kept as DynamoDB would. */
let idempotency = new Map<string, Item>();
const recordId = (key: Record<string, unknown>) => `${String(key.pk)} ${String(key.sk)}`;
/** Which item of the low-level client a call touches: an org's record, the shared one, the switch. */
const idemLabel = (op: string, key: Record<string, unknown>) => {
  const pk = String(key.pk);
  if (pk === keys.idempotencySwitch().pk) return `${op} (switch)`;
  return pk.startsWith('ORG#') ? `${op} (idempotency)` : `${op} (legacy idempotency)`;
};
/** Seeds the time this deployment switched to per-organization idempotency records. */
const switchedAgo = (ms: number) => {
  const item = { ...keys.idempotencySwitch(), since: Date.now() - ms };
  idempotency.set(recordId(item), item);
};

/** Wraps a mocked DynamoDB answer: records the call's generation, answers after DELAY_MS. */
function trace<I>(label: (input: I) => string, answer: (input: I) => unknown) {
  return async (input: I) => {
    const generation = 1 + Math.max(0, ...completed);
    traced.push({ call: label(input), generation });
    try {
      return answer(input);
    } finally {
      await new Promise((resolve) => setTimeout(resolve, DELAY_MS));
      completed.push(generation);
    }
  };
}

function updateLabel(input: UpdateCommandInput): string {
  if (String(input.Key?.sk).startsWith('POST#')) return 'UpdateItem (post)';
  if (String(input.Key?.sk).startsWith('INBOX#')) return 'UpdateItem (inbox item)';
  if (!String(input.Key?.sk).startsWith('USAGE#')) return 'UpdateItem (other)';
  const counts = input.UpdateExpression?.includes('posts_per_month');
  if (!input.UpdateExpression?.includes('api_requests')) return 'UpdateItem (post count)';
  return counts ? 'UpdateItem (gate + post count)' : 'UpdateItem (gate)';
}

interface RoundTrips {
  status: number | undefined;
  /** The calls of each generation, sorted: [0] ran first and concurrently, and so on. */
  generations: string[][];
  depth: number;
  /** DynamoDB calls in all, and those made through the low-level client (idempotency). */
  calls: number;
  lowLevel: number;
}

/** Invokes `handler` and traces the DynamoDB requests of that invocation. */
async function invoke(handler: Handler, operationId: string, opts: EventOptions): Promise<RoundTrips> {
  traced = [];
  completed = [];
  ddb.resetHistory();
  dynamo.resetHistory();
  const res = await handler(apiEvent(operationId, opts), lambdaContext(operationId));
  const depth = Math.max(0, ...traced.map((t) => t.generation));
  return {
    status: res.statusCode,
    generations: Array.from({ length: depth }, (_, g) =>
      traced
        .filter((t) => t.generation === g + 1)
        .map((t) => t.call)
        .sort(),
    ),
    depth,
    calls: ddb.calls().length,
    lowLevel: dynamo.calls().length,
  };
}

/** The warm path: the key is cached and the code has run once, as on any busy container. */
async function warm(handler: Handler, operationId: string, opts: EventOptions): Promise<RoundTrips> {
  await authenticate(bearer(KEY));
  await invoke(handler, operationId, opts);
  return invoke(handler, operationId, opts);
}

/** The request gate's one write, which every authenticated request starts with. */
const LIMITER = ['UpdateItem (gate)'];

beforeEach(() => {
  ddb.reset();
  dynamo.reset();
  clearAuthCache();
  clearGateGuesses();
  const reads = tableReads([
    apiKeyItem(KEY),
    orgItem(org({ dangerous_ops: true })),
    channelItem(CH1),
    postItem(DRAFT),
    postItem(COUNTED),
    postItem(PUBLISHED),
    inboxItemItem(INBOX_ITEM),
  ]);
  limiter = counters();
  queryItems = [postItem(DRAFT)];
  ddb.on(GetCommand).callsFake(trace(() => 'GetItem', reads.get));
  ddb.on(BatchGetCommand).callsFake(trace(() => 'BatchGetItem', reads.batchGet));
  ddb.on(QueryCommand).callsFake(
    trace(
      () => 'Query',
      () => ({ Items: queryItems }),
    ),
  );
  ddb.on(PutCommand).callsFake(
    trace(
      () => 'PutItem',
      () => ({}),
    ),
  );
  ddb
    .on(UpdateCommand)
    .callsFake(
      trace(updateLabel, (input: UpdateCommandInput) =>
        String(input.Key?.sk).startsWith('POST#')
          ? {}
          : String(input.Key?.sk).startsWith('INBOX#')
            ? { Attributes: inboxItemItem({ ...INBOX_ITEM, status: 'read', version: 2 }) }
            : limiter.update(input),
      ),
    );
  ddb.on(DeleteCommand).callsFake(
    trace(
      () => 'DeleteItem',
      () => ({}),
    ),
  );
  ddb.on(TransactWriteCommand).callsFake(
    trace(
      (input: TransactWriteCommandInput) => `TransactWriteItems[${input.TransactItems?.length ?? 0}]`,
      () => ({}),
    ),
  );
  idempotency = new Map();
  clearIdempotencySwitch();
  switchedAgo(LEGACY_MS); // long ago unless a test says otherwise
  const values = (v: Record<string, unknown> | undefined) => (v ? unmarshall(v as never) : undefined);
  dynamo.on(GetItemCommand).callsFake(
    trace(
      (input: GetItemCommandInput) => idemLabel('GetItem', unmarshall((input.Key ?? {}) as never)),
      (input: GetItemCommandInput) => {
        const found = idempotency.get(recordId(unmarshall((input.Key ?? {}) as never)));
        return found ? { Item: marshall(found) } : {};
      },
    ),
  );
  dynamo.on(PutItemCommand).callsFake(
    trace(
      (input: PutItemCommandInput) => idemLabel('PutItem', unmarshall((input.Item ?? {}) as never)),
      (input: PutItemCommandInput) => {
        const item = unmarshall((input.Item ?? {}) as never);
        const old = idempotency.get(recordId(item));
        const holds = condition(
          input.ConditionExpression ?? '',
          input.ExpressionAttributeNames,
          values(input.ExpressionAttributeValues),
        );
        if (old && !holds(old))
          throw Object.assign(new ConditionalCheckFailedException({ message: 'refused', $metadata: {} }), {
            Item: marshall(old),
          });
        idempotency.set(recordId(item), item);
        return {};
      },
    ),
  );
  dynamo.on(UpdateItemCommand).callsFake(
    trace(
      (input: UpdateItemCommandInput) => idemLabel('UpdateItem', unmarshall((input.Key ?? {}) as never)),
      (input: UpdateItemCommandInput) => {
        const key = unmarshall((input.Key ?? {}) as never);
        const old = idempotency.get(recordId(key)) ?? key;
        const { next } = update(
          old,
          input.UpdateExpression ?? '',
          input.ExpressionAttributeNames,
          values(input.ExpressionAttributeValues),
        );
        idempotency.set(recordId(key), next);
        return {};
      },
    ),
  );
  dynamo.on(DeleteItemCommand).callsFake(
    trace(
      (input: DeleteItemCommandInput) => idemLabel('DeleteItem', unmarshall((input.Key ?? {}) as never)),
      (input: DeleteItemCommandInput) => {
        idempotency.delete(recordId(unmarshall((input.Key ?? {}) as never)));
        return {};
      },
    ),
  );
});

describe('DynamoDB round trips per operation, warm', () => {
  it('getPost: GetItem + the gate, all concurrent (depth 1)', async () => {
    const rt = await warm(getPost, 'getPost', { headers: bearer(KEY), pathParameters: { id: DRAFT.id } });
    expect(rt).toEqual({
      status: 200,
      generations: [['GetItem', ...LIMITER]],
      depth: 1,
      calls: 2,
      lowLevel: 0,
    });
  });

  it.each([
    ['without a filter', { limit: '10' }],
    ['with a status filter', { status: 'draft' }],
  ])('listPosts %s: Query + the gate (depth 1)', async (_what, query) => {
    const rt = await warm(listPosts, 'listPosts', { headers: bearer(KEY), query });
    expect(rt).toEqual({
      status: 200,
      generations: [['Query', ...LIMITER]],
      depth: 1,
      calls: 2,
      lowLevel: 0,
    });
  });

  it("listChannels: the channels' Query, the poll states' Query and the gate, all concurrent (depth 1)", async () => {
    queryItems = [channelItem(CH1)];
    const rt = await warm(listChannels, 'listChannels', { headers: bearer(KEY) });
    expect(rt).toEqual({
      status: 200,
      generations: [['Query', 'Query', ...LIMITER]],
      depth: 1,
      calls: 3,
      lowLevel: 0,
    });
  });

  it('getInboxItem: GetItem + the gate (depth 1); listInbox: Query + the gate (depth 1)', async () => {
    const one = await warm(getInboxItem, 'getInboxItem', {
      headers: bearer(KEY),
      pathParameters: { id: INBOX_ITEM.id },
    });
    expect(one).toEqual({
      status: 200,
      generations: [['GetItem', ...LIMITER]],
      depth: 1,
      calls: 2,
      lowLevel: 0,
    });
    queryItems = [inboxItemItem(INBOX_ITEM)];
    const page = await warm(listInbox, 'listInbox', { headers: bearer(KEY), query: { status: 'unread' } });
    expect(page).toEqual({
      status: 200,
      generations: [['Query', ...LIMITER]],
      depth: 1,
      calls: 2,
      lowLevel: 0,
    });
  });

  it('updateInboxItem: GetItem + the gate, then the UpdateItem (depth 2)', async () => {
    const rt = await warm(updateInboxItem, 'updateInboxItem', {
      headers: { ...bearer(KEY), 'content-type': 'application/json' },
      pathParameters: { id: INBOX_ITEM.id },
      body: JSON.stringify({ status: 'read' }),
    });
    expect(rt).toEqual({
      status: 200,
      generations: [['GetItem', ...LIMITER], ['UpdateItem (inbox item)']],
      depth: 2,
      calls: 3,
      lowLevel: 0,
    });
  });

  it('getUsage: BatchGetItem (org + meters) + the gate (depth 1)', async () => {
    const rt = await warm(getUsage, 'getUsage', { headers: bearer(KEY) });
    expect(rt).toEqual({
      status: 200,
      generations: [['BatchGetItem', ...LIMITER]],
      depth: 1,
      calls: 2,
      lowLevel: 0,
    });
  });

  it('createPost, scheduled, without Idempotency-Key: read + the gate counting the post, then PutItem (depth 2)', async () => {
    const rt = await warm(createPost, 'createPost', {
      headers: jsonHeaders(KEY),
      body: JSON.stringify({
        variants: [{ channel_id: CH1.id, body: 'Hello' }],
        scheduled_at: daysFromNow(1),
      }),
    });
    expect(rt).toEqual({
      status: 201,
      generations: [['BatchGetItem', 'UpdateItem (gate + post count)'], ['PutItem']],
      depth: 2,
      calls: 3,
      lowLevel: 0,
    });
  });

  it('createPost, draft, without Idempotency-Key: read + gate, then PutItem (depth 2)', async () => {
    const rt = await warm(createPost, 'createPost', {
      headers: jsonHeaders(KEY),
      body: JSON.stringify({ variants: [{ channel_id: CH1.id, body: 'Hello' }], draft: true }),
    });
    expect(rt).toEqual({
      status: 201,
      generations: [['BatchGetItem', ...LIMITER], ['PutItem']],
      depth: 2,
      calls: 3,
      lowLevel: 0,
    });
  });

  it('createPost with Idempotency-Key: read + the gate counting the post, then the in-progress record, the post, the record completed (depth 4); a replay: read + gate, then the record, then the count given back (depth 3)', async () => {
    // Arrange: warm, with another key (a replay of the same key would not run the use case).
    const body = JSON.stringify({
      variants: [{ channel_id: CH1.id, body: 'Hello' }],
      scheduled_at: daysFromNow(1),
    });
    const send = (key: string) =>
      invoke(createPost, 'createPost', { headers: { ...jsonHeaders(KEY), 'idempotency-key': key }, body });
    await authenticate(bearer(KEY));
    await send('round-trips-warm-up');

    // Act
    const first = await send('round-trips-1');
    const replay = await send('round-trips-1');

    // Assert: the in-progress record waits for the admission; the read runs while the gate decides.
    expect(first).toEqual({
      status: 201,
      generations: [
        ['BatchGetItem', 'UpdateItem (gate + post count)'],
        ['PutItem (idempotency)'],
        ['PutItem'],
        ['UpdateItem (idempotency)'],
      ],
      depth: 4,
      calls: 3,
      lowLevel: 2,
    });
    expect(replay).toEqual({
      status: 201,
      generations: [
        ['BatchGetItem', 'UpdateItem (gate + post count)'],
        ['PutItem (idempotency)'],
        ['UpdateItem (post count)'],
      ],
      depth: 3,
      calls: 3,
      lowLevel: 1,
    });
  });

  it("createPost with Idempotency-Key around the switch to per-organization records: a container's first keyed call reads the switch alongside its claim; until 24 h 15 min the shared record is read alongside it (depth unchanged); the first 15 min claim it too (depth 6)", async () => {
    const body = JSON.stringify({
      variants: [{ channel_id: CH1.id, body: 'Hello' }],
      scheduled_at: daysFromNow(1),
    });
    const send = (key: string) =>
      invoke(createPost, 'createPost', { headers: { ...jsonHeaders(KEY), 'idempotency-key': key }, body });
    await authenticate(bearer(KEY));

    // A fresh container, long after the switch.
    const cold = await send('switch-cold');
    // Read window: past the claim window, warm.
    clearIdempotencySwitch();
    switchedAgo(CLAIM_MS + 60_000);
    await send('switch-warm-up');
    const reading = await send('switch-read');
    const readingReplay = await send('switch-read');
    // Claim window: a minute after the switch, warm.
    clearIdempotencySwitch();
    switchedAgo(60_000);
    await send('switch-warm-up-2');
    const claiming = await send('switch-claim');

    expect(cold.generations).toEqual([
      ['BatchGetItem', 'UpdateItem (gate + post count)'],
      ['GetItem (switch)', 'PutItem (idempotency)'],
      ['PutItem'],
      ['UpdateItem (idempotency)'],
    ]);
    expect(reading.generations).toEqual([
      ['BatchGetItem', 'UpdateItem (gate + post count)'],
      ['GetItem (legacy idempotency)', 'PutItem (idempotency)'],
      ['PutItem'],
      ['UpdateItem (idempotency)'],
    ]);
    expect(readingReplay.generations).toEqual([
      ['BatchGetItem', 'UpdateItem (gate + post count)'],
      ['GetItem (legacy idempotency)', 'PutItem (idempotency)'],
      ['UpdateItem (post count)'],
    ]);
    expect(claiming.generations).toEqual([
      ['BatchGetItem', 'UpdateItem (gate + post count)'],
      ['PutItem (idempotency)'],
      ['PutItem (legacy idempotency)'],
      ['PutItem'],
      ['UpdateItem (legacy idempotency)'],
      ['UpdateItem (idempotency)'],
    ]);
  });

  it('publishPost of a draft: read + the gate counting the post, then its UpdateItem (depth 2)', async () => {
    const rt = await warm(publishPost, 'publishPost', {
      headers: bearer(KEY),
      pathParameters: { id: DRAFT.id },
    });
    expect(rt).toEqual({
      status: 202,
      generations: [['BatchGetItem', 'UpdateItem (gate + post count)'], ['UpdateItem (post)']],
      depth: 2,
      calls: 3,
      lowLevel: 0,
    });
  });

  it('reschedulePost of a draft: read, then the gate counting the post, then its UpdateItem (depth 3)', async () => {
    const rt = await warm(reschedulePost, 'reschedulePost', {
      headers: jsonHeaders(KEY),
      pathParameters: { id: DRAFT.id },
      body: JSON.stringify({ scheduled_at: daysFromNow(2) }),
    });
    expect(rt).toEqual({
      status: 200,
      generations: [['BatchGetItem'], ['UpdateItem (gate + post count)'], ['UpdateItem (post)']],
      depth: 3,
      calls: 3,
      lowLevel: 0,
    });
  });

  it('reschedulePost of a post already counted: read, then the gate alone, then UpdateItem (depth 3)', async () => {
    const rt = await warm(reschedulePost, 'reschedulePost', {
      headers: jsonHeaders(KEY),
      pathParameters: { id: COUNTED.id },
      body: JSON.stringify({ scheduled_at: daysFromNow(2) }),
    });
    expect(rt).toEqual({
      status: 200,
      generations: [['BatchGetItem'], LIMITER, ['UpdateItem (post)']],
      depth: 3,
      calls: 3,
      lowLevel: 0,
    });
  });

  it('deletePost: read + gate, then one DeleteItem (depth 2)', async () => {
    const rt = await warm(deletePost, 'deletePost', {
      headers: bearer(KEY),
      pathParameters: { id: DRAFT.id },
    });
    expect(rt).toEqual({
      status: 200,
      generations: [['BatchGetItem', ...LIMITER], ['DeleteItem']],
      depth: 2,
      calls: 3,
      lowLevel: 0,
    });
  });

  it("unpublishPost: the post's read, the channels' Query and the gate at once, then one UpdateItem (depth 2)", async () => {
    const rt = await warm(unpublishPost, 'unpublishPost', {
      headers: bearer(KEY),
      pathParameters: { id: PUBLISHED.id },
    });
    expect(rt).toEqual({
      status: 202,
      generations: [['BatchGetItem', 'Query', ...LIMITER], ['UpdateItem (post)']],
      depth: 2,
      calls: 4,
      lowLevel: 0,
    });
  });

  it('a cold request adds two sequential GetItems: the key, then its organization', async () => {
    // Act: no warm-up of the auth cache.
    const rt = await invoke(getPost, 'getPost', { headers: bearer(KEY), pathParameters: { id: DRAFT.id } });

    // Assert
    expect(rt).toEqual({
      status: 200,
      generations: [['GetItem'], ['GetItem'], ['GetItem', ...LIMITER]],
      depth: 3,
      calls: 4,
      lowLevel: 0,
    });
    expect(ddb.commandCalls(GetCommand).map((c) => c.args[0].input.Key?.sk)).toEqual([
      'APIKEY',
      'ORG',
      `POST#${DRAFT.id}`,
    ]);
  });

  it("a key's first request in a minute another container opened: a second, sequential gate write", async () => {
    // Arrange: warm key; another container already counted 5 requests of it in this minute.
    await authenticate(bearer(KEY));
    const gate = `ORG#${KEY.record.org_id} USAGE#${new Date().toISOString().slice(0, 7)}`;
    limiter.items.set(gate, { [KEY.record.id]: { w: Math.floor(Date.now() / 60_000), n: 5 } });

    // Act
    const rt = await invoke(getPost, 'getPost', { headers: bearer(KEY), pathParameters: { id: DRAFT.id } });

    // Assert
    expect(rt).toEqual({
      status: 200,
      generations: [['GetItem', ...LIMITER], LIMITER],
      depth: 2,
      calls: 3,
      lowLevel: 0,
    });
    expect(limiter.items.get(gate)).toMatchObject({ [KEY.record.id]: { n: 6 } });
  });
});
