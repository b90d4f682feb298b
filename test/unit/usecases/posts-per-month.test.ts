import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { beforeEach, describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import { clearGateGuesses } from '#adapters/usage';
import { countedNow, type PostRecord } from '#core/posts';
import type { CreatePostInput } from '#core/requests';
import { handler as createPostHandler } from '#handlers/create-post';
import { handler as deletePostHandler } from '#handlers/delete-post';
import { handler as publishPostHandler } from '#handlers/publish-post';
import { handler as reschedulePostHandler } from '#handlers/reschedule-post';
import type { Call } from '../faults/support/dynamo.ts';
import { useWorld } from '../faults/support/world.ts';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  bearer,
  channel,
  channelItem,
  fixedId,
  type Item,
  jsonHeaders,
  lambdaContext,
  ORG_ID,
  org,
  orgItem,
  post,
  postItem,
  problemOf,
} from '../support/fixtures.ts';
import { holdWrites } from '../support/people.ts';

// posts_per_month (docs/api/limits.md): a post counts once, in the UTC month of the request that first
// schedules or publishes it. The count is taken before the post's write, conditionally at the
// allowance: in the request gate's own write (asked at once by createPost scheduling or publishing
// and by publishPost, which most likely count; by reschedulePost once it has decided), otherwise by
// a write of its own; a count no write used is given back. Through the real handlers, pipeline and
// gate, against the in-memory table behind the SDK.

const world = useWorld({ platforms: false });
const { table } = world;

beforeEach(() => {
  // The gate's guess of a key's window outlives a test whose table was reset (same key, same minute).
  clearGateGuesses();
});

const PERIOD = '2030-06';
/** T0 (2030-06-10T09:30Z) to 2030-07-01T00:00Z. */
const TO_MONTH_END = 1_780_200;
const LATER = '2030-06-12T12:00:00.000Z';
const KEY = apiKey({ scopes: ['posts:read', 'posts:write'] });
const CH1 = channel(1, 'bluesky');
const DRAFT = post({ id: fixedId('post', 5) });

const usage = () => table.get(keys.usage(ORG_ID, PERIOD)) ?? {};
const stored = (id = DRAFT.id) => table.get(keys.post(ORG_ID, id)) as (PostRecord & Item) | undefined;
const usageWrites = () => table.callsOf('UpdateItem', (c) => String(c.view.keys[0]?.sk).startsWith('USAGE#'));
const postWrites = () =>
  table.calls.filter(
    (c) =>
      c.op !== 'GetItem' &&
      c.op !== 'BatchGetItem' &&
      c.op !== 'Query' &&
      [...c.view.keys, ...c.view.items].some((i) => String(i.sk).startsWith('POST#')),
  );
/** The expressions of a write (wire values unwrapped to their text). */
const expressionOf = (c: Call) => ({
  update: String(c.view.raw.UpdateExpression),
  values: JSON.stringify(c.view.raw.ExpressionAttributeValues),
});

function given(opts: { limit?: number; counted?: number; settings?: Parameters<typeof org>[0] } = {}) {
  table.seed(
    apiKeyItem(KEY),
    orgItem({
      ...org({ dangerous_ops: true, ...opts.settings }),
      ...(opts.limit ? { limits: { posts_per_month: opts.limit } } : {}),
    }),
    channelItem(CH1),
    postItem(DRAFT),
    ...(opts.counted === undefined ? [] : [{ ...keys.usage(ORG_ID, PERIOD), posts_per_month: opts.counted }]),
  );
}

const input = (overrides: Partial<CreatePostInput>): CreatePostInput => ({
  variants: [{ channel_id: CH1.id, body: 'Hello' }],
  ...overrides,
});

type Result = APIGatewayProxyStructuredResultV2 & { headers: Record<string, string> };
const create = (body: CreatePostInput, headers: Record<string, string> = {}) =>
  createPostHandler(
    apiEvent('createPost', { headers: { ...jsonHeaders(KEY), ...headers }, body: JSON.stringify(body) }),
    lambdaContext('createPost'),
  ) as Promise<Result>;
const publish = (id = DRAFT.id) =>
  publishPostHandler(
    apiEvent('publishPost', { headers: bearer(KEY), pathParameters: { id } }),
    lambdaContext('publishPost'),
  ) as Promise<Result>;
