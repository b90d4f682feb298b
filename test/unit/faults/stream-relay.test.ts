import { describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import type { DeliveryMessage, HeraldEvent } from '#core/messages';
import type { PostResource } from '#core/posts';
import { handler as createPost } from '#handlers/create-post';
import { handler as worker } from '#handlers/delivery-worker';
import { handler as relay } from '#handlers/stream-relay';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  jsonHeaders,
  jsonOf,
  lambdaContext,
  ORG_ID,
  org,
  orgItem,
} from '../support/fixtures.ts';
import type { RequestView } from './support/dynamo.ts';
import {
  connected,
  credentialsFor,
  DELIVERY_QUEUE,
  drain,
  EVENTS_QUEUE,
  platformPosts,
  pumpStream,
  storedPost,
  useWorld,
} from './support/world.ts';

// Fault injection on the table-stream relay, end to end: createPost (publish now) writes the post;
// its stream record goes through the real relay — delivery messages onto the queue, events onto
// the event stream, analytics counters in one UpdateItem per counter item guarded by the shard's
// mark — and the queue through the real worker to the Bluesky and Mastodon fakes. A relay failure
// is reported for the record, Lambda retries from it, and the retry repeats its messages: they
// must be harmless, and the counters must count each record once.

const world = useWorld();
const { table, sqs } = world;
const KEY = apiKey({ scopes: ['posts:write'] });

async function publishNow(text: string) {
  const bsky = connected(1, 'bluesky', credentialsFor(world.fakes, 'bluesky'));
  const masto = connected(2, 'mastodon', credentialsFor(world.fakes, 'mastodon'));
  table.seed(apiKeyItem(KEY), orgItem(org({ dangerous_ops: true })), ...bsky.items, ...masto.items);
  const res = await createPost(
    apiEvent('createPost', {
      body: JSON.stringify({
        variants: [
          { channel_id: bsky.channel.id, body: text },
          { channel_id: masto.channel.id, body: text },
        ],
        publish_now: true,
      }),
      headers: jsonHeaders(KEY),
    }),
    lambdaContext('createPost'),
  );
  expect(res.statusCode).toBe(201);
  return jsonOf<PostResource>(res).id;
}

/**
 * Faulted sends to refuse both delivery messages in every call of one invocation: each entry takes
 * one, and the queue adapter sends refused entries twice more (3 calls × 2 messages).
 */
const REFUSED_ALL_INVOCATION = 6;

/** The counters' write on the org's STATS item (the ordered path: one UpdateItem per item). */
const isStats = (v: RequestView) => v.op === 'UpdateItem' && v.keys.some((k) => k.sk === 'STATS');
/** A counters' transaction with a marker per change (a batch without its shard). */
const isMarked = (v: RequestView) => v.items.some((i) => String(i.sk).startsWith('STATSEEN#'));
const deliveryMessages = () => sqs.sentTo(DELIVERY_QUEUE).map((s) => s.body as DeliveryMessage);
const events = () => sqs.sentTo(EVENTS_QUEUE).map((s) => s.body as HeraldEvent);
const stats = () => table.get(keys.orgStats(ORG_ID));
const published = () => ({
  bluesky: platformPosts(world.fakes, 'bluesky').length,
  mastodon: platformPosts(world.fakes, 'mastodon').length,
});

/** The rest of the pipeline: the worker over the queue, then the relay over the worker's writes. */
async function settle(postId: string) {
  await drain(sqs, DELIVERY_QUEUE, worker);
  await pumpStream(table, relay);
  return storedPost(table, postId);
}

