import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  PutCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { countedNow, type PostRecord } from '#core/posts';
import type { CreatePostInput } from '#core/requests';
import { handler as createPostHandler } from '#handlers/create-post';
import { createPost } from '#usecases/create-post';
import { publishPost } from '#usecases/publish-post';
import { reschedulePost } from '#usecases/reschedule-post';
import { clearAuthCache } from '#usecases/support/authenticate';
import type { Gate } from '#usecases/support/post-writes';
import { rejectedApiError } from '../support/errors.ts';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  channel,
  channelItem,
  fixedId,
  jsonHeaders,
  lambdaContext,
  ORG_ID,
  org,
  orgItem,
  post,
  postItem,
  serveCounters,
  serveItems,
  TABLE,
} from '../support/fixtures.ts';

// posts_per_month (docs/limits.md): a post counts once, in the UTC month of the request that first
// schedules or publishes it, in the same TransactWriteItems as the post's write (its last item).

const ddb = mockClient(DynamoDBDocumentClient);

/** 11 h 59 min 17.5 s before the end of June 2030 (UTC). */
const NOW = new Date('2030-06-30T12:00:42.500Z');
const TO_MONTH_END = 43_158;
const LATER = '2030-07-02T12:00:00.000Z';
const CH1 = channel(1, 'bluesky');
const POST = post({ id: fixedId('post', 5) });

const COUNT_ITEM = {
  Update: {
    TableName: TABLE,
    Key: { pk: `ORG#${ORG_ID}`, sk: 'USAGE#2030-06' },
    UpdateExpression: 'ADD posts_per_month :one',
    ConditionExpression: 'attribute_not_exists(posts_per_month) OR posts_per_month < :limit',
    ExpressionAttributeValues: { ':one': 1, ':limit': 300 },
  },
};

const cancelled = (...codes: string[]) =>
  new TransactionCanceledException({
    message: 'Transaction cancelled, please refer cancellation reasons for specific reasons',
    $metadata: {},
    CancellationReasons: codes.map((Code) => ({ Code })),
  });

const input = (overrides: Partial<CreatePostInput>): CreatePostInput => ({
  variants: [{ channel_id: CH1.id, body: 'Hello' }],
  ...overrides,
});

const transactItems = (n = 0) => ddb.commandCalls(TransactWriteCommand)[n]?.args[0].input.TransactItems ?? [];

let gate: Gate;

beforeEach(() => {
  ddb.reset();
  gate = { admitted: async () => undefined, postsPerMonth: 300 };
  ddb.on(PutCommand).resolves({});
  ddb.on(TransactWriteCommand).resolves({});
});

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

describe('createPost', () => {
  beforeEach(() => {
    serveItems(ddb, [orgItem(org({ dangerous_ops: true })), channelItem(CH1)]);
  });

  it('counts a scheduled post in the same transaction as its insert, as the last item', async () => {
    // Act
    const created = await createPost(ORG_ID, input({ scheduled_at: LATER }), NOW, gate);

    // Assert
    expect(ddb.commandCalls(PutCommand)).toHaveLength(0);
    const items = transactItems();
    expect(items).toHaveLength(2);
    expect(items[0]?.Put).toMatchObject({
      ConditionExpression: 'attribute_not_exists(pk)',
      Item: { sk: `POST#${created.id}`, status: 'scheduled', counted_period: '2030-06' },
    });
    expect(items.at(-1)).toEqual(COUNT_ITEM);
  });

  it('counts a post published now', async () => {
    await createPost(ORG_ID, input({ publish_now: true }), NOW, gate);
    expect(transactItems()[0]?.Put?.Item).toMatchObject({ status: 'publishing', counted_period: '2030-06' });
    expect(transactItems().at(-1)).toEqual(COUNT_ITEM);
  });

  it('counts against the allowance the gate carries (the effective limit)', async () => {
    await createPost(ORG_ID, input({ scheduled_at: LATER }), NOW, { ...gate, postsPerMonth: 7 });
    expect(transactItems().at(-1)?.Update?.ExpressionAttributeValues).toEqual({ ':one': 1, ':limit': 7 });
  });

  it('does not count a draft: a plain PutItem', async () => {
    await createPost(ORG_ID, input({ draft: true }), NOW, gate);
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
    const put = ddb.commandCalls(PutCommand)[0]?.args[0].input;
    expect(put?.Item).toMatchObject({ status: 'draft', counted_period: null });
  });

  it('does not count a post waiting for approval (approval counts it)', async () => {
    serveItems(ddb, [orgItem(org({ approval_required: true })), channelItem(CH1)]);
    await createPost(ORG_ID, input({ scheduled_at: LATER }), NOW, gate);
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
    expect(ddb.commandCalls(PutCommand)[0]?.args[0].input.Item).toMatchObject({
      status: 'needs_approval',
      counted_period: null,
    });
  });

  it('answers 429 quota_exhausted with Retry-After to the month end when the count is refused', async () => {
    // Arrange: the last item (the count) failed its condition.
    ddb.on(TransactWriteCommand).rejects(cancelled('None', 'ConditionalCheckFailed'));

    // Act
    const err = await rejectedApiError(createPost(ORG_ID, input({ scheduled_at: LATER }), NOW, gate));

    // Assert
    expect(err).toMatchObject({
      code: 'quota_exhausted',
      status: 429,
      headers: { 'retry-after': String(TO_MONTH_END) },
    });
    expect(err.message).toContain('2030-07-01T00:00:00.000Z');
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(1);
  });
});

