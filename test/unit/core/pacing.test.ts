import { describe, expect, it } from 'vitest';
import { claimDelivery, withDelivery } from '#core/delivery';
import {
  bucketOf,
  compaction,
  countedLimits,
  decide,
  deferredDelivery,
  freedAt,
  localDay,
  MAX_PAUSE_MS,
  PACING,
  type PaceLimit,
  pauseAfter,
  secondsUntil,
  startOfDay,
  type WindowCounts,
} from '#core/pacing';
import { PLATFORMS } from '#core/platforms';
import type { DeliveryRecord, PostRecord } from '#core/posts';

// The pacing policy (core/pacing.ts): the limits, the decision, the pause after a refusal, and a
// deferral that spends no attempt.

const NOW = new Date('2030-06-12T09:00:00.000Z');
const HOUR = 3_600_000;
const at = (iso: string) => new Date(iso);

const limitOf = (platform: keyof typeof PACING, id: string) =>
  PACING[platform].limits.find((l) => l.id === id) as PaceLimit;

/** Window counts as storage keeps them, from `[bucket, count]` pairs. */
function counts(pairs: Array<[number, number]>): WindowCounts {
  const buckets = new Map(pairs);
  return {
    total: pairs.reduce((s, [, n]) => s + n, 0),
    oldest: pairs.length ? Math.min(...pairs.map(([b]) => b)) : null,
    buckets,
  };
}

/** Records one send of `cost` at `t` into `c` (what the adapter's write does). */
function record(c: Map<number, number>, l: PaceLimit, t: Date, cost = 1): void {
  const b = bucketOf(l.window, t.getTime());
  c.set(b, (c.get(b) ?? 0) + cost);
}

describe('PACING: the table of limits', () => {
  it('covers every platform, with storage-safe unique ids and rolling windows of whole buckets', () => {
    // Arrange / Act
    const rows = PLATFORMS.map((p) => [p, PACING[p]] as const);

    // Assert
    for (const [platform, pacing] of rows) {
      expect(pacing.limits.length, platform).toBeGreaterThan(0);
      const ids = pacing.limits.map((l) => l.id);
      expect(new Set(ids).size, platform).toBe(ids.length);
      for (const l of pacing.limits) {
        expect(l.id).toMatch(/^[a-z][a-z0-9]*$/);
        expect(l.limit).toBeGreaterThan(0);
        if (l.window.kind === 'rolling') expect((l.window.seconds * 1000) % l.window.buckets).toBe(0);
      }
    }
  });

  it('counts only where a burst reaches the limit and the refusal names no time', () => {
    // Arrange / Act
    const counted = PLATFORMS.flatMap((p) =>
      PACING[p].limits.filter((l) => l.counted).map((l) => `${p}.${l.scope}.${l.id}`),
    );

    // Assert
    expect(counted.sort()).toEqual(['instagram.channel.p24h', 'mastodon.channel.m30m', 'youtube.app.up1d']);
  });

  it('a text post costs nothing against a per-media limit; four images cost four', () => {
    expect(countedLimits('mastodon', 'channel', 0)).toEqual([]);
    expect(countedLimits('mastodon', 'channel', 4).map((x) => x.cost)).toEqual([4]);
    expect(countedLimits('x', 'channel', 4)).toEqual([]);
  });
});

describe('decide: pauses', () => {
  it('goes when nothing is paused or counted', () => {
    expect(decide({ platform: 'x', media: 0 }, NOW)).toEqual({ go: true });
  });

  it("waits for the channel's pause, and not after it ended", () => {
    // Arrange
    const channelPause = { until: '2030-06-12T09:10:00.000Z', reason: 'x said so' };

    // Act
    const during = decide({ platform: 'x', channelPause, media: 0 }, NOW);
    const after = decide({ platform: 'x', channelPause, media: 0 }, at('2030-06-12T09:10:00.000Z'));

    // Assert
    expect(during).toEqual({
      go: false,
      until: at(channelPause.until),
      reason: 'x said so',
      scope: 'channel',
    });
    expect(after).toEqual({ go: true });
  });

  it("waits for the later of the channel's and the app's pauses", () => {
    // Arrange
    const channelPause = { until: '2030-06-12T09:10:00.000Z', reason: 'account' };
    const appPause = { until: '2030-06-12T11:00:00.000Z', reason: 'app' };

    // Act
    const d = decide({ platform: 'linkedin', channelPause, appPause, media: 0 }, NOW);

    // Assert
    expect(d).toMatchObject({ go: false, until: at(appPause.until), scope: 'app', reason: 'app' });
  });
});