const reschedule = (at = LATER, id = DRAFT.id) =>
  reschedulePostHandler(
    apiEvent('reschedulePost', {
      headers: jsonHeaders(KEY),
      pathParameters: { id },
      body: JSON.stringify({ scheduled_at: at }),
    }),
    lambdaContext('reschedulePost'),
  ) as Promise<Result>;
const remove = (id = DRAFT.id) =>
  deletePostHandler(
    apiEvent('deletePost', { headers: bearer(KEY), pathParameters: { id } }),
    lambdaContext('deletePost'),
  ) as Promise<Result>;

function expectPostsQuota(res: Result) {
  expect(res.statusCode).toBe(429);
  expect(problemOf(res)).toMatchObject({ code: 'quota_exhausted', status: 429 });
  expect(problemOf(res).detail ?? problemOf(res).title).toBeDefined();
  expect(res.headers['retry-after']).toBe(String(TO_MONTH_END));
  expect(res.headers.ratelimit).toBeDefined();
}

describe('countedNow', () => {
  it.each<[string, Partial<PostRecord>, string | null]>([
    ['a draft', { status: 'draft' }, null],
    ['a post waiting for approval', { status: 'needs_approval' }, null],
    ['a newly scheduled post', { status: 'scheduled' }, '2030-06'],
    ['a newly publishing post', { status: 'publishing' }, '2030-06'],
    ['a post counted in an earlier month', { status: 'scheduled', counted_period: '2030-05' }, null],
    ['a post counted this month', { status: 'publishing', counted_period: '2030-06' }, null],
  ])('%s → %s', (_what, overrides, period) => {
    expect(countedNow(post(overrides), '2030-06')?.counted_period ?? null).toBe(period);
  });
});

describe('the count rides on the request gate’s write', () => {
  it('createPost scheduled: one gate write counts the request and the post, then one PutItem', async () => {
    given();

    const res = await create(input({ scheduled_at: LATER }));

    expect(res.statusCode).toBe(201);
    expect(usageWrites()).toHaveLength(1);
    expect(expressionOf(usageWrites()[0] as Call).update).toContain('posts_per_month :one');
    expect(postWrites().map((c) => c.op)).toEqual(['PutItem']);
    expect(table.callsOf('TransactWriteItems')).toEqual([]);
    expect(usage()).toMatchObject({ api_requests: 1, posts_per_month: 1 });
    const id = JSON.parse(res.body ?? '{}').id as string;
    expect(stored(id)).toMatchObject({ status: 'scheduled', counted_period: PERIOD });
  });

  it('createPost publish now: counted the same way', async () => {
    given();
    const res = await create(input({ publish_now: true }));
    expect(res.statusCode).toBe(201);
    expect(usage()).toMatchObject({ api_requests: 1, posts_per_month: 1 });
    expect(usageWrites()).toHaveLength(1);
  });

  it('createPost of a draft: the gate alone, nothing counted', async () => {
    given();
    const res = await create(input({ draft: true }));
    expect(res.statusCode).toBe(201);
    expect(usageWrites()).toHaveLength(1);
    expect(expressionOf(usageWrites()[0] as Call).update).not.toContain('posts_per_month');
    expect(usage()).toMatchObject({ api_requests: 1 });
    expect(usage().posts_per_month).toBeUndefined();
  });

  it.each([
    ['a post that needs approval', { settings: { approval_required: true } }, input({ scheduled_at: LATER })],
    [
      'a post refused with validation_failed',
      {},
      input({ scheduled_at: LATER, variants: [{ channel_id: fixedId('channel', 9), body: 'x' }] }),
    ],
  ])('createPost of %s: the count its gate write took is given back', async (_what, opts, body) => {
    given(opts);
    const res = await create(body);
    expect(res.statusCode).toBeLessThan(500);
    expect(usageWrites().map((c) => expressionOf(c).update)).toEqual([
      'SET #k = :fresh ADD api_requests :n, posts_per_month :one',
      'ADD posts_per_month :minus',
    ]);
    expect(usage()).toMatchObject({ api_requests: 1, posts_per_month: 0 });
  });

  it('publishPost of a draft: the gate write counts it, then one UpdateItem of the post', async () => {
    given();

    const res = await publish();

    expect(res.statusCode).toBe(202);
    expect(usageWrites()).toHaveLength(1);
    expect(postWrites().map((c) => c.op)).toEqual(['UpdateItem']);
    expect(usage()).toMatchObject({ api_requests: 1, posts_per_month: 1 });
    expect(stored()).toMatchObject({ status: 'publishing', counted_period: PERIOD, version: 2 });
  });

  it('reschedulePost of a draft: counted in the gate write', async () => {
    given();
    const res = await reschedule();
    expect(res.statusCode).toBe(200);
    expect(usage()).toMatchObject({ api_requests: 1, posts_per_month: 1 });
    expect(usageWrites()).toHaveLength(1);
    expect(stored()).toMatchObject({ status: 'scheduled', scheduled_at: LATER, counted_period: PERIOD });
  });

  it.each<[string, Partial<PostRecord>]>([
    ['rescheduling a post counted this month', { status: 'scheduled', counted_period: PERIOD }],
    ['rescheduling a post counted in an earlier month', { status: 'scheduled', counted_period: '2030-05' }],
    ['publishing a failed post counted before', { status: 'failed', counted_period: '2030-05' }],
  ])('%s does not count it again', async (what, state) => {
    given();
    table.seed(postItem({ ...DRAFT, scheduled_at: LATER, ...state }));

    const publishing = what.startsWith('publishing');
    const res = publishing ? await publish() : await reschedule('2030-06-20T00:00:00.000Z');

    expect(res.statusCode).toBeLessThan(300);
    expect(stored()?.counted_period).toBe(state.counted_period);
    if (publishing) {
      // publishPost asks its gate write for the count before it reads, and gives it back.
      expect(usageWrites().map((c) => expressionOf(c).update)).toEqual([
        'SET #k = :fresh ADD api_requests :n, posts_per_month :one',
        'ADD posts_per_month :minus',
      ]);
      expect(usage().posts_per_month).toBe(0);
    } else {
      // reschedulePost asks once it has read: nothing to give back.
      expect(usageWrites().map((c) => expressionOf(c).update)).toEqual([
        'SET #k = :fresh ADD api_requests :n',
      ]);
      expect(usage().posts_per_month).toBeUndefined();
    }
  });

  it('counts against the allowance the key carries (the effective limit)', async () => {
    given({ limit: 7 });
    await publish();
    expect(expressionOf(usageWrites()[0] as Call).values).toContain('":posts":{"N":"7"}');
  });
});

