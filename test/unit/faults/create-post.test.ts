import { beforeEach, describe, expect, it } from 'vitest';
import { clearIdempotencySwitch, LEGACY_MS } from '#adapters/idempotency';
import { keys } from '#adapters/keys';
import type { PostRecord, PostResource } from '#core/posts';
import { handler } from '#handlers/create-post';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  type Item,
  jsonHeaders,
  jsonOf,
  lambdaContext,
  ORG_ID,
  org,
  orgItem,
  problemOf,
} from '../support/fixtures.ts';
import type { Call } from './support/dynamo.ts';
import { advance, connected, credentialsFor, T0, useWorld } from './support/world.ts';

// Fault injection on createPost: DynamoDB throttling, 500s and reset connections on its reads and
// on the write that creates the post (counted just before it), through the real handler,
// Powertools idempotency and the SDK's retries. Either the SDK retries it away (201, one post,
// counted once) or the client gets a 5xx with nothing written, and its retry with the same
// Idempotency-Key creates exactly one.

const world = useWorld();
const { table } = world;
const KEY = apiKey({ scopes: ['posts:write'] });

// Long after the switch to per-organization records (the way over: test/unit/adapters/idempotency.test.ts).
beforeEach(() => clearIdempotencySwitch());

function given() {
  const bsky = connected(1, 'bluesky', credentialsFor(world.fakes, 'bluesky'));
  table.seed(apiKeyItem(KEY), orgItem(org({ dangerous_ops: true })), ...bsky.items, {
    ...keys.idempotencySwitch(),
    since: Date.now() - LEGACY_MS,
  });
  return bsky.channel.id;
}

const send = (body: Record<string, unknown>, idempotencyKey?: string) =>
  handler(
    apiEvent('createPost', {
      body: JSON.stringify(body),
      headers: { ...jsonHeaders(KEY), ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) },
    }),
    lambdaContext('createPost'),
  );

const publishNow = (channelId: string, text = 'Published despite DynamoDB') => ({
  variants: [{ channel_id: channelId, body: text }],
  publish_now: true,
});
const draft = (channelId: string) => ({
  variants: [{ channel_id: channelId, body: 'A draft' }],
  draft: true,
});

const posts = () => table.all<PostRecord & Item>('POST#');
const postsCounted = () =>
  table.get(keys.usage(ORG_ID, T0.toISOString().slice(0, 7)))?.posts_per_month as number | undefined;
const IDEMPOTENCY_PK = keys.idempotency(ORG_ID).pk;
const idempotencyRecords = () => [...table.items.values()].filter((i) => i.pk === IDEMPOTENCY_PK);
const outcomes = (calls: Call[]) => calls.map((c) => `${c.attempt}:${c.outcome}`);
const isPost = (v: { items: Item[] }) => v.items[0]?.entity === 'post';

