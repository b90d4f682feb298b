import type { ErrorCategory } from './delivery.ts';
import type { Platform } from './platforms.ts';
import type { DeliveryRecord } from './posts.ts';

// Pacing (docs/api/posts.md, "Pacing and rate limits"): how many deliveries a platform takes per
// account and per app, and what Herald does when a platform says "too many" (a 429 or its own
// throttling code). Two mechanisms, both decided here and stored by adapters/pacing.ts:
//
//   counted   limits a burst of scheduled posts reaches and whose refusal names no usable time
//             (Instagram's rolling 24 h, YouTube's upload quota, Mastodon's media uploads): each
//             delivery takes a slot in a window before it is sent, and waits for the next free slot
//             when there is none.
//   paused    every other limit: the platform's refusal pauses the scope it names (the channel, or
//             the whole platform app) until the time it gives (or a default per platform); nothing
//             is sent to a paused scope, and its deliveries wait without spending an attempt.
//
// Figures are the platforms' own documentation (the source is named on each entry); where a
// figure is undocumented or varies, a conservative one is chosen and the comment says so.

export type PaceScope = 'channel' | 'app';

/**
 * A counting window. `rolling`: the last `seconds`, kept as `buckets` equal buckets (a delivery
 * counts against the current bucket and the `buckets` before it, so any interval of `seconds` holds
 * at most the limit). `daily`: the calendar day in `timeZone` (the platform resets at its midnight).
 */
export type PaceWindow =
  | { kind: 'rolling'; seconds: number; buckets: number }
  | { kind: 'daily'; timeZone: string };

export interface PaceLimit {
  /** Short and stable: it names the counter's attributes in storage. */
  id: string;
  scope: PaceScope;
  limit: number;
  window: PaceWindow;
  /** What one delivery costs: one post, or one per media item (0 for a text post: not counted). */
  unit: 'post' | 'media';
  /** Counted before sending; otherwise documented only, and the refusal's pause does the work. */
  counted: boolean;
  /** The limit in words (docs, logs and the deferral's reason). */
  what: string;
}

export interface PlatformPacing {
  limits: readonly PaceLimit[];
  /** How long a scope pauses after a rate-limit refusal that named no time. */
  pauseWithoutHint(scope: PaceScope, now: Date): Date;
}

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;

const after = (ms: number) => (_scope: PaceScope, now: Date) => new Date(now.getTime() + ms);

/** X's manage-Posts cap and Mastodon's default statuses limit are the same rule; each keeps its stored id. */
const threeHundredPostsPer3Hours = (id: string): PaceLimit => ({
  id,
  scope: 'channel',
  limit: 300,
  window: rolling(3 * 3600, 12),
  unit: 'post',
  counted: false,
  what: '300 posts per 3 hours per account',
});

