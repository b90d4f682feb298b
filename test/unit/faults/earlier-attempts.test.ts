import { describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import { MAX_ATTEMPTS } from '#core/delivery';
import { handler as worker } from '#handlers/delivery-worker';
import type { FakeMastodon } from '../../fakes/mastodon.ts';
import {
  advance,
  CREATE_PATH,
  DELIVERY_QUEUE,
  drain,
  platformPosts,
  platformRequests,
  seedDelivery,
  T0,
  useWorld,
  whenPlatformAnswers,
} from './support/world.ts';

// Fault injection: an attempt that may have reached the platform (its answer lost, or its worker
// dead after the platform accepted) stays unresolved on the delivery until a later attempt finds out.
// Every later attempt looks first, from the unresolved attempt's start, whatever waits (a pause, a
// long retry hint, the end of Mastodon's one-hour Idempotency-Key) came between; a look that fails
// is no answer, so nothing is posted until one succeeds, and after the last attempt the delivery
// fails "outcome unknown" rather than post twice.

const world = useWorld();
const { table, sqs } = world;

const X_TIMELINE = /^\/2\/users\/\d+\/tweets$/;
const creates = (platform: 'mastodon' | 'x') =>
  platformRequests(world.fakes, platform, 'POST', CREATE_PATH[platform]);
const epochIn = (seconds: number) => String(Math.floor(Date.now() / 1000) + seconds);

/** The platform makes the post on the first create call, but its answer is `status` (the outcome is lost). */
function firstAnswerLost(
  platform: 'mastodon' | 'x',
  status: number,
  headers: Record<string, string> = {},
  then?: () => void,
) {
  let seen = 0;
  whenPlatformAnswers(world.fakes, platform, (req, res) => {
    if (req.method !== 'POST' || !CREATE_PATH[platform].test(req.path) || ++seen !== 1) return;
    res.status = status;
    res.headers = { ...res.headers, ...headers };
    res.body = { title: 'Service Unavailable', status, error: 'Service Unavailable' };
    then?.();
  });
}

describe('Mastodon: a text status after waits of an hour or more', () => {
  it('the first answer lost (504), the repeat refused for 2 h (429): the status is found, not posted twice', async () => {
    // Arrange
    const g = seedDelivery(world, 'mastodon', 'Launch day! Our new release is out.');
    firstAnswerLost('mastodon', 504, {}, () =>
      world.fakes.failNext('mastodon', {
        status: 429,
        path: CREATE_PATH.mastodon,
        headers: { 'retry-after': '7200' },
        body: { error: 'Too many requests' },
      }),
    );

    // Act 1: the 504, then the retry's repeat under the key meets the 429.
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 60_000 });

    // Assert 1
    const between = g.delivery();
    expect(between).toMatchObject({ stage: 'retrying', attempts: 2, error_category: 'rate_limited' });

    // Act 2: past the key's hour (the instance forgot it), the retry comes.
    advance(3_600_000);
    world.fakes.fake<FakeMastodon>('mastodon').forgetIdempotencyKeys();
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 3 * 3_600_000 });

    // Assert 2
    const statuses = platformPosts(world.fakes, 'mastodon');
    expect(statuses).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 3, external_id: statuses[0]?.id });
    // Unresolved from the first attempt's start until the look-up found the status.
    expect(between.unresolved_since).toBe(T0.toISOString());
    expect(g.delivery().unresolved_since).toBeUndefined();
  });

  it('the worker died after the POST and the account is paused for 2 h: one status', async () => {
    // Arrange: every write fails once the instance made the status (the worker is dead).
    const g = seedDelivery(world, 'mastodon', 'A status whose worker died after posting it');
    let dead = false;
    whenPlatformAnswers(world.fakes, 'mastodon', (req, res) => {
      if (req.method === 'POST' && CREATE_PATH.mastodon.test(req.path) && res.status < 300) dead = true;
    });
    table.fail({ op: 'PutItem', kind: 'ECONNRESET', times: Number.POSITIVE_INFINITY, match: () => dead });
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });
    dead = false;
    table.heal();
    const key = keys.channel(g.post.org_id, g.channel.id);
    table.seed({
      ...table.get(key),
      ...key,
      pace_until: new Date(Date.now() + 7_200_000).toISOString(),
      pace_reason: 'paused',
    });

    // Act: SQS redelivers after the lease; an hour later the instance forgot the key.
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 130_000 });
    advance(3_600_000);
    world.fakes.fake<FakeMastodon>('mastodon').forgetIdempotencyKeys();
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 3 * 3_600_000 });

    // Assert
    const statuses = platformPosts(world.fakes, 'mastodon');
    expect(statuses).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', external_id: statuses[0]?.id });
  });
});

describe('X: finding the tweet of an earlier attempt', () => {
  it('503 with Retry-After: 120 after X made the tweet: the retry finds it from the first attempt on', async () => {
    // Arrange
    const g = seedDelivery(world, 'x', 'A tweet whose answer was a 503');
    firstAnswerLost('x', 503, { 'retry-after': '120' });

    // Act
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 600_000 });

    // Assert: one POST; the tweet recorded.
    const tweets = platformPosts(world.fakes, 'x');
    expect(tweets).toHaveLength(1);
    expect(creates('x')).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 2, external_id: tweets[0]?.id });
  });

  it('the look-up answered 429: waits for X and looks again, never POSTs a second time', async () => {
    // Arrange
    const g = seedDelivery(world, 'x', 'A tweet whose look-up was rate limited');
    firstAnswerLost('x', 503, { 'retry-after': '120' }, () =>
      world.fakes.failNext('x', {
        status: 429,
        path: X_TIMELINE,
        headers: { 'x-rate-limit-reset': epochIn(900), 'x-rate-limit-remaining': '0' },
        body: { title: 'Too Many Requests', detail: 'Too Many Requests', type: 'about:blank', status: 429 },
      }),
    );

    // Act
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 3_600_000 });

    // Assert: the 429'd look, then one that found the tweet.
    const tweets = platformPosts(world.fakes, 'x');
    expect(creates('x')).toHaveLength(1);
    expect(platformRequests(world.fakes, 'x', 'GET', X_TIMELINE)).toHaveLength(2);
    expect(tweets).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 3, external_id: tweets[0]?.id });
  });

  it('look-ups that keep failing: after the last attempt the delivery fails "outcome unknown", with one POST', async () => {
    // Arrange: every look-up is refused (429, reset a minute later).
    const g = seedDelivery(world, 'x', 'A tweet that can never be looked up');
    firstAnswerLost('x', 503, { 'retry-after': '120' }, () =>
      world.fakes.failNext('x', {
        status: 429,
        path: X_TIMELINE,
        times: 100,
        headers: { 'x-rate-limit-reset': epochIn(60), 'x-rate-limit-remaining': '0' },
        body: { title: 'Too Many Requests', detail: 'Too Many Requests', type: 'about:blank', status: 429 },
      }),
    );

    // Act
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 6 * 3_600_000 });

    // Assert
    expect(creates('x')).toHaveLength(1);
    expect(platformPosts(world.fakes, 'x')).toHaveLength(1);
    expect(platformRequests(world.fakes, 'x', 'GET', X_TIMELINE)).toHaveLength(MAX_ATTEMPTS - 1);
    expect(g.delivery()).toMatchObject({
      stage: 'failed',
      attempts: MAX_ATTEMPTS,
      external_id: null,
      error: expect.stringMatching(/outcome unknown/i),
    });
    expect(sqs.waiting(DELIVERY_QUEUE)).toEqual([]);
  });
});