describe('decide: counted windows', () => {
  const ig = limitOf('instagram', 'p24h');

  it('takes the 50th Instagram post of a rolling day and turns back the 51st until a slot frees', () => {
    // Arrange: 10 posts an hour for the last five hours
    const c = new Map<number, number>();
    for (let h = 5; h >= 1; h--)
      for (let i = 0; i < 10; i++) record(c, ig, new Date(NOW.getTime() - h * HOUR));
    const full = counts([...c]);
    const one = new Map(c);
    one.set(bucketOf(ig.window, NOW.getTime() - 5 * HOUR), 9);

    // Act
    const room = decide(
      { platform: 'instagram', media: 1, counts: { channel: { p24h: counts([...one]) } } },
      NOW,
    );
    const none = decide({ platform: 'instagram', media: 1, counts: { channel: { p24h: full } } }, NOW);

    // Assert: the oldest bucket (5 h ago) stops counting when the window has moved past it
    expect(room).toEqual({ go: true });
    const oldest = bucketOf(ig.window, NOW.getTime() - 5 * HOUR);
    expect(none).toMatchObject({ go: false, scope: 'channel', until: freedAt(ig.window, oldest) });
    expect((none as { until: Date }).until.getTime() - (NOW.getTime() - 5 * HOUR)).toBeGreaterThan(24 * HOUR);
    expect((none as { until: Date }).until.getTime() - (NOW.getTime() - 5 * HOUR)).toBeLessThanOrEqual(
      26 * HOUR,
    );
  });

  it('never lets any 24-hour interval hold more than 50 Instagram posts, whatever the arrival pattern', () => {
    // Arrange: a seeded pseudo-random stream of due posts over five days, bursty
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const c = new Map<number, number>();
    const sent: number[] = [];
    let t = NOW.getTime();

    // Act: each due post is sent if decide says go, else retried at the time it names
    const queue: number[] = [];
    for (let i = 0; i < 600; i++) {
      t += random() < 0.2 ? random() * 4 * HOUR : random() * 60_000;
      queue.push(t);
    }
    while (queue.length) {
      queue.sort((a, b) => a - b);
      const due = queue.shift() as number;
      const d = decide(
        { platform: 'instagram', media: 1, counts: { channel: { p24h: counts([...c]) } } },
        new Date(due),
      );
      if (d.go) {
        record(c, ig, new Date(due));
        sent.push(due);
      } else {
        expect(d.until.getTime()).toBeGreaterThan(due);
        queue.push(d.until.getTime());
      }
    }

    // Assert
    expect(sent).toHaveLength(600);
    let worst = 0;
    for (let i = 0, j = 0; i < sent.length; i++) {
      while ((sent[i] as number) - (sent[j] as number) >= 24 * HOUR) j++;
      worst = Math.max(worst, i - j + 1);
    }
    expect(worst).toBeLessThanOrEqual(50);
    expect(worst).toBeGreaterThanOrEqual(45);
  });

  it('waits for enough buckets to free a multi-media cost (Mastodon: 30 media per 30 minutes)', () => {
    // Arrange: 27 media in three buckets of the last half hour
    const m = limitOf('mastodon', 'm30m');
    const b = bucketOf(m.window, NOW.getTime());
    const c = counts([
      [b - 20, 2],
      [b - 10, 5],
      [b - 1, 20],
    ]);

    // Act
    const text = decide({ platform: 'mastodon', media: 0, counts: { channel: { m30m: c } } }, NOW);
    const three = decide({ platform: 'mastodon', media: 3, counts: { channel: { m30m: c } } }, NOW);
    const four = decide({ platform: 'mastodon', media: 4, counts: { channel: { m30m: c } } }, NOW);

    // Assert: 27 + 4 needs 1 freed, the first bucket (2) suffices; 3 fit now; text is not counted
    expect(text).toEqual({ go: true });
    expect(three).toEqual({ go: true });
    expect(four).toMatchObject({ go: false, until: freedAt(m.window, b - 20) });
  });

  it("YouTube's uploads are a Pacific calendar day: the 101st waits for Pacific midnight", () => {
    // Arrange
    const up = limitOf('youtube', 'up1d');
    const today = bucketOf(up.window, NOW.getTime());
    const yesterday = counts([[today - 1, 100]]);
    const spent = counts([[today, 100]]);

    // Act
    const fresh = decide({ platform: 'youtube', media: 1, counts: { app: { up1d: yesterday } } }, NOW);
    const full = decide({ platform: 'youtube', media: 1, counts: { app: { up1d: spent } } }, NOW);

    // Assert: 2030-06-12T09:00Z is 02:00 PDT; the quota resets at 2030-06-13T00:00 PDT = 07:00Z
    expect(fresh).toEqual({ go: true });
    expect(full).toMatchObject({ go: false, scope: 'app', until: at('2030-06-13T07:00:00.000Z') });
  });
});

