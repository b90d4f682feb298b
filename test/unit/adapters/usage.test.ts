import { BatchGetCommand, DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  admitRequest,
  clearGateGuesses,
  countPost,
  getOrgUsage,
  revokeAtGateItems,
  uncountPost,
} from '#adapters/usage';
import {
  counters,
  fixedId,
  type Item,
  ORG_ID,
  org,
  orgItem,
  serveItems,
  TABLE,
} from '../support/fixtures.ts';

// The request gate (adapters/usage.ts): one conditional UpdateItem per request on the org's month
// item, carrying every key's burst window, api_requests and revocations.

const ddb = mockClient(DynamoDBDocumentClient);

const KEY_ID = fixedId('key', 1);
const OTHER_KEY_ID = fixedId('key', 2);
const WINDOW_ID = 31_600_000;
const REQ = {
  keyId: KEY_ID,
  orgId: ORG_ID,
  windowId: WINDOW_ID,
  burstLimit: 120,
  period: '2030-06',
  monthlyLimit: 50_000,
};
const USAGE_KEY = { pk: `ORG#${ORG_ID}`, sk: 'USAGE#2030-06' };
const GATE = `ORG#${ORG_ID} USAGE#2030-06`;

const updates = () => ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);

/** The gate item holds `item` (counters and key windows); UpdateItem is evaluated against it. */
function gate(item: Item = {}) {
  const c = counters();
  if (Object.keys(item).length) c.items.set(GATE, { ...USAGE_KEY, ...item });
  ddb.on(UpdateCommand).callsFake(c.update);
  return c.items;
}

beforeEach(() => {
  ddb.reset();
  clearGateGuesses();
});