describe('createPost under DynamoDB faults', () => {
  it("the post's PutItem throttled twice: the SDK retries, 201, one post counted once", async () => {
    const ch = given();
    table.fail({ op: 'PutItem', kind: 'ProvisionedThroughputExceededException', times: 2, match: isPost });

    const res = await send(publishNow(ch));

    expect(res.statusCode).toBe(201);
    expect(outcomes(table.callsOf('PutItem', (c) => isPost(c.view)))).toEqual([
      '1:ProvisionedThroughputExceededException',
      '2:ProvisionedThroughputExceededException',
      '3:ok',
    ]);
    expect(posts()).toHaveLength(1);
    expect(posts()[0]).toMatchObject({ id: jsonOf<PostResource>(res).id, status: 'publishing' });
    expect(postsCounted()).toBe(1);
  });

  it('the reads throttled and failing (auth GetItem, context BatchGetItem): retried by the SDK, 201', async () => {
    const ch = given();
    table.fail({ op: 'GetItem', kind: 'ThrottlingException', times: 2 });
    table.fail({ op: 'BatchGetItem', kind: 'InternalServerError', times: 2 });

    const res = await send(publishNow(ch));

    expect(res.statusCode).toBe(201);
    expect(outcomes(table.callsOf('BatchGetItem'))).toEqual([
      '1:InternalServerError',
      '2:InternalServerError',
      '3:ok',
    ]);
    expect(posts()).toHaveLength(1);
  });

  it("the post's PutItem throttled on every SDK attempt: a 5xx problem, nothing written (the count given back); the keyed retry creates one", async () => {
    // Arrange
    const ch = given();
    table.fail({ op: 'PutItem', kind: 'ThrottlingException', times: 3, match: isPost });

    // Act 1
    const failed = await send(publishNow(ch), 'order-1');

    // Assert 1: problem+json without internals; no post, no count, the key released for a retry.
    expect(failed.statusCode).toBe(500);
    expect(failed.headers['content-type']).toBe('application/problem+json');
    expect(problemOf(failed)).toMatchObject({ code: 'internal_error', status: 500 });
    expect(failed.body).not.toMatch(/throttl|dynamo|PutItem/i);
    expect(posts()).toEqual([]);
    expect(postsCounted()).toBe(0);
    expect(idempotencyRecords()).toEqual([]);

    // Act 2: the client retries with the same key once DynamoDB recovered, then once more.
    const retried = await send(publishNow(ch), 'order-1');
    const replayed = await send(publishNow(ch), 'order-1');

    // Assert 2
    expect(retried.statusCode).toBe(201);
    expect(replayed.statusCode).toBe(201);
    expect(replayed.headers['idempotency-replayed']).toBe('true');
    expect(replayed.body).toBe(retried.body);
    expect(posts()).toHaveLength(1);
    expect(postsCounted()).toBe(1);
  });

  it("a reset after the post's PutItem applied: the SDK's retry finds the post its own, 201, applied once", async () => {
    const ch = given();
    table.fail({ op: 'PutItem', kind: 'ECONNRESET', when: 'after', match: isPost });

    const res = await send(publishNow(ch));

    const calls = table.callsOf('PutItem', (c) => isPost(c.view));
    expect(outcomes(calls)).toEqual(['1:ECONNRESET', '2:ConditionalCheckFailed']);
    expect(calls[0]?.applied).toBe(true);
    expect(res.statusCode).toBe(201);
    expect(posts()).toHaveLength(1);
    expect(postsCounted()).toBe(1);
  });

  it('the idempotency record write throttled twice: retried by the SDK, 201, one post', async () => {
    const ch = given();
    table.fail({
      op: 'PutItem',
      kind: 'ThrottlingException',
      times: 2,
      match: (v) => v.items[0]?.pk === IDEMPOTENCY_PK,
    });

    const res = await send(publishNow(ch), 'order-2');

    expect(res.statusCode).toBe(201);
    expect(posts()).toHaveLength(1);
    expect(idempotencyRecords()).toMatchObject([{ status: 'COMPLETED' }]);
  });

  it('the idempotency record applied but its answer lost: 409 in progress until the window passes, then one post', async () => {
    // Powertools' SDK retry meets its own INPROGRESS record and takes it for a concurrent request.
    // Safe (nothing created, nothing twice), if surprising for the first caller.
    const ch = given();
    table.fail({
      op: 'PutItem',
      kind: 'ECONNRESET',
      when: 'after',
      match: (v) => v.items[0]?.pk === IDEMPOTENCY_PK,
    });

    const first = await send(publishNow(ch), 'order-3');
    advance(5_000);
    const soon = await send(publishNow(ch), 'order-3');
    advance(10_000); // past the in-progress expiry (the Lambda's remaining time, 10 s here)
    const later = await send(publishNow(ch), 'order-3');

    expect([first.statusCode, soon.statusCode, later.statusCode]).toEqual([409, 409, 201]);
    expect(problemOf(first).code).toBe('idempotency_in_progress');
    expect(posts()).toHaveLength(1);
    expect(postsCounted()).toBe(1);
  });

  // Regression: a draft (or a post needing approval) is one conditional PutItem. When DynamoDB applied
  // it but the answer was lost, the SDK's retry fails `attribute_not_exists(pk)`: that is our own write,
  // not a 500 that releases the idempotency key and lets the client's retry create a second post.
  it('a draft whose write was applied but whose answer was lost: stored once, answered 201', async () => {
    const ch = given();
    table.fail({
      op: 'PutItem',
      kind: 'ECONNRESET',
      when: 'after',
      match: (v) => v.items[0]?.entity === 'post',
    });

    const first = await send(draft(ch), 'draft-1');
    if (first.statusCode !== 201) await send(draft(ch), 'draft-1'); // the client retries with its key

    expect(posts()).toHaveLength(1);
    expect(first.statusCode).toBe(201);
  });
});