describe('publishPost', () => {
  it('counts a draft it publishes, as the last transaction item', async () => {
    // Arrange
    serveItems(ddb, [orgItem(org({ dangerous_ops: true })), postItem(POST)]);

    // Act
    await publishPost(ORG_ID, POST.id, NOW, gate);

    // Assert
    const items = transactItems();
    expect(items).toHaveLength(3);
    expect(items[1]?.Put?.Item).toMatchObject({ status: 'publishing', counted_period: '2030-06' });
    expect(items.at(-1)).toEqual(COUNT_ITEM);
  });

  it.each<PostRecord['status']>(['scheduled', 'failed'])('does not count a %s post again', async (status) => {
    serveItems(ddb, [
      orgItem(org({ dangerous_ops: true })),
      postItem({ ...POST, status, scheduled_at: LATER, counted_period: '2030-05' }),
    ]);
    await publishPost(ORG_ID, POST.id, NOW, gate);
    const items = transactItems();
    expect(items).toHaveLength(2);
    expect(items[1]?.Put?.Item).toMatchObject({ status: 'publishing', counted_period: '2030-05' });
  });

  it('answers 429 quota_exhausted at once when the count is refused (no retry)', async () => {
    // Arrange
    serveItems(ddb, [orgItem(org({ dangerous_ops: true })), postItem(POST)]);
    ddb.on(TransactWriteCommand).rejects(cancelled('None', 'None', 'ConditionalCheckFailed'));

    // Act
    const err = await rejectedApiError(publishPost(ORG_ID, POST.id, NOW, gate));

    // Assert
    expect(err).toMatchObject({ code: 'quota_exhausted', headers: { 'retry-after': String(TO_MONTH_END) } });
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(1);
    expect(ddb.commandCalls(BatchGetCommand)).toHaveLength(1);
  });

  it.each([
    ['the settings guard', ['ConditionalCheckFailed', 'None', 'None']],
    ['the version check', ['None', 'ConditionalCheckFailed', 'None']],
  ])('retries when %s failed, and answers 409 after 4 attempts', async (_what, codes) => {
    serveItems(ddb, [orgItem(org({ dangerous_ops: true })), postItem(POST)]);
    ddb.on(TransactWriteCommand).rejects(cancelled(...codes));
    const err = await rejectedApiError(publishPost(ORG_ID, POST.id, NOW, gate));
    expect(err.code).toBe('resource_conflict');
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(4);
  });
});

describe('reschedulePost', () => {
  it('counts a draft it schedules', async () => {
    serveItems(ddb, [orgItem(org()), postItem(POST)]);
    await reschedulePost(ORG_ID, POST.id, LATER, NOW, gate);
    const items = transactItems();
    expect(items).toHaveLength(3);
    expect(items[1]?.Put?.Item).toMatchObject({ status: 'scheduled', counted_period: '2030-06' });
    expect(items.at(-1)).toEqual(COUNT_ITEM);
  });

  it.each(['2030-06', '2030-05'])('does not count a post already counted (in %s) again', async (period) => {
    // Arrange
    serveItems(ddb, [
      orgItem(org()),
      postItem({ ...POST, status: 'scheduled', scheduled_at: LATER, counted_period: period }),
    ]);

    // Act
    await reschedulePost(ORG_ID, POST.id, '2030-07-03T00:00:00.000Z', NOW, gate);

    // Assert
    const items = transactItems();
    expect(items).toHaveLength(2);
    expect(items.some((i) => i.Update)).toBe(false);
    expect(items[1]?.Put?.Item).toMatchObject({ counted_period: period });
  });

  it('answers 429 quota_exhausted when the count is refused', async () => {
    serveItems(ddb, [orgItem(org()), postItem(POST)]);
    ddb.on(TransactWriteCommand).rejects(cancelled('None', 'None', 'ConditionalCheckFailed'));
    const err = await rejectedApiError(reschedulePost(ORG_ID, POST.id, LATER, NOW, gate));
    expect(err.code).toBe('quota_exhausted');
  });

  it('still retries a concurrent change of a counted post (no count item to blame)', async () => {
    serveItems(ddb, [orgItem(org()), postItem({ ...POST, status: 'scheduled', counted_period: '2030-06' })]);
    ddb.on(TransactWriteCommand).rejects(cancelled('None', 'ConditionalCheckFailed'));
    const err = await rejectedApiError(reschedulePost(ORG_ID, POST.id, LATER, NOW, gate));
    expect(err.code).toBe('resource_conflict');
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(4);
  });
});

describe('through the createPost handler', () => {
  const KEY = apiKey({ scopes: ['posts:write'] });
  let gate: Map<string, Record<string, unknown>>;

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
    clearAuthCache();
    serveItems(ddb, [apiKeyItem(KEY), orgItem({ ...org(), plan: 'starter' }), channelItem(CH1)]);
    gate = serveCounters(ddb, { api_requests: 41 });
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('counts against the effective plan allowance and answers the refusal as 429 with Retry-After', async () => {
    // Arrange
    ddb.on(TransactWriteCommand).rejects(cancelled('None', 'ConditionalCheckFailed'));

    // Act
    const res = await createPostHandler(
      apiEvent('createPost', {
        headers: jsonHeaders(KEY),
        body: JSON.stringify(input({ scheduled_at: LATER })),
      }),
      lambdaContext('createPost'),
    );

    // Assert
    expect(res.statusCode).toBe(429);
    expect(JSON.parse(res.body ?? '')).toMatchObject({ code: 'quota_exhausted', status: 429 });
    expect(res.headers['retry-after']).toBe(String(TO_MONTH_END));
    expect(res.headers.ratelimit).toBeDefined();
    expect(transactItems().at(-1)).toEqual(COUNT_ITEM); // starter: 300 posts a month
    // Refused with 429, so not an API request either: admitted (42), then taken back (41).
    expect(gate.get(`ORG#${ORG_ID} USAGE#2030-06`)?.api_requests).toBe(41);
  });
});