describe('admitRequest: one conditional UpdateItem on the gate item', () => {
  it("opens the key's window on a fresh month: one write, api_requests and the window both 1", async () => {
    // Arrange
    const items = gate();

    // Act
    const res = await admitRequest(REQ);

    // Assert
    expect(res).toEqual({ outcome: 'admitted', burstCount: 1, apiRequests: 1 });
    expect(updates()).toEqual([
      {
        TableName: TABLE,
        Key: USAGE_KEY,
        UpdateExpression: 'SET #k = :fresh ADD api_requests :n',
        ConditionExpression:
          '(attribute_not_exists(#k) OR #k.w < :w) AND attribute_not_exists(#k.r) AND (attribute_not_exists(api_requests) OR api_requests <= :monthRoom)',
        ExpressionAttributeNames: { '#k': KEY_ID },
        ExpressionAttributeValues: {
          ':n': 1,
          ':w': WINDOW_ID,
          ':monthRoom': 49_999,
          ':fresh': { w: WINDOW_ID, n: 1 },
        },
        ReturnValues: 'UPDATED_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    ]);
    expect(items.get(GATE)).toMatchObject({ api_requests: 1, [KEY_ID]: { w: WINDOW_ID, n: 1 } });
  });

  it('counts the next request of the same minute with the "same window" form: still one write', async () => {
    // Arrange
    const items = gate();
    await admitRequest(REQ);
    ddb.resetHistory();

    // Act
    const res = await admitRequest(REQ);

    // Assert
    expect(res).toEqual({ outcome: 'admitted', burstCount: 2, apiRequests: 2 });
    expect(updates()).toHaveLength(1);
    expect(updates()[0]).toMatchObject({
      UpdateExpression: 'ADD api_requests :n, #k.n :n',
      ConditionExpression:
        '#k.w = :w AND #k.n <= :burstRoom AND attribute_not_exists(#k.r) AND (attribute_not_exists(api_requests) OR api_requests <= :monthRoom)',
      ExpressionAttributeValues: { ':n': 1, ':w': WINDOW_ID, ':monthRoom': 49_999, ':burstRoom': 119 },
    });
    expect(items.get(GATE)).toMatchObject({ api_requests: 2, [KEY_ID]: { w: WINDOW_ID, n: 2 } });
  });

  it('resets the window in the next minute and keeps counting the month', async () => {
    const items = gate({ api_requests: 10, [KEY_ID]: { w: WINDOW_ID, n: 120 } });
    await admitRequest(REQ).catch(() => undefined);
    const res = await admitRequest({ ...REQ, windowId: WINDOW_ID + 1 });
    expect(res).toEqual({ outcome: 'admitted', burstCount: 1, apiRequests: 11 });
    expect(items.get(GATE)).toMatchObject({ [KEY_ID]: { w: WINDOW_ID + 1, n: 1 } });
  });

  it('keeps other keys apart: their windows and the month on the same item', async () => {
    const items = gate({ api_requests: 7, [OTHER_KEY_ID]: { w: WINDOW_ID, n: 119 } });
    await admitRequest(REQ);
    expect(items.get(GATE)).toMatchObject({
      api_requests: 8,
      [KEY_ID]: { w: WINDOW_ID, n: 1 },
      [OTHER_KEY_ID]: { w: WINDOW_ID, n: 119 },
    });
  });

  it('takes a second write when another container opened the window first, and counts there', async () => {
    // Arrange: this container has not seen the window; another one already counted 5 in it.
    const items = gate({ api_requests: 5, [KEY_ID]: { w: WINDOW_ID, n: 5 } });

    // Act
    const res = await admitRequest(REQ);

    // Assert
    expect(res).toEqual({ outcome: 'admitted', burstCount: 6, apiRequests: 6 });
    expect(updates().map((u) => u.UpdateExpression)).toEqual([
      'SET #k = :fresh ADD api_requests :n',
      'ADD api_requests :n, #k.n :n',
    ]);
    expect(items.get(GATE)).toMatchObject({ api_requests: 6, [KEY_ID]: { w: WINDOW_ID, n: 6 } });
  });

  it("counts in a later window a faster clock already opened (this container's clock is behind)", async () => {
    const items = gate({ api_requests: 3, [KEY_ID]: { w: WINDOW_ID + 1, n: 3 } });
    const res = await admitRequest(REQ);
    expect(res).toEqual({ outcome: 'admitted', burstCount: 4, apiRequests: 4 });
    expect(items.get(GATE)).toMatchObject({ [KEY_ID]: { w: WINDOW_ID + 1, n: 4 } });
  });

  it.each([
    ['a revoked key', { [KEY_ID]: { r: '2030-06-01T00:00:00.000Z' } }, { outcome: 'revoked' }],
    ['a spent burst', { api_requests: 5, [KEY_ID]: { w: WINDOW_ID, n: 120 } }, { outcome: 'burst' }],
    [
      'an exhausted month',
      { api_requests: 50_000, [KEY_ID]: { w: WINDOW_ID, n: 4 } },
      { outcome: 'quota', burstCount: 4 },
    ],
    [
      'an exhausted month, key new this minute',
      { api_requests: 50_000 },
      { outcome: 'quota', burstCount: 0 },
    ],
    [
      'a revoked key over both limits (revocation first)',
      { api_requests: 50_000, [KEY_ID]: { r: '2030-06-01T00:00:00.000Z' } },
      { outcome: 'revoked' },
    ],
    [
      'a spent burst in an exhausted month (burst first)',
      { api_requests: 50_000, [KEY_ID]: { w: WINDOW_ID, n: 120 } },
      { outcome: 'burst' },
    ],
  ])('refuses %s and writes nothing', async (_what, item, outcome) => {
    // Arrange
    const items = gate(item);
    const before = structuredClone(items.get(GATE));

    // Act
    const res = await admitRequest(REQ);

    // Assert
    expect(res).toEqual(outcome);
    expect(items.get(GATE)).toEqual(before);
    expect(updates().length).toBeLessThanOrEqual(2);
  });

  it('refuses a revoked key in the "same window" form too (a container that counted it before)', async () => {
    const items = gate();
    await admitRequest(REQ);
    items.set(GATE, { ...items.get(GATE), [KEY_ID]: { r: '2030-06-01T00:00:00.000Z' } });
    expect(await admitRequest(REQ)).toEqual({ outcome: 'revoked' });
  });

  it('admits exactly the burst of 60 concurrent requests (30 of them), writing only for those', async () => {
    // Arrange
    const items = gate();

    // Act
    const results = await Promise.all(
      Array.from({ length: 60 }, () => admitRequest({ ...REQ, burstLimit: 30 })),
    );

    // Assert
    expect(results.filter((r) => r.outcome === 'admitted')).toHaveLength(30);
    expect(results.filter((r) => r.outcome === 'burst')).toHaveLength(30);
    expect(items.get(GATE)).toMatchObject({ api_requests: 30, [KEY_ID]: { w: WINDOW_ID, n: 30 } });
  });

  it.each(['ThrottlingException', 'ProvisionedThroughputExceededException'])(
    'answers throttled (a 429, never a 500) when DynamoDB sheds load on the item: %s',
    async (name) => {
      ddb.on(UpdateCommand).rejects(Object.assign(new Error('slow down'), { name }));
      expect(await admitRequest(REQ)).toEqual({ outcome: 'throttled' });
    },
  );

  it('rethrows any other DynamoDB failure', async () => {
    ddb.on(UpdateCommand).rejects(Object.assign(new Error('boom'), { name: 'InternalServerError' }));
    await expect(admitRequest(REQ)).rejects.toThrow('boom');
  });
});

describe('admitRequest: group commit (concurrent admissions of one key share a write)', () => {
  it('writes the first of 16 concurrent requests alone and the 15 that waited for it as one write of 15', async () => {
    // Arrange
    const items = gate({ api_requests: 40, [KEY_ID]: { w: WINDOW_ID, n: 10 } });

    // Act
    const results = await Promise.all(Array.from({ length: 16 }, () => admitRequest(REQ)));

    // Assert: counts 11..26 handed out once each, in two writes (the first guessed the new form).
    expect(results.map((r) => (r.outcome === 'admitted' ? r.burstCount : 0))).toEqual(
      Array.from({ length: 16 }, (_, i) => 11 + i),
    );
    expect(results.map((r) => (r.outcome === 'admitted' ? r.apiRequests : 0))).toEqual(
      Array.from({ length: 16 }, (_, i) => 41 + i),
    );
    const writes = updates().filter((u) => u.UpdateExpression !== 'SET #k = :fresh ADD api_requests :n');
    expect(writes.map((u) => u.ExpressionAttributeValues?.[':n'])).toEqual([1, 15]);
    expect(writes[1]).toMatchObject({
      UpdateExpression: 'SET #k.t = :t ADD api_requests :n, #k.n :n',
      ConditionExpression:
        '#k.w = :w AND #k.n <= :burstRoom AND #k.t <> :t AND attribute_not_exists(#k.r) AND (attribute_not_exists(api_requests) OR api_requests <= :monthRoom)',
      ExpressionAttributeValues: {
        ':n': 15,
        ':burstRoom': 105,
        ':monthRoom': 49_985,
        ':t': expect.any(String),
      },
    });
    expect(items.get(GATE)).toMatchObject({ api_requests: 56, [KEY_ID]: { w: WINDOW_ID, n: 26 } });
  });

  it('admits exactly the room left near the burst: a batch with room for some is split, the rest refused', async () => {
    // Arrange: 4 left in the key's minute.
    const items = gate({ api_requests: 40, [KEY_ID]: { w: WINDOW_ID, n: 116 } });

    // Act
    const results = await Promise.all(Array.from({ length: 12 }, () => admitRequest(REQ)));

    // Assert
    expect(results.filter((r) => r.outcome === 'admitted')).toHaveLength(4);
    expect(results.filter((r) => r.outcome === 'burst')).toHaveLength(8);
    expect(items.get(GATE)).toMatchObject({ api_requests: 44, [KEY_ID]: { w: WINDOW_ID, n: 120 } });
  });

  it('admits exactly the room left in the month, the rest refused with quota', async () => {
    const items = gate({ api_requests: 49_997, [KEY_ID]: { w: WINDOW_ID, n: 3 } });
    const results = await Promise.all(Array.from({ length: 10 }, () => admitRequest(REQ)));
    expect(results.filter((r) => r.outcome === 'admitted')).toHaveLength(3);
    expect(results.filter((r) => r.outcome === 'quota')).toEqual(
      Array.from({ length: 7 }, () => ({ outcome: 'quota', burstCount: 6 })),
    );
    expect(items.get(GATE)).toMatchObject({ api_requests: 50_000, [KEY_ID]: { w: WINDOW_ID, n: 6 } });
  });

  it('never batches more than the burst limit: 70 at once with a burst of 30 admit 30', async () => {
    const items = gate();
    const results = await Promise.all(
      Array.from({ length: 70 }, () => admitRequest({ ...REQ, burstLimit: 30 })),
    );
    expect(results.filter((r) => r.outcome === 'admitted')).toHaveLength(30);
    expect(
      Math.max(...updates().map((u) => Number(u.ExpressionAttributeValues?.[':n']))),
    ).toBeLessThanOrEqual(30);
    expect(items.get(GATE)).toMatchObject({ api_requests: 30, [KEY_ID]: { w: WINDOW_ID, n: 30 } });
  });

  it('keeps keys, minutes and limits apart: each is a batch of its own', async () => {
    const items = gate();
    const results = await Promise.all([
      ...Array.from({ length: 5 }, () => admitRequest(REQ)),
      ...Array.from({ length: 5 }, () => admitRequest({ ...REQ, keyId: OTHER_KEY_ID })),
    ]);
    expect(results.every((r) => r.outcome === 'admitted')).toBe(true);
    expect(items.get(GATE)).toMatchObject({
      api_requests: 10,
      [KEY_ID]: { w: WINDOW_ID, n: 5 },
      [OTHER_KEY_ID]: { w: WINDOW_ID, n: 5 },
    });
  });

  it('fails every request of a batch whose write fails (no request is left waiting)', async () => {
    ddb.on(UpdateCommand).rejects(Object.assign(new Error('boom'), { name: 'InternalServerError' }));
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => admitRequest(REQ)));
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
  });
});

describe('revokeAtGateItems', () => {
  it("marks the key revoked in each month's gate item, replacing its window", () => {
    expect(revokeAtGateItems(ORG_ID, KEY_ID, ['2030-06', '2030-07'], '2030-06-30T23:59:59.000Z')).toEqual(
      ['2030-06', '2030-07'].map((period) => ({
        Update: {
          TableName: TABLE,
          Key: { pk: `ORG#${ORG_ID}`, sk: `USAGE#${period}` },
          UpdateExpression: 'SET #k = :revoked',
          ExpressionAttributeNames: { '#k': KEY_ID },
          ExpressionAttributeValues: { ':revoked': { r: '2030-06-30T23:59:59.000Z' } },
        },
      })),
    );
  });
});

describe('getOrgUsage', () => {
  it("reads the org and the month's meters in one BatchGetItem", async () => {
    // Arrange
    serveItems(ddb, [
      orgItem({ ...org(), channel_count: 4 }),
      { ...USAGE_KEY, api_requests: 12, posts_per_month: 3, ai_credits: 4 },
    ]);

    // Act
    const res = await getOrgUsage(ORG_ID, '2030-06');

    // Assert
    expect(res.org).toMatchObject({ id: ORG_ID, plan: 'team', channel_count: 4 });
    expect(res.counters).toEqual({ api_requests: 12, posts_per_month: 3, ai_credits: 4 });
    const calls = ddb.commandCalls(BatchGetCommand);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.args[0].input.RequestItems?.[TABLE]).toMatchObject({
      Keys: [{ pk: `ORG#${ORG_ID}`, sk: 'ORG' }, USAGE_KEY],
      ConsistentRead: true,
    });
  });

  it('reads zero for a month nothing was counted in, and null for a missing org', async () => {
    serveItems(ddb, []);
    expect(await getOrgUsage(ORG_ID, '2030-06')).toEqual({
      org: null,
      counters: { api_requests: 0, posts_per_month: 0, ai_credits: 0 },
    });
  });
});