export const PACING: Record<Platform, PlatformPacing> = {
  // docs.x.com/x-api/fundamentals/rate-limits: POST /2/tweets 100 per 15 min per user, 10,000 per
  // 24 h per app; the manage-Posts introduction adds 300 per 3 h (shared with reposts). The app's
  // 24 h cap depends on the X API access level, so it is not counted: X's 429 carries
  // x-app-limit-24hour-* / x-user-limit-24hour-* headers, which name the scope and its reset.
  x: {
    limits: [
      {
        id: 'u15m',
        scope: 'channel',
        limit: 100,
        window: rolling(15 * 60, 15),
        unit: 'post',
        counted: false,
        what: '100 posts per 15 minutes per account',
      },
      threeHundredPostsPer3Hours('u3h'),
      {
        id: 'a24h',
        scope: 'app',
        limit: 10_000,
        window: rolling(24 * 3600, 24),
        unit: 'post',
        counted: false,
        what: 'posts per 24 hours per app (10,000 at most; lower on the smaller access levels)',
      },
    ],
    pauseWithoutHint: after(15 * MINUTE),
  },
  // developers.facebook.com/docs/instagram-platform/content-publishing: "100 API-published posts
  // within a 24-hour moving period" per account, carousels counting once; the
  // content_publishing_limit reference's example still answers quota_total 50, so Herald counts 50
  // (conservative). The refusal (2207042) names no time: hence counted, not paused.
  instagram: {
    limits: [
      {
        id: 'p24h',
        scope: 'channel',
        limit: 50,
        window: rolling(24 * 3600, 24),
        unit: 'post',
        counted: true,
        what: '50 posts per 24 hours per account',
      },
    ],
    pauseWithoutHint: after(HOUR),
  },
  // developers.facebook.com/docs/graph-api/overview/rate-limiting: Page calls are limited per
  // 24 h by the Page's engaged users (Business Use Case limits); no post count is documented.
  facebook: {
    limits: [
      {
        id: 'c24h',
        scope: 'channel',
        limit: 4_800,
        window: rolling(24 * 3600, 24),
        unit: 'post',
        counted: false,
        what: 'calls per 24 hours per Page (4,800 × engaged users)',
      },
    ],
    pauseWithoutHint: after(HOUR),
  },
  // developers.facebook.com/docs/threads/overview#rate-limiting: 250 API-published posts per
  // 24-hour moving period per profile. Generous next to a burst: not counted.
  threads: {
    limits: [
      {
        id: 'p24h',
        scope: 'channel',
        limit: 250,
        window: rolling(24 * 3600, 24),
        unit: 'post',
        counted: false,
        what: '250 posts per 24 hours per profile',
      },
    ],
    pauseWithoutHint: after(HOUR),
  },
  // learn.microsoft.com/linkedin/shared/api-guide/concepts/rate-limits: daily limits per member
  // and per app, reset at midnight UTC; the values are shown per app in the developer portal, not
  // published (150 posts a day per member is the figure integrators report). The connector turns a
  // "DAY" throttle into a wait until midnight UTC and an APPLICATION one into the app's scope.
  linkedin: {
    limits: [
      {
        id: 'm1d',
        scope: 'channel',
        limit: 150,
        window: { kind: 'daily', timeZone: 'UTC' },
        unit: 'post',
        counted: false,
        what: 'about 150 posts per day per member (UTC day)',
      },
    ],
    // A 429 without a daily marker is LinkedIn's infrastructure protection: short.
    pauseWithoutHint: after(5 * MINUTE),
  },
  // developers.tiktok.com/doc/content-posting-api-reference-direct-post: each user token may
  // initialise 6 posts per minute; the daily cap per creator is not published
  // (spam_risk_too_many_posts), nor the app's daily cap of posting users (reached_active_user_cap).
  tiktok: {
    limits: [
      {
        id: 'u1m',
        scope: 'channel',
        limit: 6,
        window: rolling(60, 6),
        unit: 'post',
        counted: false,
        what: '6 post requests per minute per account',
      },
    ],
    pauseWithoutHint: (scope, now) => new Date(now.getTime() + (scope === 'app' ? HOUR : MINUTE)),
  },
  // developers.google.com/youtube/v3/determine_quota_cost: videos.insert has its own quota bucket
  // of 100 calls per day per Google Cloud project, reset at midnight Pacific Time. A burst reaches
  // it and the refusal (quotaExceeded) names no time: counted for the whole app.
  youtube: {
    limits: [
      {
        id: 'up1d',
        scope: 'app',
        limit: 100,
        window: { kind: 'daily', timeZone: 'America/Los_Angeles' },
        unit: 'post',
        counted: true,
        what: '100 uploads per day per Google Cloud project (Pacific day)',
      },
    ],
    pauseWithoutHint: (scope, now) =>
      scope === 'app'
        ? startOfDay(localDay(now.getTime(), PACIFIC) + 1, PACIFIC)
        : new Date(now.getTime() + 5 * MINUTE),
  },
  // developers.pinterest.com/docs/reference/rate-limits: Standard access allows 100 calls per
  // second per user per app, with lower per-minute limits per category; Trial access 1,000 calls
  // per day per app. Not counted: the 429 carries X-RateLimit-Reset.
  pinterest: {
    limits: [
      {
        id: 'u1m',
        scope: 'channel',
        limit: 100,
        window: rolling(60, 6),
        unit: 'post',
        counted: false,
        what: 'write calls per minute per account (per category; conservative figure)',
      },
    ],
    pauseWithoutHint: after(MINUTE),
  },
  // docs.bsky.app/docs/advanced-guides/rate-limits: 5,000 points per hour and 35,000 per day per
  // account, a created record costing 3 (1,666 posts an hour); 3,000 requests per 5 minutes per
  // IP. Not counted: the 429 carries ratelimit-reset.
  bluesky: {
    limits: [
      {
        id: 'p1h',
        scope: 'channel',
        limit: 1_666,
        window: rolling(3600, 12),
        unit: 'post',
        counted: false,
        what: '1,666 posts per hour per account (5,000 points)',
      },
    ],
    pauseWithoutHint: after(5 * MINUTE),
  },
  // Mastodon's defaults (config/initializers/rack_attack.rb, app/lib/rate_limiter.rb;
  // docs.joinmastodon.org/api/rate-limits): 300 requests per 5 minutes per token, 300 statuses per
  // 3 hours and 30 media uploads per 30 minutes per account; instances may change them. A burst of
  // posts with images reaches the media limit first: counted per media item.
  mastodon: {
    limits: [
      {
        id: 'm30m',
        scope: 'channel',
        limit: 30,
        window: rolling(30 * 60, 30),
        unit: 'media',
        counted: true,
        what: '30 media uploads per 30 minutes per account',
      },
      threeHundredPostsPer3Hours('s3h'),
    ],
    pauseWithoutHint: after(5 * MINUTE),
  },
};

