import { describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import { startPublishing } from '#core/posts';
import { handler as worker } from '#handlers/delivery-worker';
import type { FakeRequest, FakeResponse, InjectedFailure } from '../../fakes/server.ts';
import { fixedId, post, postItem } from '../support/fixtures.ts';
import {
  CREATE_PATH,
  DELIVERY_QUEUE,
  drain,
  platformPosts,
  platformRequests,
  seedDelivery,
  storedPost,
  T0,
  type TestedPlatform,
  useWorld,
  whenPlatformAnswers,
} from './support/world.ts';

// Fault injection, part 4: the platforms push back. A 429 (or a 5xx) with a retry hint must come
// back at the hinted time — the delayed SQS message carries exactly that delay, chained when it is
// longer than SQS's 15 minutes — and a platform that accepted a post but answered too late (a
// timeout) must not get it twice on the retry. Real connectors against the contract fakes.

const world = useWorld();
const { sqs } = world;

const posts = (platform: TestedPlatform) => platformPosts(world.fakes, platform);
const epochIn = (seconds: number) => String(Math.floor(T0.getTime() / 1000) + seconds);
const delays = () => sqs.sentTo(DELIVERY_QUEUE).map((s) => s.delaySeconds);
const at = (rounds: Array<{ at: number }>) => rounds.map((r) => (r.at - T0.getTime()) / 1000);

interface HintCase {
  name: string;
  platform: TestedPlatform;
  failure: InjectedFailure;
  hint: number;
}

const hints: HintCase[] = [
  {
    name: 'Bluesky 429 RateLimitExceeded with ratelimit-reset (epoch seconds)',
    platform: 'bluesky',
    hint: 45,
    failure: {
      status: 429,
      path: /createRecord$/,
      headers: { 'ratelimit-reset': epochIn(45) },
      body: { error: 'RateLimitExceeded', message: 'Rate Limit Exceeded' },
    },
  },
  {
    name: 'Mastodon 429 with X-RateLimit-Reset (an ISO timestamp)',
    platform: 'mastodon',
    hint: 120,
    failure: {
      status: 429,
      path: /^\/api\/v1\/statuses$/,
      headers: { 'x-ratelimit-reset': new Date(T0.getTime() + 120_000).toISOString() },
      body: { error: 'Too many requests' },
    },
  },
  {
    name: 'X 429 with x-rate-limit-reset (epoch seconds)',
    platform: 'x',
    hint: 300,
    failure: {
      status: 429,
      path: /^\/2\/tweets$/,
      headers: { 'x-rate-limit-reset': epochIn(300), 'x-rate-limit-remaining': '0' },
      body: { title: 'Too Many Requests', detail: 'Too Many Requests', type: 'about:blank', status: 429 },
    },
  },
  {
    name: 'Threads throttled (#4) on threads_publish with the BUC estimated_time_to_regain_access (minutes)',
    platform: 'threads',
    hint: 180,
    failure: {
      status: 400,
      path: /\/threads_publish$/,
      headers: {
        'x-business-use-case-usage': JSON.stringify({
          '17841400000000001': [{ type: 'threads', call_count: 100, estimated_time_to_regain_access: 3 }],
        }),
      },
      body: { error: { message: 'Application request limit reached', type: 'OAuthException', code: 4 } },
    },
  },
  {
    name: 'Bluesky 503 with Retry-After (seconds)',
    platform: 'bluesky',
    hint: 20,
    failure: {
      status: 503,
      path: /createRecord$/,
      headers: { 'retry-after': '20' },
      body: { error: 'InternalServerError', message: 'Service Unavailable' },
    },
  },
];

describe.each(hints)('$name', (c) => {
  it(`is retried ${c.hint} s later through a delayed message, and published once`, async () => {
    // Arrange
    const g = seedDelivery(world, c.platform, `Throttled ${c.platform} post (${c.hint} s)`);
    world.fakes.failNext(c.platform, c.failure);

    // Act
    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert: the test's own message (0 s), then the retry at exactly the hint.
    expect(delays()).toEqual([0, c.hint]);
    expect(at(rounds)).toEqual([0, c.hint]);
    expect(rounds.every((r) => r.failed.length === 0)).toBe(true);
    expect(posts(c.platform)).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 2, error: null });
  });
});