describe('calendar days in a time zone', () => {
  it('finds local midnight across daylight saving changes', () => {
    const la = 'America/Los_Angeles';
    // Winter (PST, UTC-8), the day DST starts (2030-03-10) and the day it ends (2030-11-03).
    expect(startOfDay(localDay(Date.parse('2030-01-15T20:00:00Z'), la) + 1, la)).toEqual(
      at('2030-01-16T08:00:00.000Z'),
    );
    expect(startOfDay(localDay(Date.parse('2030-03-10T12:00:00Z'), la) + 1, la)).toEqual(
      at('2030-03-11T07:00:00.000Z'),
    );
    expect(startOfDay(localDay(Date.parse('2030-03-10T12:00:00Z'), la), la)).toEqual(
      at('2030-03-10T08:00:00.000Z'),
    );
    expect(startOfDay(localDay(Date.parse('2030-11-03T12:00:00Z'), la) + 1, la)).toEqual(
      at('2030-11-04T08:00:00.000Z'),
    );
    expect(localDay(Date.parse('2030-06-13T06:59:59Z'), la)).toBe(
      localDay(Date.parse('2030-06-12T07:00:00Z'), la),
    );
    expect(localDay(Date.parse('2030-06-13T07:00:00Z'), la)).toBe(
      localDay(Date.parse('2030-06-12T07:00:00Z'), la) + 1,
    );
    expect(startOfDay(localDay(NOW.getTime(), 'UTC') + 1, 'UTC')).toEqual(at('2030-06-13T00:00:00.000Z'));
  });
});

describe('compaction', () => {
  it('names the aged buckets with the counts read, and the bound the stored total must keep', () => {
    // Arrange
    const ig = limitOf('instagram', 'p24h');
    const b = bucketOf(ig.window, NOW.getTime());
    const c = counts([
      [b - 30, 3],
      [b - 25, 4],
      [b - 24, 5],
      [b, 1],
    ]);

    // Act
    const plan = compaction(ig, c, 1, NOW);

    // Assert: buckets b-24 … b count; b-30 and b-25 are dropped
    expect(plan).toEqual({
      current: b,
      expired: [
        [b - 30, 3],
        [b - 25, 4],
      ],
      expiredSum: 7,
      oldest: b - 24,
      bound: 50 - 1 + 7,
    });
  });
});

