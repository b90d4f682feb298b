import { createHash } from 'node:crypto';
import type { Engagement } from '#adapters/platforms/types';
import { applyOrderedStats, applyStats, type StatsDelta, type Uncounted } from '#adapters/stats';
import { isDone } from '#core/delivery';
import type { Platform } from '#core/platforms';
import type { DeliveryRecord, PostRecord } from '#core/posts';
import type { Change } from '#usecases/support/relay-post-changes';

export const ENGAGEMENT_METRICS = ['impressions', 'likes', 'comments', 'shares', 'clicks'] as const;

/** A channel's engagement as stored on the post by the engagement sync. */
export interface PostEngagement extends Engagement {
  platform: Platform;
  /** When these values were fetched (written only when they changed). */
  synced_at: string;
}

/** A post as stored, with the engagement the sync keeps per channel (`engagement[channelId]`). */
export type EngagedPost = PostRecord & { engagement?: Record<string, PostEngagement> };

// A delivery unpublished since still published once: taking it down changes no outcome count.
const isPublished = (d: DeliveryRecord | undefined) => (d && isDone(d) ? 1 : 0);
const isFailed = (d: DeliveryRecord | undefined) => (d?.stage === 'failed' ? 1 : 0);

/** The UTC day a post reached its final status: published_at for a published post, else its last update. */
function dayOf(post: PostRecord): string {
  return (post.status === 'published' ? (post.published_at ?? post.updated_at) : post.updated_at).slice(
    0,
    10,
  );
}

/**
 * What one change of a post adds to the analytics counters (pure). Deliveries count per
 * (post, channel): total when the channel's delivery first appears, published when it enters
 * published, failed when it enters failed and −1 when it leaves failed (republishing re-queues it),
 * so a channel retried until it publishes ends up counted once, as published. The post entering
 * published or failed counts on that UTC day. Engagement adds the difference between the stored
 * values before and after the change. A deleted post changes nothing: the counters are history.
 */
export function statsDelta(change: Change<EngagedPost>): StatsDelta {
  const delta: StatsDelta = {
    deliveries: { total: 0, published: 0, failed: 0 },
    engagement: {},
    syncedPlatforms: [],
    day: null,
  };
  const { old: before, new: after } = change;
  if (!after) return delta;
  for (const [channelId, d] of Object.entries(after.deliveries)) {
    const prev = before?.deliveries[channelId];
    if (!prev) delta.deliveries.total += 1;
    delta.deliveries.published += isPublished(d) - isPublished(prev);
    delta.deliveries.failed += isFailed(d) - isFailed(prev);
  }
  if (after.status !== before?.status && (after.status === 'published' || after.status === 'failed')) {
    delta.day = {
      date: dayOf(after),
      published: after.status === 'published' ? 1 : 0,
      failed: after.status === 'failed' ? 1 : 0,
    };
  }
  const synced = new Set<string>();
  for (const [channelId, e] of Object.entries(after.engagement ?? {})) {
    const prev = before?.engagement?.[channelId];
    const add = engagementDelta(prev, e);
    if (!add) continue;
    const total = delta.engagement[e.platform] ?? {};
    for (const m of ENGAGEMENT_METRICS) total[m] = (total[m] ?? 0) + add[m];
    delta.engagement[e.platform] = total;
    synced.add(e.platform);
  }
  delta.syncedPlatforms = [...synced].sort();
  return delta;
}

/** new − previously stored, per metric; null when nothing changed (and it was stored before). */
export function engagementDelta(prev: Engagement | undefined, next: Engagement): Engagement | null {
  const d = {} as Engagement;
  let changed = prev === undefined;
  for (const m of ENGAGEMENT_METRICS) {
    d[m] = next[m] - (prev?.[m] ?? 0);
    if (d[m] !== 0) changed = true;
  }
  return changed ? d : null;
}

const hasCounts = (d: StatsDelta) =>
  d.day !== null ||
  d.syncedPlatforms.length > 0 ||
  d.deliveries.total !== 0 ||
  d.deliveries.published !== 0 ||
  d.deliveries.failed !== 0;

/**
 * A post changed (table stream, at least once), counted on its own: what the change adds to the
 * deliveries, timeline and engagement counters is applied in one transaction with a marker derived
 * from the stream record and the post version, so a retried record is counted once. The relay
 * counts this way only the changes of a batch that does not name its stream shard
 * (recordBatchStats).
 */
export async function recordStats(change: Change<EngagedPost>): Promise<void> {
  const post = change.new;
  if (!post) return;
  const delta = statsDelta(change);
  if (!hasCounts(delta)) return;
  const hash = createHash('sha256')
    .update(`${change.eventId}|${post.id}|${post.version}|stats`)
    .digest('base64url');
  await applyStats(post.org_id, hash, delta, change.timeMs);
}

/** A post change and its place in its shard of the table stream. */
export interface StreamedChange extends Change<EngagedPost> {
  sequence: string;
}

/**
 * Primary course: a batch of post changes from one shard of the table stream (at least once; in
 * order along the shard; after a failure, handed over again from the earliest failed record). The
 * deltas of each organization's changes are summed and written once per counter item — the org's
 * and one per UTC day with an outcome — each write guarded by the shard's mark on the item, so a
 * change handed over again is never counted twice and one that was not counted is never skipped
 * (applyOrderedStats). Engagement totals follow from the post's own writes: the sync stores each
 * post's values with a versioned write and this adds the difference between the old and new image
 * — the post item is the single source of truth, and no crash between two writes can count a
 * delta twice or lose it. Returns, for each write that failed, the earliest record it had to count.
 * A batch without its shard (a mapping without a tumbling window) is counted change by change
 * (recordStats).
 */
export async function recordBatchStats(
  changes: readonly StreamedChange[],
  shardId: string | undefined,
): Promise<Uncounted[]> {
  if (shardId === undefined) {
    const results = await Promise.allSettled(changes.map(recordStats));
    return changes.flatMap((c, i) => {
      const r = results[i];
      return r?.status === 'rejected' ? [{ sequence: c.sequence, error: r.reason }] : [];
    });
  }
  const byOrg = new Map<string, Array<{ sequence: string; timeMs: number; delta: StatsDelta }>>();
  for (const change of changes) {
    if (!change.new) continue;
    const delta = statsDelta(change);
    if (!hasCounts(delta)) continue;
    const org = change.new.org_id;
    byOrg.set(org, [...(byOrg.get(org) ?? []), { sequence: change.sequence, timeMs: change.timeMs, delta }]);
  }
  const failed = await Promise.all(
    [...byOrg].map(([orgId, deltas]) => applyOrderedStats(orgId, shardId, deltas)),
  );
  return failed.flat();
}
