import {
  BatchGetCommand,
  type BatchGetCommandInput,
  DynamoDBDocumentClient,
  GetCommand,
  type GetCommandInput,
  QueryCommand,
  type QueryCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import { clearGateGuesses } from '#adapters/usage';
import type { Admission } from '#core/accounts';
import { POST_STATUSES, type PostStatus } from '#core/constants';
import { ApiError } from '#core/errors';
import { Analytics } from '#core/schemas';
import { handler } from '#handlers/get-analytics';
import { getAnalytics, TIMELINE_DAYS, timelineDays } from '#usecases/get-analytics';
import { authenticate, clearAuthCache } from '#usecases/support/authenticate';
import { rejectedApiError } from '../support/errors.ts';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  bearer,
  counters,
  type Item,
  jsonOf,
  lambdaContext,
  ORG_ID,
  org,
  orgItem,
  TABLE,
  tableReads,
} from '../support/fixtures.ts';

// getAnalytics (docs/api/analytics.md): post counts per status (GSI1), delivery outcomes and the 14-day
// timeline (stream-kept counters), engagement summed across synced platforms.

const ddb = mockClient(DynamoDBDocumentClient);

const NOW = Date.parse('2030-06-14T18:45:00.000Z');
const admitted = async (): Promise<Admission> => ({
  allowed: true,
  headers: {},
  apiRequests: 1,
  period: '2030-06',
});

const STATS_KEY = keys.orgStats(ORG_ID);
const day = (date: string, published: number, failed: number): Item => ({
  ...keys.dayStats(ORG_ID, date),
  published,
  failed,
});

/** Query answers for `Select: COUNT` on GSI1; a status may answer over several pages. */
function servePostCounts(pages: Partial<Record<PostStatus, number[]>>) {
  ddb.on(QueryCommand).callsFake((input: QueryCommandInput) => {
    expect(input).toMatchObject({ IndexName: 'gsi1', Select: 'COUNT' });
    const status = String(input.ExpressionAttributeValues?.[':p']).split('#POSTS#')[1] as PostStatus;
    const counts = pages[status] ?? [0];
    const page = input.ExclusiveStartKey ? Number(input.ExclusiveStartKey.page) : 0;
    return {
      Count: counts[page] ?? 0,
      ...(page + 1 < counts.length ? { LastEvaluatedKey: { page: page + 1 } } : {}),
    };
  });
}

function serveStats(items: Item[]) {
  ddb.on(BatchGetCommand).callsFake(tableReads(items).batchGet);
}

beforeEach(() => {
  ddb.reset();
});

describe('timelineDays', () => {
  it('is 14 UTC days, oldest first, today last', () => {
    const days = timelineDays(NOW);
    expect(days).toHaveLength(TIMELINE_DAYS);
    expect(days[0]).toBe('2030-06-01');
    expect(days.at(-1)).toBe('2030-06-14');
  });

  it('crosses month and year boundaries in UTC', () => {
    expect(timelineDays(Date.parse('2031-01-03T00:00:01Z')).slice(0, 3)).toEqual([
      '2030-12-21',
      '2030-12-22',
      '2030-12-23',
    ]);
  });
});

