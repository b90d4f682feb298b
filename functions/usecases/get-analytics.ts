import type { Engagement } from '#adapters/platforms/types';
import { countPostsByStatus } from '#adapters/posts';
import { readStats } from '#adapters/stats';
import type { Admission } from '#core/accounts';
import { PLATFORMS, POST_STATUSES, type PostStatus } from '#core/constants';
import { lastUtcDays } from '#core/utc-days';
import { ENGAGEMENT_METRICS } from '#usecases/support/stats';

/** The publish timeline covers this many UTC days, oldest first, today last (docs/api/analytics.md). */
export const TIMELINE_DAYS = 14;

/** The UTC days (YYYY-MM-DD) of the timeline, oldest first, today last. */
export const timelineDays = (nowMs: number, days = TIMELINE_DAYS): string[] => lastUtcDays(nowMs, days);

const count = (n: number) => Math.max(0, Math.round(n));

/**
 * getAnalytics. Primary course: while the request is being admitted, count the org's posts per
 * status (GSI1, one Query each) and read the stream-kept counters (the org's STATS item and the 14
 * day items, one BatchGetItem) — one round trip in all on a warm path. Deliveries count per
 * (post, channel): `total` every channel a post was sent to (in flight included), `published` and
 * `failed` their outcomes; success_rate is published / (published + failed), null before any.
 */
export async function getAnalytics(orgId: string, admitted: () => Promise<Admission>, nowMs: number) {
  const [admission, counts, delivered] = await Promise.all([
    admitted(),
    Promise.all(POST_STATUSES.map((s) => countPostsByStatus(orgId, s))),
    getDeliveryStats(orgId, nowMs),
  ]);
  if (!admission.allowed) throw admission.error;

  const posts = Object.fromEntries(POST_STATUSES.map((s, i) => [s, count(counts[i] ?? 0)])) as Record<
    PostStatus,
    number
  >;
  return {
    posts: { total: POST_STATUSES.reduce((sum, s) => sum + posts[s], 0), ...posts },
    ...delivered,
    generated_at: new Date(nowMs).toISOString(),
  };
}

/**
 * The stream-kept part of getAnalytics — deliveries, the 14-day timeline, engagement — from one
 * BatchGetItem, whatever the number of posts (the per-status counts read every post's index entry).
 * The console's overview shows these very numbers.
 */
export async function getDeliveryStats(orgId: string, nowMs: number) {
  const days = timelineDays(nowMs);
  const { stats, days: byDay } = await readStats(orgId, days);
  // Counters that started after deliveries already existed can lag (a delivery created before them
  // and finished after): never answer less than the outcomes, nor a negative count.
  const published = count(stats.deliveries.published);
  const failed = count(stats.deliveries.failed);
  const engagement: Engagement = { impressions: 0, likes: 0, comments: 0, shares: 0, clicks: 0 };
  for (const totals of Object.values(stats.engagement)) {
    for (const m of ENGAGEMENT_METRICS) engagement[m] += totals[m] ?? 0;
  }
  for (const m of ENGAGEMENT_METRICS) engagement[m] = count(engagement[m]);
  return {
    deliveries: {
      total: Math.max(count(stats.deliveries.total), published + failed),
      published,
      failed,
      success_rate: published + failed === 0 ? null : published / (published + failed),
    },
    timeline: days.map((date) => {
      const d = byDay.get(date);
      return { date, published: count(d?.published ?? 0), failed: count(d?.failed ?? 0) };
    }),
    engagement,
    synced_platforms: PLATFORMS.filter((p) => stats.syncedPlatforms.includes(p)),
  };
}
