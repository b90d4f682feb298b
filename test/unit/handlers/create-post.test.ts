import {
  type AttributeValue,
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
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { clearIdempotencySwitch } from '#adapters/idempotency';
import { keys } from '#adapters/keys';
import type { PostResource } from '#core/posts';
import { handler } from '#handlers/create-post';
import { MCP_MARK } from '#shared/envelope';
import { clearAuthCache } from '#usecases/support/authenticate';
import { condition, type Item, update } from '../support/expressions.ts';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  channel,
  channelItem,
  daysFromNow,
  jsonHeaders,
  jsonOf,
  lambdaContext,
  ORG_ID,
  OTHER_ORG_ID,
  org,
  orgItem,
  problemOf,
  serveCounters,
  serveItems,
} from '../support/fixtures.ts';

// createPost's Idempotency-Key (docs/api/idempotency.md) on Powertools idempotency, which talks to the low-level
// DynamoDBClient. The fake below keeps its records like the table would, so replays are real.

const ddb = mockClient(DynamoDBDocumentClient);
const dynamo = mockClient(DynamoDBClient);

const KEY = apiKey({ scopes: ['posts:write'], n: 1 });
const OTHER_ORG_KEY = apiKey({ scopes: ['posts:write'], n: 2, orgId: OTHER_ORG_ID });
const CH1 = channel(1);
const OTHER_CH = channel(1, 'bluesky', OTHER_ORG_ID);

/**
 * Powertools' idempotency records, held as DynamoDB would (conditions and updates evaluated);
 * `complete: false` leaves them in progress. The deployment switched to per-organization records
 * long ago unless `switchedAt` says otherwise.
 */
function fakeIdempotencyStore(opts: { complete: boolean; switchedAt?: number }) {
  const records = new Map<string, Item>();
  const id = (k: Item) => `${String(k.pk)}\u0000${String(k.sk)}`;
  const values = (v: Record<string, AttributeValue> | undefined) => (v ? unmarshall(v) : undefined);
  const since = opts.switchedAt ?? Date.now() - 30 * 86_400_000;
  records.set(id(keys.idempotencySwitch()), { ...keys.idempotencySwitch(), since });
  dynamo.on(GetItemCommand).callsFake((input: GetItemCommandInput) => {
    const found = records.get(id(unmarshall(input.Key ?? {})));
    return found ? { Item: marshall(found) } : {};
  });
  dynamo.on(PutItemCommand).callsFake((input: PutItemCommandInput) => {
    const item = unmarshall(input.Item ?? {});
    const existing = records.get(id(item));
    const holds = condition(
      input.ConditionExpression ?? '',
      input.ExpressionAttributeNames,
      values(input.ExpressionAttributeValues),
    );
    if (existing && input.ConditionExpression && !holds(existing))
      throw new ConditionalCheckFailedException({
        message: 'exists',
        $metadata: {},
        Item: marshall(existing),
      });
    records.set(id(item), item);
    return {};
  });
  dynamo.on(UpdateItemCommand).callsFake((input: UpdateItemCommandInput) => {
    if (!opts.complete) return {};
    const key = unmarshall(input.Key ?? {});
    const { next } = update(
      records.get(id(key)) ?? key,
      input.UpdateExpression ?? '',
      input.ExpressionAttributeNames,
      values(input.ExpressionAttributeValues),
    );
    records.set(id(key), next);
    return {};
  });
  dynamo.on(DeleteItemCommand).callsFake((input: DeleteItemCommandInput) => {
    records.delete(id(unmarshall(input.Key ?? {})));
    return {};
  });
  return records;
}

/** The idempotency records (not the switch item) by partition key. */
const partitions = (records: Map<string, Item>) =>
  [...records.values()].filter((r) => r.sk !== keys.idempotencySwitch().sk).map((r) => r.pk);

const body = (text = 'Hello') =>
  JSON.stringify({ variants: [{ channel_id: CH1.id, body: text }], scheduled_at: SCHEDULED_AT });
const SCHEDULED_AT = daysFromNow(3);

const send = (json: string, idempotencyKey?: string, key = KEY) =>
  handler(
    apiEvent('createPost', {
      body: json,
      headers: {
        ...jsonHeaders(key),
        ...(idempotencyKey !== undefined ? { 'idempotency-key': idempotencyKey } : {}),
      },
    }),
    lambdaContext('createPost'),
  );

beforeEach(() => {
  ddb.reset();
  dynamo.reset();
  clearAuthCache();
  clearIdempotencySwitch();
  serveItems(ddb, [
    apiKeyItem(KEY),
    apiKeyItem(OTHER_ORG_KEY),
    orgItem(org()),
    orgItem(org({}, OTHER_ORG_ID)),
    channelItem(CH1),
    channelItem(OTHER_CH),
  ]);
  serveCounters(ddb);
  ddb.on(PutCommand).resolves({});
});

/** Posts written: a draft is a PutItem, a scheduled post a transaction that also counts it. */
const postWrites = () => ddb.commandCalls(PutCommand).length;