describe('getAnalytics', () => {
  it('counts posts per status over every page, and their total', async () => {
    // Arrange: published spans two pages of the count.
    servePostCounts({
      draft: [2],
      scheduled: [3],
      publishing: [1],
      published: [1000, 234],
      failed: [4],
      needs_approval: [5],
    });
    serveStats([]);

    // Act
    const a = await getAnalytics(ORG_ID, admitted, NOW);

    // Assert
    expect(a.posts).toEqual({
      total: 1249,
      draft: 2,
      scheduled: 3,
      publishing: 1,
      published: 1234,
      failed: 4,
      needs_approval: 5,
    });
    const asked = ddb
      .commandCalls(QueryCommand)
      .map((c) => c.args[0].input.ExpressionAttributeValues?.[':p']);
    expect(new Set(asked)).toEqual(new Set(POST_STATUSES.map((s) => `ORG#${ORG_ID}#POSTS#${s}`)));
  });

  it('answers a fresh workspace with zeros, success_rate null and 14 empty days', async () => {
    servePostCounts({});
    serveStats([]);

    const a = await getAnalytics(ORG_ID, admitted, NOW);

    expect(a.deliveries).toEqual({ total: 0, published: 0, failed: 0, success_rate: null });
    expect(a.timeline).toEqual(timelineDays(NOW).map((date) => ({ date, published: 0, failed: 0 })));
    expect(a.engagement).toEqual({ impressions: 0, likes: 0, comments: 0, shares: 0, clicks: 0 });
    expect(a.synced_platforms).toEqual([]);
    expect(Analytics.safeParse(a).success).toBe(true);
  });

  it('reports deliveries per (post, channel) and success_rate = published / (published + failed)', async () => {
    // Arrange: 10 deliveries, 3 in flight.
    servePostCounts({});
    serveStats([{ ...STATS_KEY, deliveries_total: 10, deliveries_published: 6, deliveries_failed: 1 }]);

    const a = await getAnalytics(ORG_ID, admitted, NOW);

    expect(a.deliveries).toEqual({ total: 10, published: 6, failed: 1, success_rate: 6 / 7 });
  });

  it('fills the 14-day timeline oldest to today, zeros where nothing happened', async () => {
    // Arrange: counters today, 13 days ago (the first day), and 14 days ago (outside).
    servePostCounts({});
    serveStats([
      day('2030-06-14', 3, 1),
      day('2030-06-01', 2, 0),
      day('2030-05-31', 9, 9),
      day('2030-06-07', 0, 4),
    ]);

    // Act
    const a = await getAnalytics(ORG_ID, admitted, NOW);

    // Assert
    expect(a.timeline).toHaveLength(14);
    expect(a.timeline[0]).toEqual({ date: '2030-06-01', published: 2, failed: 0 });
    expect(a.timeline[6]).toEqual({ date: '2030-06-07', published: 0, failed: 4 });
    expect(a.timeline[13]).toEqual({ date: '2030-06-14', published: 3, failed: 1 });
    expect(a.timeline.filter((d) => d.published + d.failed === 0)).toHaveLength(11);
    expect(a.timeline.map((d) => d.date)).toEqual(timelineDays(NOW));
  });

  it('sums engagement across platforms and lists the synced ones', async () => {
    servePostCounts({});
    serveStats([
      {
        ...STATS_KEY,
        eng_bluesky_likes: 4,
        eng_bluesky_impressions: 100,
        eng_x_likes: 6,
        eng_x_clicks: 2,
        eng_mastodon_shares: 1,
        synced_platforms: new Set(['x', 'bluesky', 'mastodon']),
      },
    ]);

    const a = await getAnalytics(ORG_ID, admitted, NOW);

    expect(a.engagement).toEqual({ impressions: 100, likes: 10, comments: 0, shares: 1, clicks: 2 });
    expect(a.synced_platforms).toEqual(['x', 'bluesky', 'mastodon']);
  });

  it('never answers negative counts, nor a total below the outcomes (counters started late)', async () => {
    servePostCounts({});
    serveStats([
      { ...STATS_KEY, deliveries_total: 1, deliveries_published: 3, deliveries_failed: -1, eng_x_likes: -2 },
    ]);

    const a = await getAnalytics(ORG_ID, admitted, NOW);

    expect(a.deliveries).toEqual({ total: 3, published: 3, failed: 0, success_rate: 1 });
    expect(a.engagement.likes).toBe(0);
    expect(Analytics.safeParse(a).success).toBe(true);
  });

  it('reads the counters in one strongly consistent BatchGetItem: STATS and the 14 days', async () => {
    servePostCounts({});
    serveStats([]);
    await getAnalytics(ORG_ID, admitted, NOW);
    const calls = ddb.commandCalls(BatchGetCommand);
    expect(calls).toHaveLength(1);
    const req = calls[0]?.args[0].input.RequestItems?.[TABLE];
    expect(req?.ConsistentRead).toBe(true);
    expect(req?.Keys).toEqual([STATS_KEY, ...timelineDays(NOW).map((d) => keys.dayStats(ORG_ID, d))]);
  });

  it('answers the refusal of the admission', async () => {
    servePostCounts({});
    serveStats([]);
    const refusal = new ApiError('rate_limited', 'slow down');
    const err = await rejectedApiError(
      getAnalytics(ORG_ID, async () => ({ allowed: false, headers: {}, error: refusal }), NOW),
    );
    expect(err).toBe(refusal);
  });
});