describe('the allowance spent', () => {
  it.each([
    ['createPost', () => create(input({ scheduled_at: LATER }))],
    ['publishPost', () => publish()],
    ['reschedulePost', () => reschedule()],
  ])(
    '%s: 429 quota_exhausted with Retry-After to the month end; nothing written, not metered',
    async (_op, send) => {
      // Arrange
      given({ limit: 2, counted: 2 });

      // Act
      const res = await send();

      // Assert: the gate's one write was refused; no post written, the request not counted.
      expectPostsQuota(res);
      expect(problemOf(res).detail).toContain('2030-07-01T00:00:00.000Z');
      expect(usageWrites().map((c) => c.outcome)).toEqual(['ConditionalCheckFailed']);
      expect(postWrites()).toEqual([]);
      expect(usage()).toEqual({ ...keys.usage(ORG_ID, PERIOD), posts_per_month: 2 });
      expect(stored()).toMatchObject({ status: 'draft', version: 1 });
    },
  );

  it('does not refuse what does not count: a draft, a deletion', async () => {
    given({ limit: 2, counted: 2 });
    expect((await create(input({ draft: true }))).statusCode).toBe(201);
    expect((await remove()).statusCode).toBe(200);
    expect(usage()).toMatchObject({ api_requests: 2, posts_per_month: 2 });
  });

  it('a deferred admission still meters a request that never reached its write (404), once', async () => {
    given();
    const res = await reschedule(LATER, fixedId('post', 99));
    expect(res.statusCode).toBe(404);
    expect(res.headers.ratelimit).toBeDefined();
    expect(usage()).toMatchObject({ api_requests: 1 });
    expect(usageWrites()).toHaveLength(1);
  });

  it('a 404 publish: metered once; the count its gate write took is given back', async () => {
    given();
    const res = await publish(fixedId('post', 99));
    expect(res.statusCode).toBe(404);
    expect(usage()).toMatchObject({ api_requests: 1, posts_per_month: 0 });
  });

  it.each([
    ['publishPost of a post counted before', () => publish(), 202],
    ['publishPost of an unknown post', () => publish(fixedId('post', 99)), 404],
    [
      'createPost refused with validation_failed',
      () =>
        create(input({ scheduled_at: LATER, variants: [{ channel_id: fixedId('channel', 9), body: 'x' }] })),
      400,
    ],
  ])(
    'allowance spent, %s: not refused for the post it does not count (admitted again without it)',
    async (_what, send, status) => {
      // Arrange
      given({ limit: 2, counted: 2 });
      table.seed(postItem({ ...DRAFT, status: 'scheduled', scheduled_at: LATER, counted_period: '2030-05' }));

      // Act
      const res = await send();

      // Assert: the gate's first write refused for the post; a second admits the request alone.
      expect(res.statusCode).toBe(status);
      expect(usageWrites().map((c) => c.outcome)).toEqual(['ConditionalCheckFailed', 'ok']);
      expect(usage()).toMatchObject({ api_requests: 1, posts_per_month: 2 });
    },
  );

  it('createPost with an Idempotency-Key: admitted first, then the count on its own; counted once', async () => {
    given();

    const res = await create(input({ scheduled_at: LATER }), { 'idempotency-key': 'k-1' });
    const replay = await create(input({ scheduled_at: LATER }), { 'idempotency-key': 'k-1' });

    expect([res.statusCode, replay.statusCode]).toEqual([201, 201]);
    expect(usage()).toMatchObject({ api_requests: 2, posts_per_month: 1 });
  });

  it('createPost with an Idempotency-Key past the allowance: 429, the request given back', async () => {
    given({ limit: 2, counted: 2 });
    const res = await create(input({ scheduled_at: LATER }), { 'idempotency-key': 'k-2' });
    expectPostsQuota(res);
    expect(usage()).toMatchObject({ api_requests: 0, posts_per_month: 2 });
    expect(table.all('POST#').filter((p) => p.id !== DRAFT.id)).toEqual([]);
  });
});

