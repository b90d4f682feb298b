import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { consumeRequest, countPostItem, getOrgUsage } from '#adapters/limits';
import { fixedId, ORG_ID, org, orgItem, serveItems, TABLE } from '../support/fixtures.ts';

// The counters behind the burst limit and the monthly api_requests meter (adapters/limits.ts).

const ddb = mockClient(DynamoDBDocumentClient);

const KEY_ID = fixedId('key', 1);
const WINDOW_ID = 31_600_000;
const ARGS = {
  keyId: KEY_ID,
  orgId: ORG_ID,
  windowId: WINDOW_ID,
  windowEndsAt: (WINDOW_ID + 1) * 60,
  burstLimit: 120,
  period: '2030-06',
  monthlyLimit: 50_000,
};
const BURST_KEY = { pk: `RATE#${KEY_ID}`, sk: `MIN#${WINDOW_ID}` };
const USAGE_KEY = { pk: `ORG#${ORG_ID}`, sk: 'USAGE#2030-06' };

const refused = () =>
  new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });

const updates = () => ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);
const isBurst = (input: UpdateCommandInput) => String(input.Key?.pk).startsWith('RATE#');

/** Answers the burst window and the usage counter separately. */
function answer(burst: () => unknown, usage: () => unknown, compensation: () => unknown = () => ({})) {
  ddb.on(UpdateCommand).callsFake(async (input: UpdateCommandInput) => {
    if (isBurst(input)) return burst();
    if (input.ExpressionAttributeValues?.[':minus'] !== undefined) return compensation();
    return usage();
  });
}

beforeEach(() => {
  ddb.reset();
});