describe('getAnalytics handler', () => {
  const KEY = apiKey({ scopes: ['analytics:read'] });
  const DELAY_MS = 5;

  /** Every DynamoDB answer comes after a delay; a call's generation is 1 + the highest generation completed before it started. */
  let traced: Array<{ call: string; generation: number }> = [];
  let completed: number[] = [];
  const trace =
    <I>(label: string, answer: (input: I) => unknown) =>
    async (input: I) => {
      const generation = 1 + Math.max(0, ...completed);
      traced.push({ call: label, generation });
      try {
        return answer(input);
      } finally {
        await new Promise((r) => setTimeout(r, DELAY_MS));
        completed.push(generation);
      }
    };

  beforeEach(() => {
    clearAuthCache();
    clearGateGuesses();
    const reads = tableReads([apiKeyItem(KEY), orgItem(org()), { ...STATS_KEY, deliveries_published: 1 }]);
    const limiter = counters();
    ddb.on(GetCommand).callsFake(trace('GetItem', (i: GetCommandInput) => reads.get(i)));
    ddb.on(BatchGetCommand).callsFake(trace('BatchGetItem', (i: BatchGetCommandInput) => reads.batchGet(i)));
    ddb.on(QueryCommand).callsFake(trace('Query', () => ({ Count: 1 })));
    ddb.on(UpdateCommand).callsFake(trace('UpdateItem', (i: UpdateCommandInput) => limiter.update(i)));
  });

  it('is one sequential round trip on a warm path: the reads run concurrently with the admission', async () => {
    // Arrange: the key and org are cached, as on any busy container.
    await authenticate(bearer(KEY));
    traced = [];
    completed = [];
    ddb.resetHistory();

    // Act
    const res = await handler(
      apiEvent('getAnalytics', { headers: bearer(KEY) }),
      lambdaContext('getAnalytics'),
    );

    // Assert: 6 Query (one per status) + 1 BatchGetItem + the request gate's UpdateItem, all generation 1.
    expect(res.statusCode).toBe(200);
    expect(Math.max(...traced.map((t) => t.generation))).toBe(1);
    expect(traced.map((t) => t.call).sort()).toEqual([
      'BatchGetItem',
      ...Array(6).fill('Query'),
      'UpdateItem',
    ]);
    const body = jsonOf<{ posts: { total: number }; deliveries: { success_rate: number | null } }>(res);
    expect(body.posts.total).toBe(6);
    expect(body.deliveries.success_rate).toBe(1);
    expect(Analytics.safeParse(body).success).toBe(true);
  });

  it('refuses a key without analytics:read', async () => {
    const other = apiKey({ scopes: ['posts:read'], n: 2 });
    const reads = tableReads([apiKeyItem(other), orgItem(org())]);
    ddb.on(GetCommand).callsFake(reads.get);
    const res = await handler(
      apiEvent('getAnalytics', { headers: bearer(other) }),
      lambdaContext('getAnalytics'),
    );
    expect(res.statusCode).toBe(403);
  });
});
