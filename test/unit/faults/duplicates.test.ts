import { describe, expect, it } from 'vitest';
import { handler as worker } from '#handlers/delivery-worker';
import { deliver } from '#usecases/delivery-worker';
import { lambdaContext } from '../support/fixtures.ts';
import { POST_WRITES } from './support/dynamo.ts';
import { invoke, visibilityMs } from './support/sqs.ts';
import {
  advance,
  CREATE_PATH,
  DELIVERY_QUEUE,
  drain,
  otherContainer,
  platformPosts,
  platformRequests,
  seedDelivery,
  T0,
  type TestedPlatform,
  useWorld,
  whenPlatformAnswers,
} from './support/world.ts';

// Fault injection, part 2: SQS is at-least-once. The same delivery message arriving twice — in one
// batch, in concurrent invocations, while the first copy is still talking to the platform, after it
// finished, or while a retry is pending — must reach the platform once.

const world = useWorld();
const { table, sqs } = world;
const ctx = lambdaContext('worker');

const creates = (p: TestedPlatform) => platformRequests(world.fakes, p, 'POST', CREATE_PATH[p]);
const posts = (p: TestedPlatform) => platformPosts(world.fakes, p);

/** A delivery to `platform`, with `copies` of its message on the queue. */
const given = (platform: TestedPlatform, copies: number) =>
  seedDelivery(world, platform, `Said once on ${platform}`, { copies });

describe('the same delivery message more than once', () => {
  it('twice in one batch: one platform call; the loser is returned and later skipped', async () => {
    const g = given('bluesky', 2);

    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    // (The loser finds the delivery leased and is returned — or, had it come late, published.)
    expect(rounds[0]?.ids).toHaveLength(2);
    expect(rounds[0]?.failed.length).toBeLessThanOrEqual(1);
    expect(rounds.at(-1)?.failed).toEqual([]);
    expect(creates('bluesky')).toHaveLength(1);
    expect(posts('bluesky')).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 1 });
    expect(sqs.waiting(DELIVERY_QUEUE)).toEqual([]);
  });

  it('five copies in three concurrent invocations: one platform call', async () => {
    const g = given('mastodon', 5);

    const batches = [
      sqs.receive(DELIVERY_QUEUE, 2),
      sqs.receive(DELIVERY_QUEUE, 2),
      sqs.receive(DELIVERY_QUEUE, 1),
    ];
    await Promise.all(batches.map((b) => invoke(sqs, otherContainer(deliver), b, ctx)));
    await drain(sqs, DELIVERY_QUEUE, worker);

    // Every loser found the delivery leased (returned, then skipped on redelivery) or already
    // published (skipped) — which one depends on timing; only the winner reached the platform.
    expect(creates('mastodon')).toHaveLength(1);
    expect(posts('mastodon')).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 1 });
    expect(sqs.waiting(DELIVERY_QUEUE)).toEqual([]);
  });

  it('a copy that arrives while the first is still waiting on the platform: returned, not sent', async () => {
    // Arrange: the platform holds its answer to the first copy until the second copy was handled.
    const g = given('bluesky', 1);
    let duplicate: string[] | undefined;
    whenPlatformAnswers(world.fakes, 'bluesky', async (req) => {
      if (duplicate || !CREATE_PATH.bluesky.test(req.path)) return;
      sqs.put(DELIVERY_QUEUE, g.msg);
      duplicate = await invoke(sqs, otherContainer(deliver), sqs.receive(DELIVERY_QUEUE), ctx);
    });

    // Act
    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert: the copy found the delivery leased (busy); its redelivery found it published.
    expect(duplicate).toHaveLength(1);
    expect(rounds.map((r) => r.failed.length)).toEqual([0, 0]);
    expect(rounds[1]?.at).toBe(T0.getTime() + visibilityMs('delivery'));
    expect(creates('bluesky')).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 1 });
  });

  it('a copy that arrives after the delivery was recorded: skipped without a platform call or a write', async () => {
    const g = given('mastodon', 1);
    await drain(sqs, DELIVERY_QUEUE, worker);
    const requests = world.fakes.requests('mastodon').length;
    const writes = table.callsOf(POST_WRITES).length;

    advance(3_600_000);
    sqs.put(DELIVERY_QUEUE, g.msg);
    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    expect(rounds.map((r) => r.failed.length)).toEqual([0]);
    expect(world.fakes.requests('mastodon')).toHaveLength(requests);
    expect(table.callsOf(POST_WRITES)).toHaveLength(writes);
    expect(posts('mastodon')).toHaveLength(1);
  });

  it('copies arriving while a rate-limited retry is pending: dropped, the retry published once', async () => {
    // Arrange: the first attempt gets a 429 with a 30 s hint; two stray copies of the original
    // message show up 10 s later, before the retry is due.
    const g = given('bluesky', 1);
    world.fakes.failNext('bluesky', {
      status: 429,
      path: CREATE_PATH.bluesky,
      headers: { 'retry-after': '30' },
      body: { error: 'RateLimitExceeded', message: 'Rate Limit Exceeded' },
    });
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });
    advance(10_000);
    sqs.put(DELIVERY_QUEUE, g.msg);
    sqs.put(DELIVERY_QUEUE, g.msg);

    // Act
    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert: the strays found the retry not due and were dropped (the retry's own message carries
    // it); at +30 s that message published it.
    expect(sqs.sentTo(DELIVERY_QUEUE).map((s) => s.delaySeconds)).toEqual([0, 30, 0, 0]);
    expect(rounds.map((r) => (r.at - T0.getTime()) / 1000)).toEqual([10, 30]);
    expect(creates('bluesky')).toHaveLength(2); // the 429, then the retry
    expect(posts('bluesky')).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 2 });
    expect(sqs.waiting(DELIVERY_QUEUE)).toEqual([]);
  });

  it('a stray copy during a retry chained past the 15-minute SQS delay: dropped, not carried along the chain', async () => {
    // Arrange: a 429 with a 30-minute hint (chained as 900 s + 900 s); a stray copy 10 s later.
    const g = given('mastodon', 1);
    world.fakes.failNext('mastodon', {
      status: 429,
      path: CREATE_PATH.mastodon,
      headers: { 'retry-after': '1800' },
      body: { error: 'Too many requests' },
    });
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });
    advance(10_000);
    sqs.put(DELIVERY_QUEUE, g.msg);

    // Act
    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert: only the retry's message went on (900 s), the stray ended at +10 s.
    expect(sqs.sentTo(DELIVERY_QUEUE).map((s) => s.delaySeconds)).toEqual([0, 900, 0, 900]);
    expect(rounds.map((r) => (r.at - T0.getTime()) / 1000)).toEqual([10, 900, 1800]);
    expect(creates('mastodon')).toHaveLength(2);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 2 });
    expect(sqs.waiting(DELIVERY_QUEUE)).toEqual([]);
  });
});