describe('consumeRequest', () => {
  it('counts the request in the key window and the org month, and answers both counts', async () => {
    // Arrange
    answer(
      () => ({ Attributes: { count: 3 } }),
      () => ({ Attributes: { api_requests: 42 } }),
    );

    // Act
    const res = await consumeRequest(ARGS);

    // Assert
    expect(res).toEqual({ burstCount: 3, apiRequests: 42 });
    expect(updates()).toHaveLength(2);
  });

  it('sends the burst counter: ADD 1 below the limit, TTL two minutes past the window end', async () => {
    answer(
      () => ({ Attributes: { count: 1 } }),
      () => ({ Attributes: { api_requests: 1 } }),
    );
    await consumeRequest(ARGS);
    expect(updates().find(isBurst)).toEqual({
      TableName: TABLE,
      Key: BURST_KEY,
      UpdateExpression: 'ADD #n :one SET #ttl = :ttl',
      ConditionExpression: 'attribute_not_exists(#n) OR #n < :limit',
      ExpressionAttributeNames: { '#n': 'count', '#ttl': 'ttl' },
      ExpressionAttributeValues: { ':one': 1, ':limit': 120, ':ttl': ARGS.windowEndsAt + 120 },
      ReturnValues: 'UPDATED_NEW',
    });
  });

  it('sends the api_requests counter of the month: ADD 1 below the monthly limit, no TTL', async () => {
    answer(
      () => ({ Attributes: { count: 1 } }),
      () => ({ Attributes: { api_requests: 1 } }),
    );
    await consumeRequest(ARGS);
    expect(updates().find((u) => !isBurst(u))).toEqual({
      TableName: TABLE,
      Key: USAGE_KEY,
      UpdateExpression: 'ADD api_requests :one',
      ConditionExpression: 'attribute_not_exists(api_requests) OR api_requests < :limit',
      ExpressionAttributeValues: { ':one': 1, ':limit': 50_000 },
      ReturnValues: 'UPDATED_NEW',
    });
  });

  it('sends both counters at once (one round trip), not one after the other', async () => {
    // Arrange: the burst counter answers only once the usage counter was sent as well.
    let usageSent: () => void = () => undefined;
    const bothSent = new Promise<void>((resolve) => {
      usageSent = resolve;
    });
    answer(
      async () => {
        await Promise.race([
          bothSent,
          new Promise((_, reject) => setTimeout(() => reject(new Error('sent one after the other')), 500)),
        ]);
        return { Attributes: { count: 1 } };
      },
      () => {
        usageSent();
        return { Attributes: { api_requests: 1 } };
      },
    );

    // Act + Assert
    await expect(consumeRequest(ARGS)).resolves.toEqual({ burstCount: 1, apiRequests: 1 });
  });

  it('takes a request the burst refused back out of api_requests (ADD -1), counting neither', async () => {
    // Arrange
    answer(
      () => Promise.reject(refused()),
      () => ({ Attributes: { api_requests: 42 } }),
    );

    // Act
    const res = await consumeRequest(ARGS);

    // Assert
    expect(res).toEqual({ burstCount: null, apiRequests: null });
    const all = updates();
    expect(all).toHaveLength(3);
    expect(all[2]).toEqual({
      TableName: TABLE,
      Key: USAGE_KEY,
      UpdateExpression: 'ADD api_requests :minus',
      ExpressionAttributeValues: { ':minus': -1 },
    });
  });

  it('leaves the burst count alone when the month refused the request', async () => {
    // Arrange
    answer(
      () => ({ Attributes: { count: 5 } }),
      () => Promise.reject(refused()),
    );

    // Act
    const res = await consumeRequest(ARGS);

    // Assert
    expect(res).toEqual({ burstCount: 5, apiRequests: null });
    expect(updates()).toHaveLength(2);
  });

  it('compensates nothing when both refused', async () => {
    answer(
      () => Promise.reject(refused()),
      () => Promise.reject(refused()),
    );
    expect(await consumeRequest(ARGS)).toEqual({ burstCount: null, apiRequests: null });
    expect(updates()).toHaveLength(2);
  });

  it.each([
    [
      'the burst counter',
      () => Promise.reject(new Error('ProvisionedThroughputExceeded')),
      () => ({ Attributes: { api_requests: 1 } }),
    ],
    [
      'the usage counter',
      () => ({ Attributes: { count: 1 } }),
      () => Promise.reject(new Error('ProvisionedThroughputExceeded')),
    ],
  ])('rethrows any other DynamoDB failure of %s', async (_which, burst, usage) => {
    answer(burst, usage);
    await expect(consumeRequest(ARGS)).rejects.toThrow('ProvisionedThroughputExceeded');
    expect(updates()).toHaveLength(2);
  });

  it('rethrows a failure of the compensation', async () => {
    answer(
      () => Promise.reject(refused()),
      () => ({ Attributes: { api_requests: 1 } }),
      () => Promise.reject(new Error('InternalServerError')),
    );
    await expect(consumeRequest(ARGS)).rejects.toThrow('InternalServerError');
  });
});

describe('getOrgUsage', () => {
  it("reads the org and the month's meters in one BatchGetItem", async () => {
    // Arrange
    serveItems(ddb, [
      orgItem({ ...org(), channel_count: 4 }),
      { ...USAGE_KEY, api_requests: 12, posts_per_month: 3 },
    ]);

    // Act
    const res = await getOrgUsage(ORG_ID, '2030-06');

    // Assert
    expect(res.org).toMatchObject({ id: ORG_ID, plan: 'team', channel_count: 4 });
    expect(res.counters).toEqual({ api_requests: 12, posts_per_month: 3 });
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
      counters: { api_requests: 0, posts_per_month: 0 },
    });
  });
});

describe('countPostItem', () => {
  it('adds 1 to posts_per_month of the period, refused at the limit', () => {
    expect(countPostItem(ORG_ID, '2030-06', 300)).toEqual({
      Update: {
        TableName: TABLE,
        Key: USAGE_KEY,
        UpdateExpression: 'ADD posts_per_month :one',
        ConditionExpression: 'attribute_not_exists(posts_per_month) OR posts_per_month < :limit',
        ExpressionAttributeValues: { ':one': 1, ':limit': 300 },
      },
    });
  });
});