describe('admitRequest with a post to count: the same one write', () => {
  const POSTS = { ...REQ, posts: { limit: 3 } };

  it('counts the post with the request in both forms of the write', async () => {
    // Arrange
    const items = gate({ api_requests: 4, posts_per_month: 1 });

    // Act: a new window, then the same window.
    const first = await admitRequest(POSTS);
    const second = await admitRequest(POSTS);

    // Assert
    expect([first, second]).toEqual([
      { outcome: 'admitted', burstCount: 1, apiRequests: 5 },
      { outcome: 'admitted', burstCount: 2, apiRequests: 6 },
    ]);
    expect(updates().map((u) => [u.UpdateExpression, u.ExpressionAttributeValues?.[':posts']])).toEqual([
      ['SET #k = :fresh ADD api_requests :n, posts_per_month :one', 3],
      ['ADD api_requests :n, #k.n :n, posts_per_month :one', 3],
    ]);
    expect(
      updates().every((u) =>
        u.ConditionExpression?.endsWith(
          ' AND (attribute_not_exists(posts_per_month) OR posts_per_month < :posts)',
        ),
      ),
    ).toBe(true);
    expect(items.get(GATE)).toMatchObject({ api_requests: 6, posts_per_month: 3 });
  });

  it('refuses with `posts` at the allowance and writes nothing: neither the request nor the post', async () => {
    // Arrange
    const items = gate({ api_requests: 4, posts_per_month: 3, [KEY_ID]: { w: WINDOW_ID, n: 7 } });

    // Act
    const res = await admitRequest(POSTS);

    // Assert
    expect(res).toEqual({ outcome: 'posts', burstCount: 7 });
    expect(items.get(GATE)).toMatchObject({ api_requests: 4, posts_per_month: 3, [KEY_ID]: { n: 7 } });
  });

  it('answers the burst and the month before the posts allowance', async () => {
    gate({ api_requests: 4, posts_per_month: 3, [KEY_ID]: { w: WINDOW_ID, n: 120 } });
    expect(await admitRequest(POSTS)).toEqual({ outcome: 'burst' });
    gate({ api_requests: 50_000, posts_per_month: 3 });
    expect(await admitRequest(POSTS)).toMatchObject({ outcome: 'quota' });
  });

  it('without a post to count, a spent posts allowance does not refuse the request', async () => {
    gate({ api_requests: 4, posts_per_month: 3 });
    expect(await admitRequest(REQ)).toMatchObject({ outcome: 'admitted', apiRequests: 5 });
  });
});

describe('countPost and uncountPost', () => {
  it('counts one post in the period, refused (false, nothing written) at the limit', async () => {
    // Arrange
    const items = gate({ posts_per_month: 1 });

    // Act
    const counted = [await countPost(ORG_ID, '2030-06', 2), await countPost(ORG_ID, '2030-06', 2)];

    // Assert
    expect(counted).toEqual([true, false]);
    expect(items.get(GATE)?.posts_per_month).toBe(2);
    expect(updates()[0]).toMatchObject({
      Key: USAGE_KEY,
      UpdateExpression: 'ADD posts_per_month :one',
      ConditionExpression: '(attribute_not_exists(posts_per_month) OR posts_per_month < :limit)',
    });
  });

  it('gives one back, never below zero', async () => {
    const items = gate({ posts_per_month: 1 });
    await uncountPost(ORG_ID, '2030-06');
    await uncountPost(ORG_ID, '2030-06');
    expect(items.get(GATE)?.posts_per_month).toBe(0);
  });
});