function rolling(seconds: number, buckets: number): PaceWindow {
  return { kind: 'rolling', seconds, buckets };
}

/** The longest pause a platform's answer can impose (a hint beyond it is read as a day). */
export const MAX_PAUSE_MS = DAY;

// ---- windows ------------------------------------------------------------------------------------

const PACIFIC = 'America/Los_Angeles';
const formatters = new Map<string, Intl.DateTimeFormat>();

/** ms to add to a UTC instant to read its wall-clock time in `timeZone`. */
function offsetMs(t: number, timeZone: string): number {
  if (timeZone === 'UTC') return 0;
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(t)).map((x) => [x.type, Number(x.value)]));
  const wall = Date.UTC(p.year as number, (p.month as number) - 1, p.day, p.hour, p.minute, p.second);
  return wall - (t - (((t % 1000) + 1000) % 1000));
}

/** The calendar day (days since 1970-01-01) of instant `t` in `timeZone`. */
export function localDay(t: number, timeZone: string): number {
  return Math.floor((t + offsetMs(t, timeZone)) / DAY);
}

/** The instant `day` begins in `timeZone` (its local midnight). */
export function startOfDay(day: number, timeZone: string): Date {
  const wall = day * DAY;
  const guess = wall - offsetMs(wall, timeZone);
  return new Date(wall - offsetMs(guess, timeZone));
}

/** The bucket instant `t` (ms) falls in. */
export function bucketOf(w: PaceWindow, t: number): number {
  return w.kind === 'daily' ? localDay(t, w.timeZone) : Math.floor(t / bucketMs(w));
}

/** The oldest bucket still counted while `current` is the current one. */
export function liveFrom(w: PaceWindow, current: number): number {
  return w.kind === 'daily' ? current : current - w.buckets;
}

/** When bucket `b` stops counting. */
export function freedAt(w: PaceWindow, b: number): Date {
  return w.kind === 'daily' ? startOfDay(b + 1, w.timeZone) : new Date((b + w.buckets + 1) * bucketMs(w));
}

function bucketMs(w: Extract<PaceWindow, { kind: 'rolling' }>): number {
  return (w.seconds * 1000) / w.buckets;
}

// ---- the decision -------------------------------------------------------------------------------

/** A scope told to wait (stored on the channel, or on the platform app's pacing item). */
export interface Pause {
  /** ISO 8601. */
  until: string;
  reason: string;
}

/** One counted window as stored: its total, its oldest bucket, and each bucket's count. */
export interface WindowCounts {
  total: number;
  /** Index of the oldest bucket present; null when none is. */
  oldest: number | null;
  buckets: ReadonlyMap<number, number>;
}

