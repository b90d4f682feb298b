import { credentialRedactor, getChannelWithCredentials } from '#adapters/channel-credentials';
import { connectorFor } from '#adapters/platforms/index';
import { type Engagement, PlatformError } from '#adapters/platforms/types';
import { loadPosts, mutatePost } from '#adapters/posts';
import { mapLimit } from '#core/concurrency';
import type { EngagementSyncMessage } from '#core/messages';
import { logger } from '#shared/logger';
import { channelTokens } from '#usecases/support/channel-tokens';
import {
  ENGAGEMENT_METRICS,
  type EngagedPost,
  engagementDelta,
  type PostEngagement,
} from '#usecases/support/stats';

// The engagement sync's worker: one message is up to 100 posts published in the last 7 days (the
// finder, usecases/engagement-sync.ts). Redelivery is harmless: a post stores the platforms'
// numbers as they are (not increments), a post whose numbers did not move is not written, and the
// org totals are the stream relay's, which adds each written post's new − previous — a metric read
// twice is stored once and counted once.

/** Channels asked for metrics at once, and posts written at once (per message). */
const CHANNEL_CONCURRENCY = 4;
const WRITE_CONCURRENCY = 8;

export interface SyncResult {
  posts: number;
  channels: number;
  /** Posts whose stored engagement changed. */
  updated: number;
  /** Channels skipped: gone, not connected, or their platform has no metrics. */
  skipped: number;
  /** Channels whose platform refused or failed the metrics request. */
  failed: number;
}

/** Platform numbers as stored: non-negative integers (a missing metric reads 0). */
function clean(e: Partial<Engagement>): Engagement {
  const out = {} as Engagement;
  for (const m of ENGAGEMENT_METRICS) {
    const v = Number(e[m] ?? 0);
    out[m] = Number.isFinite(v) ? Math.max(0, Math.round(v)) : 0;
  }
  return out;
}

interface ChannelGroup {
  orgId: string;
  channelId: string;
  /** externalId → postId */
  posts: Map<string, string>;
}

/** Published deliveries with a platform id, grouped by (org, channel). */
function groupByChannel(posts: EngagedPost[]): ChannelGroup[] {
  const groups = new Map<string, ChannelGroup>();
  for (const post of posts) {
    if (post.status !== 'published') continue;
    for (const d of Object.values(post.deliveries)) {
      if (d.stage !== 'published' || !d.external_id) continue;
      const id = `${post.org_id}|${d.channel_id}`;
      let group = groups.get(id);
      if (!group) {
        group = { orgId: post.org_id, channelId: d.channel_id, posts: new Map() };
        groups.set(id, group);
      }
      group.posts.set(d.external_id, post.id);
    }
  }
  return [...groups.values()];
}

type Fetched =
  | { kind: 'ok'; platform: PostEngagement['platform']; metrics: Record<string, Engagement> }
  | { kind: 'skipped' }
  | { kind: 'failed' };

async function fetchMetrics(group: ChannelGroup): Promise<Fetched> {
  const { channel, credentials, version } = await getChannelWithCredentials(group.orgId, group.channelId);
  if (!channel || channel.status === 'disconnected' || channel.status === 'reauth_required')
    return { kind: 'skipped' };
  const connector = await connectorFor(channel.platform);
  if (!connector.metrics) return { kind: 'skipped' };
  const creds = credentialRedactor();
  creds.remember(credentials);
  try {
    const metrics = await connector.metrics({
      channel: { id: channel.id, handle: channel.handle, platform: channel.platform },
      credentials,
      externalIds: [...group.posts.keys()],
      tokens: channelTokens({
        orgId: group.orgId,
        channelId: group.channelId,
        platform: channel.platform,
        credentials,
        version,
        remember: creds.remember,
      }),
    });
    return { kind: 'ok', platform: channel.platform, metrics };
  } catch (err) {
    // One platform's outage, rate limit or revoked token must not hold up every other channel;
    // the next run tries again. Anything else (a bug, DynamoDB) fails the run.
    if (!(err instanceof PlatformError)) throw err;
    logger.warn('engagement sync: metrics failed', {
      org_id: group.orgId,
      channel_id: group.channelId,
      platform: channel.platform,
      category: err.category,
      error: creds.redact(err.message),
    });
    return { kind: 'failed' };
  }
}

/** The post with the new engagement of its channels; null when nothing changed (no write, no stream record). */
export function withEngagement(
  post: EngagedPost,
  fresh: Map<string, Omit<PostEngagement, 'synced_at'>>,
  syncedAt: string,
): EngagedPost | null {
  const engagement = { ...(post.engagement ?? {}) };
  let changed = false;
  for (const [channelId, e] of fresh) {
    if (post.deliveries[channelId]?.stage !== 'published') continue;
    const prev = engagement[channelId];
    if (prev && prev.platform === e.platform && !engagementDelta(prev, e)) continue;
    engagement[channelId] = { ...e, synced_at: syncedAt };
    changed = true;
  }
  if (!changed) return null;
  const next: EngagedPost = { ...post, engagement };
  return next;
}

/**
 * Primary course: read the message's posts, group their published deliveries by channel, ask each
 * channel's platform for the metrics of those posts, and store each post's engagement on the post
 * with a versioned write. The org totals are not written here: the stream relay adds each post's
 * difference (recordBatchStats), so a redelivered message, a retried or crashed sync can neither
 * count twice nor lose a delta. A platform that fails is logged and skipped until the next hour's
 * run; any other error fails the message (it comes back, then goes to the queue's DLQ).
 */
export async function syncEngagementBatch(msg: EngagementSyncMessage, now: Date): Promise<SyncResult> {
  const posts: EngagedPost[] = await loadPosts(
    msg.posts.map((p) => ({ orgId: p.org_id, postId: p.post_id })),
  );
  const groups = groupByChannel(posts);
  const fetched = await mapLimit(groups, CHANNEL_CONCURRENCY, fetchMetrics);

  // postKey → channelId → engagement
  const byPost = new Map<
    string,
    { orgId: string; postId: string; fresh: Map<string, Omit<PostEngagement, 'synced_at'>> }
  >();
  groups.forEach((group, i) => {
    const f = fetched[i];
    if (f?.kind !== 'ok') return;
    for (const [externalId, postId] of group.posts) {
      const m = f.metrics[externalId];
      if (!m) continue;
      const key = `${group.orgId}|${postId}`;
      let entry = byPost.get(key);
      if (!entry) {
        entry = { orgId: group.orgId, postId, fresh: new Map() };
        byPost.set(key, entry);
      }
      entry.fresh.set(group.channelId, { platform: f.platform, ...clean(m) });
    }
  });

  // Only posts whose values moved are written (compared with the copy just read, then again
  // under the version check against the latest one).
  const loaded = new Map(posts.map((p) => [`${p.org_id}|${p.id}`, p]));
  const syncedAt = now.toISOString();
  const toWrite = [...byPost.entries()].filter(([key, e]) => {
    const post = loaded.get(key);
    return post !== undefined && withEngagement(post, e.fresh, syncedAt) !== null;
  });
  const written = await mapLimit(toWrite, WRITE_CONCURRENCY, async ([, e]) => {
    const res = await mutatePost(e.orgId, e.postId, (post) => withEngagement(post, e.fresh, syncedAt));
    return res !== null && res.after !== res.before;
  });

  return {
    posts: posts.length,
    channels: groups.length,
    updated: written.filter(Boolean).length,
    skipped: fetched.filter((f) => f.kind === 'skipped').length,
    failed: fetched.filter((f) => f.kind === 'failed').length,
  };
}