describe('hints longer than SQS allows, and answers that come too late', () => {
  // Regression: a hint longer than SQS's 900 s maximum delay was once cut to 900 s, so the retry came
  // back before the platform said and spent an attempt; it must be chained to the full hint instead.
  it('Retry-After 1500 s: waits the whole 1500 s (900 s + 600 s chained), then publishes once', async () => {
    const g = seedDelivery(world, 'mastodon', 'A long wait on Mastodon');
    world.fakes.failNext('mastodon', {
      status: 429,
      path: CREATE_PATH.mastodon,
      headers: { 'retry-after': '1500' },
      body: { error: 'Too many requests' },
    });

    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    // The message back at 900 s should find the retry not due, and re-queue itself for the rest.
    const posted = platformRequests(world.fakes, 'mastodon', 'POST', CREATE_PATH.mastodon);
    expect(posted.map((r) => (r.at - T0.getTime()) / 1000)).toEqual([0, 1500]);
    expect(delays()).toEqual([0, 900, 600]);
    expect(at(rounds)).toEqual([0, 900, 1500]);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 2 });
  });

  it('a platform refusing until its 1500 s hint (then once more): never early twice, published once', async () => {
    // Regression: a platform that keeps refusing costs attempts, never a post; no delay beyond SQS's
    // 900 s, and no retry before the 1500 s hint.
    const g = seedDelivery(world, 'mastodon', 'A long wait on Mastodon, refused twice');
    const refuse = (retryAfter: number) =>
      world.fakes.failNext('mastodon', {
        status: 429,
        path: CREATE_PATH.mastodon,
        headers: { 'retry-after': String(retryAfter) },
        body: { error: 'Too many requests' },
      });
    refuse(1500);
    refuse(600);

    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    expect(delays().every((d) => d <= 900)).toBe(true);
    expect(at(rounds).at(-1)).toBeGreaterThanOrEqual(1500);
    expect(rounds.every((r) => r.failed.length === 0)).toBe(true);
    expect(posts('mastodon')).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 3 });
  });

  const accepts = (['bluesky', 'mastodon', 'threads', 'x'] as const).map((platform) => ({
    platform,
    path: CREATE_PATH[platform],
  }));

  it.each(accepts)(
    '$platform accepted the post but answered after our timeout: retried, not re-posted',
    async ({ platform, path }) => {
      // Arrange: request timeouts are ours to fire — the first time the platform has made the post,
      // every pending request times out before the answer arrives (no real 15 s wait).
      const g = seedDelivery(world, platform, `Slow answer from ${platform}`);
      const timers: AbortController[] = [];
      vi.spyOn(AbortSignal, 'timeout').mockImplementation(() => {
        const c = new AbortController();
        timers.push(c);
        return c.signal;
      });
      let fired = false;
      whenPlatformAnswers(world.fakes, platform, (req: FakeRequest, res: FakeResponse) => {
        if (fired || req.method !== 'POST' || !path.test(req.path) || res.status >= 300) return;
        fired = true;
        for (const t of timers.splice(0))
          t.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
      });

      // Act
      const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

      // Assert: a retryable "timed out", retried after the backoff (5 s × 0.8, no hint), then found.
      expect(fired).toBe(true);
      expect(delays()).toEqual([0, 4]);
      expect(at(rounds)).toEqual([0, 4]);
      expect(posts(platform)).toHaveLength(1);
      const creates = platformRequests(world.fakes, platform, 'POST', path).length;
      // Mastodon repeats the POST with the same Idempotency-Key (the instance answers the same status).
      expect(creates).toBe(platform === 'mastodon' ? 2 : 1);
      expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 2 });
    },
  );
});

describe('pacing: a 429 pauses the account it names', () => {
  it('a second post to the paused channel waits for the pause without a platform call or an attempt; both publish once after it', async () => {
    // Arrange: post 1 to an X account meets a 429 (reset in 600 s); post 2 to the same account is queued behind it.
    const g = seedDelivery(world, 'x', 'First post into a rate limit');
    const second = startPublishing(
      post({
        id: fixedId('post', 2),
        variants: [
          {
            id: fixedId('variant', 2),
            channel_id: g.channel.id,
            body: 'Second post',
            media: [],
            options: {},
          },
        ],
      }),
      new Date(T0.getTime() - 1000),
    );
    world.table.seed(postItem(second));
    world.fakes.failNext('x', {
      status: 429,
      path: /^\/2\/tweets$/,
      headers: { 'x-rate-limit-reset': epochIn(600), 'x-rate-limit-remaining': '0' },
      body: { title: 'Too Many Requests', detail: 'Too Many Requests', type: 'about:blank', status: 429 },
    });
    const creates = () => platformRequests(world.fakes, 'x', 'POST', CREATE_PATH.x);

    // Act: the first delivery gets the 429; then the second one's turn comes while the pause holds.
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });
    sqs.put(DELIVERY_QUEUE, {
      org_id: second.org_id,
      post_id: second.id,
      channel_id: g.channel.id,
      round: 1,
    });
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });
    const duringPause = creates().length;
    const held = storedPost(world.table, second.id).deliveries[g.channel.id];
    await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert
    expect(duringPause).toBe(1);
    expect(held).toMatchObject({ stage: 'retrying', attempts: 0, error_category: 'rate_limited' });
    expect(world.table.get(keys.channel(g.channel.org_id, g.channel.id))).toMatchObject({
      pace_until: new Date(T0.getTime() + 600_000).toISOString(),
    });
    expect(posts('x')).toHaveLength(2);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 2 });
    expect(storedPost(world.table, second.id).deliveries[g.channel.id]).toMatchObject({
      stage: 'published',
      attempts: 1,
    });
  });
});