describe('races between the count and the write', () => {
  it('the allowance spent between the read and the write: of two publishes for the last post, one wins', async () => {
    // Arrange: two drafts, one post left; both requests read before either is admitted.
    const other = post({ id: fixedId('post', 6) });
    given({ limit: 2, counted: 1 });
    table.seed(postItem(other));
    holdWrites(2, (target, body) => target === 'UpdateItem' && body.includes('"USAGE#'));

    // Act
    const [a, b] = await Promise.all([publish(DRAFT.id), publish(other.id)]);

    // Assert
    expect([a.statusCode, b.statusCode].sort()).toEqual([202, 429]);
    expect(usage()).toMatchObject({ api_requests: 1, posts_per_month: 2 });
    const statuses = [stored(DRAFT.id)?.status, stored(other.id)?.status].sort();
    expect(statuses).toEqual(['draft', 'publishing']);
  });

  it('a version conflict after the count: two publishes of one draft, both 202, counted once', async () => {
    // Arrange: both counted at their gate before either post write.
    given();
    holdWrites(2, (target, body) => target === 'UpdateItem' && body.includes('"POST#'));

    // Act
    const results = await Promise.all([publish(), publish()]);

    // Assert: the loser read the post again (publishing: answered as it is) and gave its count back.
    expect(results.map((r) => r.statusCode)).toEqual([202, 202]);
    expect(usage()).toMatchObject({ api_requests: 2, posts_per_month: 1 });
    expect(usageWrites().map((c) => expressionOf(c).update)).toContain('ADD posts_per_month :minus');
    expect(stored()).toMatchObject({ status: 'publishing', version: 2, round: 1 });
  });

  it('publish against reschedule of one draft: one write wins, the post is counted once', async () => {
    given();
    holdWrites(2, (target, body) => target === 'UpdateItem' && body.includes('"POST#'));

    const [published, rescheduled] = await Promise.all([publish(), reschedule()]);

    // Either published first (the reschedule, read again, finds it publishing: 409), or rescheduled
    // first (the publish, read again, publishes the scheduled post: counted already).
    expect(published.statusCode).toBe(202);
    expect([200, 409]).toContain(rescheduled.statusCode);
    expect(stored()).toMatchObject({ status: 'publishing', counted_period: PERIOD });
    expect(stored()?.version).toBe(rescheduled.statusCode === 200 ? 3 : 2);
    expect(usage()).toMatchObject({ api_requests: 2, posts_per_month: 1 });
  });

  it('publish against delete: a deleted post is never counted', async () => {
    given();
    holdWrites(2, (target, body) => ['UpdateItem', 'DeleteItem'].includes(target) && body.includes('"POST#'));

    const [published, deleted] = await Promise.all([publish(), remove()]);

    if (stored()) {
      expect(published.statusCode).toBe(202);
      expect(deleted.statusCode).toBe(409); // then read again: publishing, not deletable
      expect(usage().posts_per_month).toBe(1);
    } else {
      expect(deleted.statusCode).toBe(200);
      expect(published.statusCode).toBe(404);
      expect(usage().posts_per_month).toBe(0);
    }
  });

  it('the post write applied but its answer lost: the SDK retry recognises its own write; counted once', async () => {
    given();
    table.fail({
      op: 'UpdateItem',
      kind: 'ECONNRESET',
      when: 'after',
      match: (v) => String(v.keys[0]?.sk).startsWith('POST#'),
    });

    const res = await publish();

    expect(res.statusCode).toBe(202);
    const writes = postWrites();
    expect(writes.map((c) => `${c.attempt}:${c.outcome}`)).toEqual([
      '1:ECONNRESET',
      '2:ConditionalCheckFailed',
    ]);
    expect(writes[0]?.applied).toBe(true);
    expect(usage()).toMatchObject({ api_requests: 1, posts_per_month: 1 });
    expect(stored()).toMatchObject({ status: 'publishing', version: 2 });
  });

  it('the post write throttled on every SDK attempt: 500, nothing written, the count given back', async () => {
    // Every attempt was refused before DynamoDB acted: certainly not applied.
    given();
    table.fail({
      op: 'UpdateItem',
      kind: 'ThrottlingException',
      times: 3,
      match: (v) => String(v.keys[0]?.sk).startsWith('POST#'),
    });

    const res = await publish();

    expect(res.statusCode).toBe(500);
    expect(stored()).toMatchObject({ status: 'draft', version: 1 });
    expect(usage()).toMatchObject({ api_requests: 1, posts_per_month: 0 });
  });

  it('the post write’s answers lost on every attempt: 500; the count is kept, one too many at most', async () => {
    // A reset connection hides whether DynamoDB acted: never under-count. (Here it had not.)
    given();
    table.fail({
      op: 'UpdateItem',
      kind: 'ECONNRESET',
      times: 3,
      match: (v) => String(v.keys[0]?.sk).startsWith('POST#'),
    });

    const res = await publish();

    expect(res.statusCode).toBe(500);
    expect(stored()).toMatchObject({ status: 'draft', version: 1 });
    expect(usage()).toMatchObject({ api_requests: 1, posts_per_month: 1 });
  });

  it('an answer lost, then the retry throttled: the write may have landed, so the count is kept', async () => {
    // The last error (throttling) alone would say "not applied"; the first attempt's reset says otherwise.
    given();
    const isPost = (v: { keys: Item[] }) => String(v.keys[0]?.sk).startsWith('POST#');
    table.fail({ op: 'UpdateItem', kind: 'ECONNRESET', when: 'after', match: isPost });
    table.fail({ op: 'UpdateItem', kind: 'ThrottlingException', times: 2, match: isPost });

    const res = await publish();

    // Landed (the first attempt), though the client saw a 500; counted once, as it must be.
    expect(res.statusCode).toBe(500);
    expect(stored()).toMatchObject({ status: 'publishing', version: 2, counted_period: PERIOD });
    expect(usage()).toMatchObject({ api_requests: 1, posts_per_month: 1 });
  });
});

describe('deletePost: one DeleteItem on the version read', () => {
  it('a reset after the DeleteItem applied: the SDK retry finds the post gone — its own delete, 200', async () => {
    given();
    table.fail({
      op: 'DeleteItem',
      kind: 'ECONNRESET',
      when: 'after',
      match: (v) => String(v.keys[0]?.sk).startsWith('POST#'),
    });

    const res = await remove();

    expect(res.statusCode).toBe(200);
    expect(table.callsOf('DeleteItem').map((c) => `${c.attempt}:${c.outcome}`)).toEqual([
      '1:ECONNRESET',
      '2:ConditionalCheckFailed',
    ]);
    expect(stored()).toBeUndefined();
  });

  it('two deletes at once: one 200, the other, finding it gone on its only attempt, 404', async () => {
    given();
    holdWrites(2, (target, body) => target === 'DeleteItem' && body.includes('"POST#'));

    const results = await Promise.all([remove(), remove()]);

    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 404]);
    expect(stored()).toBeUndefined();
    expect(usage()).toMatchObject({ api_requests: 2 });
  });
});
