import { listApiKeys } from '#adapters/api-keys';
import { listUsers } from '#adapters/members';
import { countPostsByStatus } from '#adapters/posts';
import { anyRole } from '#core/accounts';
import type { Actor } from '#core/people';
import type { PostResource } from '#core/posts';
import { MAX_ENDPOINTS_PER_ORG } from '#core/webhooks';
import { getDeliveryStats } from '#usecases/get-analytics';
import { getUsage } from '#usecases/get-usage';
import { listChannelsOf } from '#usecases/list-channels';
import { listPosts } from '#usecases/list-posts';
import { listWebhookEndpoints } from '#usecases/list-webhook-endpoints';
import { authorizeAct, unmetered } from '#usecases/support/acts';

// The console's overview: the workspace's state in one look — the month's meters and the 14-day
// publish timeline (the very answers of getUsage and getAnalytics' stream-kept part), and what
// needs a person. Read through the API's own use cases; a person looking is not an API request, so
// nothing is metered. It never counts every post: getAnalytics' per-status counts read each post's
// index entry (≈ 160 RCU at 1,000 posts); the overview counts only the posts waiting for approval.

/** How many of each kind of item "needs a person" lists (the count says how many there are in all). */
export const OVERVIEW_ITEMS = 5;
/** Failed posts older than this are history, not something to act on. */
export const FAILED_WITHIN_DAYS = 7;

export interface Overview {
  usage: Awaited<ReturnType<typeof getUsage>>;
  /** Deliveries and the 14-day timeline, as getAnalytics answers them. */
  stats: Awaited<ReturnType<typeof getDeliveryStats>>;
  needs: {
    /** Channels that stopped publishing until a person acts: reauth_required or error. */
    channels: Awaited<ReturnType<typeof listChannelsOf>>['data'];
    /** The newest posts waiting for approval, and how many wait in all. */
    approvals: { posts: PostResource[]; total: number };
    /** Posts that failed in the last FAILED_WITHIN_DAYS days, newest first. */
    failed: PostResource[];
    /** Endpoints the failure ladder turned off. */
    endpoints: Awaited<ReturnType<typeof listWebhookEndpoints>>['data'];
  };
  /** A new workspace's first steps, each true once done. */
  start: {
    /** A channel is connected (whatever its health). */
    channel: boolean;
    /** An API key is active. */
    key: boolean;
    /** Someone besides the first owner is a member or invited. */
    people: boolean;
  };
}

/**
 * getOverview. Every member. One round trip after the session: the role check and every read run
 * at once (the reads are of the person's own organization, and nothing is answered before the
 * check has passed).
 */
export async function getOverview(a: {
  orgId: string;
  actor: Actor;
  now: Date;
  cursorSecret: string;
}): Promise<Overview> {
  const nowMs = a.now.getTime();
  const [, usage, stats, waiting, channels, approvals, failed, endpoints, keys, users] = await Promise.all([
    authorizeAct(a.orgId, a.actor, anyRole, 'seeing the workspace'),
    getUsage(a.orgId, unmetered, nowMs),
    getDeliveryStats(a.orgId, nowMs),
    countPostsByStatus(a.orgId, 'needs_approval'),
    listChannelsOf(a.orgId),
    listPosts(a.orgId, { status: 'needs_approval', limit: OVERVIEW_ITEMS }, a.cursorSecret),
    listPosts(a.orgId, { status: 'failed', limit: OVERVIEW_ITEMS }, a.cursorSecret),
    // An organization has at most MAX_ENDPOINTS_PER_ORG endpoints: one page holds them all.
    listWebhookEndpoints(a.orgId, { limit: MAX_ENDPOINTS_PER_ORG }, a.cursorSecret),
    listApiKeys(a.orgId),
    listUsers(a.orgId),
  ]);
  const since = nowMs - FAILED_WITHIN_DAYS * 86_400_000;
  return {
    usage,
    stats,
    needs: {
      channels: channels.data.filter((c) => c.status === 'reauth_required' || c.status === 'error'),
      approvals: { posts: approvals.data, total: Math.max(waiting, approvals.data.length) },
      failed: failed.data.filter((p) => Date.parse(p.updated_at) >= since),
      endpoints: endpoints.data.filter((e) => e.state === 'auto_disabled'),
    },
    start: {
      channel: channels.data.some((c) => c.status !== 'disconnected'),
      key: keys.some((k) => !k.revoked_at),
      people: users.length > 1,
    },
  };
}