export interface PaceState {
  platform: Platform;
  channelPause?: Pause | null | undefined;
  appPause?: Pause | null | undefined;
  /** The counted windows read for each scope, by limit id (missing: nothing counted yet). */
  counts?: { channel?: Record<string, WindowCounts>; app?: Record<string, WindowCounts> } | undefined;
  /** Media items of the delivery (the cost of a per-media limit). */
  media: number;
}

export type PaceDecision = { go: true } | { go: false; until: Date; reason: string; scope: PaceScope };

/** The limits a delivery takes a slot in before it is sent: counted, of `scope`, costing > 0. */
export function countedLimits(
  platform: Platform,
  scope: PaceScope,
  media: number,
): Array<{ limit: PaceLimit; cost: number }> {
  return PACING[platform].limits
    .filter((l) => l.counted && l.scope === scope)
    .map((l) => ({ limit: l, cost: costOf(l, media) }))
    .filter((x) => x.cost > 0);
}

/** A delivery's cost against `l`; never more than the limit itself (it could never fit). */
export function costOf(l: PaceLimit, media: number): number {
  return Math.min(l.limit, l.unit === 'media' ? Math.max(0, Math.floor(media)) : 1);
}

/** The sum of the buckets that still count at `now`. */
export function liveCount(l: PaceLimit, c: WindowCounts | undefined, now: Date): number {
  if (!c) return 0;
  const from = liveFrom(l.window, bucketOf(l.window, now.getTime()));
  let sum = 0;
  for (const [b, n] of c.buckets) if (b >= from) sum += n;
  return sum;
}

/**
 * Whether a delivery may be sent now: not while its channel or its platform app is paused, nor
 * while a counted window has no room for its cost. When it must wait, until when (the latest of
 * every reason, so it is not turned back twice) and why.
 */
export function decide(state: PaceState, now: Date): PaceDecision {
  const waits: Array<{ until: Date; reason: string; scope: PaceScope }> = [];
  for (const [scope, pause] of [
    ['channel', state.channelPause],
    ['app', state.appPause],
  ] as const) {
    const until = pause ? Date.parse(pause.until) : Number.NaN;
    if (pause && until > now.getTime()) waits.push({ until: new Date(until), reason: pause.reason, scope });
  }
  for (const scope of ['channel', 'app'] as const) {
    for (const { limit, cost } of countedLimits(state.platform, scope, state.media)) {
      const counts = state.counts?.[scope]?.[limit.id];
      const full = windowFull(limit, counts, cost, now);
      if (full)
        waits.push({
          until: full,
          reason: `${state.platform}: ${limit.what} reached; the next slot opens at ${full.toISOString()}`,
          scope,
        });
    }
  }
  if (!waits.length) return { go: true };
  const latest = waits.reduce((a, b) => (b.until > a.until ? b : a));
  return { go: false, ...latest };
}

/** When a window with `counts` has room for `cost` again; null when it has room now. */
export function windowFull(
  l: PaceLimit,
  counts: WindowCounts | undefined,
  cost: number,
  now: Date,
): Date | null {
  const live = liveCount(l, counts, now);
  if (live + cost <= l.limit) return null;
  const from = liveFrom(l.window, bucketOf(l.window, now.getTime()));
  const ordered = [...(counts?.buckets ?? new Map<number, number>())]
    .filter(([b]) => b >= from)
    .sort(([a], [b]) => a - b);
  let need = live + cost - l.limit;
  for (const [b, n] of ordered) {
    need -= n;
    if (need <= 0) return freedAt(l.window, b);
  }
  return freedAt(l.window, bucketOf(l.window, now.getTime()));
}

/**
 * Taking `cost` in a window whose stored state is `counts`: the buckets no longer counted (to
 * remove, each with the count read, so a concurrent change is noticed), their sum, the new oldest
 * bucket, and the bound the stored total must not exceed for the take to fit. The adapter writes it
 * as one conditional UpdateItem.
 */