describe('pauseAfter: a refusal pauses its scope', () => {
  it('only a rate_limited refusal pauses', () => {
    expect(pauseAfter('x', { category: 'system', retryAfterSeconds: 30 }, NOW)).toBeNull();
    expect(pauseAfter('x', { category: 'auth_expired' }, NOW)).toBeNull();
  });

  it("until the platform's time, for the channel unless the app's limit was spent", () => {
    // Act
    const account = pauseAfter('x', { category: 'rate_limited', retryAfterSeconds: 120 }, NOW);
    const app = pauseAfter('x', { category: 'rate_limited', retryAfterSeconds: 3600, scope: 'app' }, NOW);

    // Assert
    expect(account).toMatchObject({ scope: 'channel', pause: { until: '2030-06-12T09:02:00.000Z' } });
    expect(app).toMatchObject({ scope: 'app', pause: { until: '2030-06-12T10:00:00.000Z' } });
    expect(app?.pause.reason).toBe(
      "x refused Herald's app for its rate limit: nothing is sent to any x channel before 2030-06-12T10:00:00.000Z",
    );
    expect(account?.pause.reason).toBe(
      'x refused this account for its rate limit: nothing is sent to it before 2030-06-12T09:02:00.000Z',
    );
  });

  it("without a time: the platform's default (YouTube's app quota: Pacific midnight)", () => {
    expect(pauseAfter('x', { category: 'rate_limited' }, NOW)?.pause.until).toBe('2030-06-12T09:15:00.000Z');
    expect(pauseAfter('youtube', { category: 'rate_limited', scope: 'app' }, NOW)?.pause.until).toBe(
      '2030-06-13T07:00:00.000Z',
    );
    expect(pauseAfter('tiktok', { category: 'rate_limited' }, NOW)?.pause.until).toBe(
      '2030-06-12T09:01:00.000Z',
    );
  });

  it('never longer than a day, never shorter than a second', () => {
    const long = pauseAfter('linkedin', { category: 'rate_limited', retryAfterSeconds: 9 * 86_400 }, NOW);
    const zero = pauseAfter('linkedin', { category: 'rate_limited', retryAfterSeconds: 0 }, NOW);
    expect(Date.parse(long?.pause.until ?? '')).toBe(NOW.getTime() + MAX_PAUSE_MS);
    expect(Date.parse(zero?.pause.until ?? '')).toBe(NOW.getTime() + 1000);
    expect(secondsUntil(long?.pause.until ?? '', NOW)).toBe(86_400);
  });
});

describe('deferredDelivery: a wait is not an attempt', () => {
  const d0: DeliveryRecord = {
    channel_id: 'ch_1',
    stage: 'queued',
    external_id: null,
    url: null,
    error: null,
    error_category: null,
    attempts: 0,
    updated_at: NOW.toISOString(),
    round: 1,
  };
  const post: PostRecord = {
    id: 'post_1',
    org_id: 'org_1',
    status: 'publishing',
    type: 'single',
    title: null,
    body: null,
    scheduled_at: null,
    published_at: null,
    created_at: NOW.toISOString(),
    updated_at: NOW.toISOString(),
    variants: [{ id: 'var_1', channel_id: 'ch_1', body: 'x', media: [], options: {} }],
    deliveries: { ch_1: d0 },
    round: 1,
    version: 1,
    approval: null,
    counted_period: '2030-06',
  } as PostRecord;

  it('gives back the attempt a fresh claim counted, and is due again when the wait ends', () => {
    // Arrange: the worker claimed it (attempts 1), then pacing said wait
    const claimed = claimDelivery(post, 'ch_1', 1, 'claim-1', NOW);
    if (claimed.kind !== 'claimed') throw new Error('not claimed');
    const wait = {
      until: at('2030-06-12T10:00:00.000Z'),
      reason: 'instagram: 50 posts per 24 hours reached',
    };

    // Act
    const d = deferredDelivery(claimed.post.deliveries.ch_1 as DeliveryRecord, wait, NOW, {
      undoClaim: true,
    });
    const after = withDelivery(claimed.post, d, NOW);

    // Assert
    expect(d).toMatchObject({
      stage: 'retrying',
      attempts: 0,
      next_attempt_at: '2030-06-12T10:00:00.000Z',
      error_category: 'rate_limited',
      error: wait.reason,
      claim_id: undefined,
      lease_until: undefined,
    });
    // Until then a message finds it "not due yet", and the watchdog looks after the wait.
    expect(claimDelivery(after, 'ch_1', 1, 'claim-2', at('2030-06-12T09:30:00.000Z'))).toEqual({
      kind: 'skip',
      reason: 'not due yet',
    });
    expect(Date.parse(after.watch_at ?? '')).toBeGreaterThan(Date.parse('2030-06-12T10:00:00.000Z'));
    expect(claimDelivery(after, 'ch_1', 1, 'claim-3', at('2030-06-12T10:00:00.000Z'))).toMatchObject({
      kind: 'claimed',
      recovering: false,
    });
  });

  it('leaves the count alone after a recovering claim (it counted none)', () => {
    const d = deferredDelivery({ ...d0, stage: 'sending', attempts: 2 }, { until: NOW, reason: 'r' }, NOW, {
      undoClaim: false,
    });
    expect(d.attempts).toBe(2);
  });
});
