import { BatchGetCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Admission, Org } from '#core/accounts';
import { ApiError } from '#core/errors';
import { Usage } from '#core/schemas';
import { handler } from '#handlers/get-usage';
import { getUsage } from '#usecases/get-usage';
import { clearAuthCache } from '#usecases/support/authenticate';
import { rejectedApiError } from '../support/errors.ts';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  bearer,
  jsonOf,
  lambdaContext,
  ORG_ID,
  org,
  orgItem,
  problemOf,
  serveCounters,
  serveItems,
  TABLE,
} from '../support/fixtures.ts';

// getUsage: the effective plan and its meters for the current UTC month (docs/api/limits.md).

const ddb = mockClient(DynamoDBDocumentClient);

const NOW = Date.parse('2030-12-31T23:00:00.000Z');
const PERIOD = { period_starts_at: '2030-12-01T00:00:00.000Z', period_ends_at: '2031-01-01T00:00:00.000Z' };
const USAGE_ITEM = { pk: `ORG#${ORG_ID}`, sk: 'USAGE#2030-12' };

const admitted = (apiRequests: number) => async (): Promise<Admission> => ({
  allowed: true,
  period: '2030-12',
  headers: {},
  apiRequests,
});

function given(
  o: Org,
  meters: { api_requests?: number; posts_per_month?: number; ai_credits?: number } = {},
) {
  serveItems(ddb, [orgItem(o), { ...USAGE_ITEM, ...meters }]);
}

beforeEach(() => {
  ddb.reset();
});

describe('getUsage', () => {
  it('meters api_requests, posts_per_month, channels and ai_credits against the plan, for the UTC month', async () => {
    // Arrange: the read ran concurrently with the admission, so it saw 41; the admission counted 42.
    given(
      { ...org(), plan: 'starter', channel_count: 4 },
      {
        api_requests: 41,
        posts_per_month: 12,
        ai_credits: 7,
      },
    );

    // Act
    const usage = await getUsage(ORG_ID, admitted(42), NOW);

    // Assert
    expect(usage).toEqual({
      plan: 'starter',
      meters: [
        { key: 'api_requests', used: 42, limit: 10_000, remaining: 9_958, ...PERIOD },
        { key: 'posts_per_month', used: 12, limit: 300, remaining: 288, ...PERIOD },
        { key: 'channels', used: 4, limit: 10, remaining: 6, ...PERIOD },
        { key: 'ai_credits', used: 7, limit: 100, remaining: 93, ...PERIOD },
      ],
    });
    expect(Usage.safeParse(usage).success).toBe(true);
  });

  it("applies the operator's overrides on top of the plan", async () => {
    given({ ...org(), plan: 'free', limits: { api_requests: 5_000, channels: 8, ai_credits: 20 } });
    const usage = await getUsage(ORG_ID, admitted(1), NOW);
    expect(usage.meters.map((m) => [m.key, m.limit])).toEqual([
      ['api_requests', 5_000],
      ['posts_per_month', 30],
      ['channels', 8],
      ['ai_credits', 20],
    ]);
  });

  it('reads zero for a month with nothing counted and an org with no channels', async () => {
    serveItems(ddb, [orgItem(org())]);
    const usage = await getUsage(ORG_ID, admitted(1), NOW);
    expect(usage.meters.map((m) => [m.key, m.used])).toEqual([
      ['api_requests', 1],
      ['posts_per_month', 0],
      ['channels', 0],
      ['ai_credits', 0],
    ]);
  });

  it('never answers a negative remaining (e.g. after a downgrade)', async () => {
    given({ ...org(), plan: 'free', channel_count: 9 }, { posts_per_month: 31, ai_credits: 3 });
    const usage = await getUsage(ORG_ID, admitted(1), NOW);
    expect(usage.meters.map((m) => m.remaining)).toEqual([999, 0, 0, 0]);
  });

  it("reads the org and this month's meters in one BatchGetItem", async () => {
    given(org());
    await getUsage(ORG_ID, admitted(1), NOW);
    const calls = ddb.commandCalls(BatchGetCommand);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.args[0].input.RequestItems?.[TABLE]?.Keys).toEqual([
      { pk: `ORG#${ORG_ID}`, sk: 'ORG' },
      USAGE_ITEM,
    ]);
  });

  it('answers the refusal of the admission', async () => {
    given(org());
    const refusal = new ApiError('quota_exhausted', 'spent');
    const err = await rejectedApiError(
      getUsage(ORG_ID, async () => ({ allowed: false, headers: {}, error: refusal }), NOW),
    );
    expect(err).toBe(refusal);
  });

  it('answers invalid_api_key when the organization is gone', async () => {
    serveItems(ddb, []);
    expect((await rejectedApiError(getUsage(ORG_ID, admitted(1), NOW))).code).toBe('invalid_api_key');
  });
});

describe('getUsage handler', () => {
  const KEY = apiKey({ scopes: ['analytics:read'] });
  const send = (key = KEY) =>
    handler(apiEvent('getUsage', { headers: bearer(key) }), lambdaContext('getUsage'));

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
    clearAuthCache();
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('includes the getUsage call itself in api_requests', async () => {
    // Arrange: 9 requests counted this month before this one.
    serveItems(ddb, [
      apiKeyItem(KEY),
      orgItem({ ...org(), channel_count: 2 }),
      { ...USAGE_ITEM, api_requests: 9, posts_per_month: 3, ai_credits: 5 },
    ]);
    serveCounters(ddb, { api_requests: 9 });

    // Act
    const res = await send();

    // Assert
    expect(res.statusCode).toBe(200);
    const body = jsonOf<ReturnType<typeof Usage.parse>>(res);
    expect(Usage.safeParse(body).success).toBe(true);
    expect(body.plan).toBe('team');
    expect(body.meters.map((m) => [m.key, m.used, m.limit])).toEqual([
      ['api_requests', 10, 50_000],
      ['posts_per_month', 3, 1_500],
      ['channels', 2, 25],
      ['ai_credits', 5, 1_000],
    ]);
    expect(res.headers.ratelimit).toBeDefined();
  });

  it('needs the analytics:read scope', async () => {
    const other = apiKey({ scopes: ['posts:read'], n: 2 });
    serveItems(ddb, [apiKeyItem(other), orgItem(org())]);
    serveCounters(ddb);
    const res = await send(other);
    expect(res.statusCode).toBe(403);
    expect(problemOf(res).code).toBe('insufficient_scope');
  });

  it('answers 429 quota_exhausted once the month is spent, like every call', async () => {
    serveItems(ddb, [apiKeyItem(KEY), orgItem(org())]);
    serveCounters(ddb, { api_requests: 50_000 });
    const res = await send();
    expect(res.statusCode).toBe(429);
    expect(problemOf(res).code).toBe('quota_exhausted');
    expect(res.headers['retry-after']).toBe('3600');
  });
});