export function compaction(
  l: PaceLimit,
  counts: WindowCounts | undefined,
  cost: number,
  now: Date,
): { current: number; expired: Array<[number, number]>; expiredSum: number; oldest: number; bound: number } {
  const current = bucketOf(l.window, now.getTime());
  const from = liveFrom(l.window, current);
  const expired: Array<[number, number]> = [];
  let oldest = current;
  for (const [b, n] of counts?.buckets ?? []) {
    if (b < from) expired.push([b, n]);
    else oldest = Math.min(oldest, b);
  }
  const expiredSum = expired.reduce((s, [, n]) => s + n, 0);
  return { current, expired, expiredSum, oldest, bound: l.limit - cost + expiredSum };
}

/**
 * How long a pacing item outlives its last write (DynamoDB's TTL then removes it): past every
 * window it counts (a day at most, two days for a calendar day) and every pause (a day at most).
 */
export const PACE_ITEM_LIFETIME_MS = 4 * DAY;

// ---- after a refusal ----------------------------------------------------------------------------

/** What a connector reports with a refusal (PlatformError's category and options). */
export interface RateLimitRefusal {
  category: ErrorCategory;
  retryAfterSeconds?: number | undefined;
  /** Whose limit was spent: the account's (default) or the whole platform app's. */
  scope?: PaceScope | undefined;
}

/**
 * The pause a refusal imposes: for a rate_limited refusal, its scope (the channel unless the
 * platform said the app's limit was spent) until the time it named, or the platform's default;
 * never longer than a day, never less than a second. null for any other failure.
 */
export function pauseAfter(
  platform: Platform,
  refusal: RateLimitRefusal,
  now: Date,
): { scope: PaceScope; pause: Pause } | null {
  if (refusal.category !== 'rate_limited') return null;
  const scope = refusal.scope ?? 'channel';
  const hint = refusal.retryAfterSeconds;
  let until =
    hint !== undefined && Number.isFinite(hint) && hint >= 0
      ? now.getTime() + Math.ceil(hint) * 1000
      : PACING[platform].pauseWithoutHint(scope, now).getTime();
  until = Math.min(now.getTime() + MAX_PAUSE_MS, Math.max(now.getTime() + 1000, until));
  const at = new Date(until).toISOString();
  const reason =
    scope === 'app'
      ? `${platform} refused Herald's app for its rate limit: nothing is sent to any ${platform} channel before ${at}`
      : `${platform} refused this account for its rate limit: nothing is sent to it before ${at}`;
  return { scope, pause: { until: at, reason } };
}

/** The pause that ends later (null when neither is in force at `now`). */
export function laterPause(
  a: Pause | null | undefined,
  b: Pause | null | undefined,
  now: Date,
): Pause | null {
  const live = [a, b].filter((p): p is Pause => !!p && Date.parse(p.until) > now.getTime());
  if (!live.length) return null;
  return live.reduce((x, y) => (Date.parse(y.until) > Date.parse(x.until) ? y : x));
}

/** Seconds from `now` until `until` (at least 1): the retry hint that lands on the pause's end. */
export function secondsUntil(until: Date | string, now: Date): number {
  return Math.max(
    1,
    Math.ceil(((typeof until === 'string' ? Date.parse(until) : until.getTime()) - now.getTime()) / 1000),
  );
}

/**
 * A delivery turned back by pacing before anything was sent: due again when the wait ends, as a
 * `retrying` delivery (so the sweeper's watchdog and the "not due yet" skip treat it as they treat
 * a retry), without spending an attempt — `undoClaim` gives back the one the claim counted (a
 * fresh claim counts one; taking over an abandoned send does not). An unresolved earlier attempt
 * stays unresolved (`unresolved_since` is kept): the wait changes nothing about it.
 */
export function deferredDelivery(
  d: DeliveryRecord,
  wait: { until: Date; reason: string },
  now: Date,
  opts: { undoClaim: boolean },
): DeliveryRecord {
  return {
    ...d,
    stage: 'retrying',
    attempts: opts.undoClaim ? Math.max(0, d.attempts - 1) : d.attempts,
    error: wait.reason.slice(0, 1000),
    error_category: 'rate_limited',
    lease_until: undefined,
    claim_id: undefined,
    next_attempt_at: wait.until.toISOString(),
    updated_at: now.toISOString(),
  };
}