describe('createPost handler', () => {
  it('answers 201 with the post and touches no idempotency record without the header', async () => {
    // Act
    const res = await send(body());

    // Assert
    expect(res.statusCode).toBe(201);
    expect(jsonOf<PostResource>(res)).toMatchObject({
      status: 'scheduled',
      variants: [{ channel_id: CH1.id }],
    });
    expect(res.headers['idempotency-replayed']).toBeUndefined();
    expect(dynamo.calls()).toHaveLength(0);
  });

  it('keeps on the post which key created it and through which door, never in the answer', async () => {
    const viaMcp = apiEvent('createPost', { body: body(), headers: jsonHeaders(KEY) });
    // The MCP server's mark (in the request context, which no outside request can set).
    Object.assign(viaMcp.requestContext, { authorizer: MCP_MARK });

    const direct = await send(body());
    const tool = await handler(viaMcp, lambdaContext('createPost'));

    const written = ddb
      .commandCalls(PutCommand)
      .map((c) => (c.args[0].input.Item ?? {}) as Record<string, unknown>);
    expect(written.map((i) => i.created_by)).toEqual([
      { key_id: KEY.record.id, via: 'api' },
      { key_id: KEY.record.id, via: 'mcp' },
    ]);
    for (const res of [direct, tool])
      expect(jsonOf<Record<string, unknown>>(res)).not.toHaveProperty('created_by');
  });

  it('replays the recorded response for the same key and body, creating the post once', async () => {
    // Arrange
    fakeIdempotencyStore({ complete: true });

    // Act
    const first = await send(body(), 'order-42');
    const again = await send(body(), 'order-42');

    // Assert
    expect([first.statusCode, again.statusCode]).toEqual([201, 201]);
    expect(again.body).toBe(first.body);
    expect(again.headers['idempotency-replayed']).toBe('true');
    expect(first.headers['idempotency-replayed']).toBeUndefined();
    expect(postWrites()).toBe(1);
  });

  it('treats the same body with its fields in another order as the same request', async () => {
    fakeIdempotencyStore({ complete: true });
    await send(body(), 'order-43');
    const reordered = JSON.stringify({
      scheduled_at: SCHEDULED_AT,
      variants: [{ body: 'Hello', channel_id: CH1.id }],
    });
    const again = await send(reordered, 'order-43');
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotency-replayed']).toBe('true');
  });

  it("stores idempotency records in the organization's own partition, ORG#<org>#IDEMPOTENCY", async () => {
    const records = fakeIdempotencyStore({ complete: true });
    await send(body(), 'order-44');
    expect(partitions(records)).toEqual([`ORG#${ORG_ID}#IDEMPOTENCY`]);
    expect([...records.values()].find((r) => r.pk === `ORG#${ORG_ID}#IDEMPOTENCY`)).toMatchObject({
      sk: expect.stringMatching(/^createPost#/),
      status: 'COMPLETED',
    });
  });

  it('answers 422 idempotency_key_reused for the same key with another body', async () => {
    // Arrange
    fakeIdempotencyStore({ complete: true });
    await send(body('first'), 'order-45');

    // Act
    const res = await send(body('second'), 'order-45');

    // Assert
    expect(res.statusCode).toBe(422);
    expect(problemOf(res).code).toBe('idempotency_key_reused');
    expect(postWrites()).toBe(1);
  });

  it('answers 409 idempotency_in_progress while the first attempt still runs', async () => {
    // Arrange: the first attempt's record is still INPROGRESS.
    fakeIdempotencyStore({ complete: false });
    await send(body(), 'order-46');

    // Act
    const res = await send(body(), 'order-46');

    // Assert
    expect(res.statusCode).toBe(409);
    expect(problemOf(res).code).toBe('idempotency_in_progress');
  });

  it('scopes keys per organization: the same key in another org is a new request', async () => {
    // Arrange
    const records = fakeIdempotencyStore({ complete: true });
    const otherBody = JSON.stringify({ variants: [{ channel_id: OTHER_CH.id, body: 'Hello' }], draft: true });

    // Act
    const mine = await send(body(), 'shared-key');
    const theirs = await send(otherBody, 'shared-key', OTHER_ORG_KEY);

    // Assert
    expect([mine.statusCode, theirs.statusCode]).toEqual([201, 201]);
    expect(theirs.headers['idempotency-replayed']).toBeUndefined();
    expect(partitions(records).sort()).toEqual(
      [`ORG#${ORG_ID}#IDEMPOTENCY`, `ORG#${OTHER_ORG_ID}#IDEMPOTENCY`].sort(),
    );
    expect(postWrites()).toBe(2);
  });

  it.each([
    ['an empty key', ''],
    ['a non-ASCII key', 'clé'],
    ['a key with a control character', 'a\tb'],
    ['a key over 255 characters', 'k'.repeat(256)],
  ])('answers 400 invalid_request for %s', async (_what, key) => {
    const res = await send(body(), key);
    expect(res.statusCode).toBe(400);
    expect(problemOf(res).code).toBe('invalid_request');
    expect(dynamo.calls()).toHaveLength(0);
  });
});