describe('the stream relay under DynamoDB and SQS faults', () => {
  it('stats write throttled twice: retried by the SDK inside one invocation, messages sent once', async () => {
    const postId = await publishNow('Relayed once');
    table.fail({ op: 'UpdateItem', kind: 'ThrottlingException', times: 2, match: isStats });

    const pumped = await pumpStream(table, relay);
    const post = await settle(postId);

    expect(pumped.stuck).toEqual([]);
    expect(
      table
        .callsOf('UpdateItem', (c) => isStats(c.view))
        .map((c) => c.outcome)
        .slice(0, 3),
    ).toEqual(['ThrottlingException', 'ThrottlingException', 'ok']);
    expect(deliveryMessages()).toHaveLength(2); // the record was not retried
    expect(published()).toEqual({ bluesky: 1, mastodon: 1 });
    expect(post.status).toBe('published');
    expect(stats()).toMatchObject({ deliveries_total: 2, deliveries_published: 2 });
  });

  it('stats write throttled on every SDK attempt: the record is retried, messages repeat, posts do not', async () => {
    // Arrange
    const postId = await publishNow('Relayed twice, published once');
    table.fail({
      op: 'UpdateItem',
      kind: 'ProvisionedThroughputExceededException',
      times: 3,
      match: isStats,
    });

    // Act
    const pumped = await pumpStream(table, relay);
    const post = await settle(postId);

    // Assert: the first invocation enqueued the deliveries, then failed on the counters; the retry
    // enqueued them again. Each channel's delivery was still sent once, and counted once.
    expect(pumped.stuck).toEqual([]);
    expect(
      deliveryMessages()
        .map((m) => m.channel_id)
        .sort(),
    ).toEqual([...post.variants.map((v) => v.channel_id), ...post.variants.map((v) => v.channel_id)].sort());
    expect(published()).toEqual({ bluesky: 1, mastodon: 1 });
    expect(post.status).toBe('published');
    expect(stats()).toMatchObject({ deliveries_total: 2, deliveries_published: 2 });
    expect(events().map((e) => e.type)).toEqual(['post.published']);
  });

  it('a reset after the stats write applied: the SDK retry meets its own mark, counted once', async () => {
    const postId = await publishNow('Counted once');
    table.fail({ op: 'UpdateItem', kind: 'ECONNRESET', when: 'after', match: isStats });

    await pumpStream(table, relay);
    await settle(postId);

    const statsCalls = table.callsOf('UpdateItem', (c) => isStats(c.view));
    expect(statsCalls[0]).toMatchObject({ outcome: 'ECONNRESET', applied: true });
    expect(statsCalls[1]).toMatchObject({ outcome: 'ConditionalCheckFailed', attempt: 2 });
    expect(deliveryMessages()).toHaveLength(2);
    expect(stats()).toMatchObject({ deliveries_total: 2, deliveries_published: 2 });
  });

  it('SQS refuses the delivery messages: the record is retried, the counters are not counted twice', async () => {
    // Arrange: the batch of delivery messages comes back as failed entries for the whole invocation
    // (the queue adapter sends refused entries again, twice).
    const postId = await publishNow('Queued on the second try');
    sqs.failSends(
      'failed-entries',
      REFUSED_ALL_INVOCATION,
      (body) => (body as DeliveryMessage).channel_id !== undefined,
    );

    // Act
    const pumped = await pumpStream(table, relay);
    const post = await settle(postId);

    // Assert: the retry's counter write met the shard's mark (ConditionalCheckFailed) and added nothing.
    expect(pumped.invocations).toBeGreaterThanOrEqual(2);
    expect(table.callsOf('UpdateItem', (c) => isStats(c.view)).map((c) => c.outcome)).toContain(
      'ConditionalCheckFailed',
    );
    expect(deliveryMessages()).toHaveLength(2);
    expect(published()).toEqual({ bluesky: 1, mastodon: 1 });
    expect(post.status).toBe('published');
    expect(stats()).toMatchObject({ deliveries_total: 2, deliveries_published: 2 });
  });

  it('a batch without its shard is counted change by change with markers, also once', async () => {
    // Arrange: a mapping without a tumbling window names no shard; SQS refuses once, so the record
    // comes again.
    const postId = await publishNow('Counted by marker');
    sqs.failSends(
      'failed-entries',
      REFUSED_ALL_INVOCATION,
      (body) => (body as DeliveryMessage).channel_id !== undefined,
    );

    // Act
    const pumped = await pumpStream(table, relay, { shardId: null });
    await drain(sqs, DELIVERY_QUEUE, worker);
    await pumpStream(table, relay, { shardId: null });

    // Assert
    expect(pumped.invocations).toBeGreaterThanOrEqual(2);
    expect(table.callsOf('TransactWriteItems', (c) => isMarked(c.view)).map((c) => c.outcome)).toContain(
      'TransactionCanceled',
    );
    expect((await storedPost(table, postId)).status).toBe('published');
    expect(stats()).toMatchObject({ deliveries_total: 2, deliveries_published: 2 });
  });

  it('the events queue refuses post.published: the stream retries it, the event arrives once with its id', async () => {
    const postId = await publishNow('An event that arrives');
    await pumpStream(table, relay);
    await drain(sqs, DELIVERY_QUEUE, worker);
    sqs.failSends('reject', 1, (body) => (body as HeraldEvent).type === 'post.published');

    const pumped = await pumpStream(table, relay);

    expect(pumped.stuck).toEqual([]);
    expect(pumped.invocations).toBeGreaterThanOrEqual(2);
    const sent = events().filter((e) => e.type === 'post.published');
    expect(sent).toHaveLength(1);
    expect(sent[0]?.data).toMatchObject({ post: { id: postId, status: 'published' } });
    expect(stats()).toMatchObject({ deliveries_published: 2 });
  });
});
