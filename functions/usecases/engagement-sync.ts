import { postsPublishedOn } from '#adapters/posts';
import { sendEngagementSyncs } from '#adapters/queues';
import type { EngagementSyncMessage } from '#core/messages';
import { lastUtcDays } from '#core/utc-days';

// The engagement sync's finder: the part that scales the sync with the number of posts (reading
// them, asking the platforms and storing the answers is the worker's,
// usecases/engagement-sync-worker.ts). Every hour in AWS (every minute in the local stack) it reads
// the keys of the posts published in the last 7 UTC days from the due-work index — no post itself
// — and sends them, POSTS_PER_MESSAGE to a message, to the engagement-sync queue, which a bounded
// number of worker batches consume. A batch of posts (not a channel) is the unit so that a post is
// written once per run with all its channels' numbers; the platforms' metrics calls take 25 posts
// or one at a time anyway. Nothing is kept between runs: a message lost or dead-lettered is sent
// again by the next hour's run.

/** Posts published this many UTC days back (today included) have their engagement synced. */
export const SYNC_DAYS = 7;
/** Posts one message carries: one worker's reads, metrics requests and writes, within its timeout. */
export const POSTS_PER_MESSAGE = 100;

export interface FindResult {
  /** Posts published in the window. */
  posts: number;
  /** Messages sent to the workers. */
  sent: number;
}

/** The UTC days (YYYY-MM-DD) from `days - 1` days ago to today. */
export const syncDays = (now: Date, days = SYNC_DAYS): string[] => lastUtcDays(now.getTime(), days);

/**
 * The posts cut into messages, an organization's posts together (its channels are then asked in
 * as few messages as can be).
 */
export function engagementMessages(refs: Array<{ orgId: string; postId: string }>): EngagementSyncMessage[] {
  const sorted = [...refs].sort((a, b) =>
    a.orgId === b.orgId ? a.postId.localeCompare(b.postId) : a.orgId.localeCompare(b.orgId),
  );
  const messages: EngagementSyncMessage[] = [];
  for (let i = 0; i < sorted.length; i += POSTS_PER_MESSAGE)
    messages.push({
      posts: sorted.slice(i, i + POSTS_PER_MESSAGE).map((r) => ({ org_id: r.orgId, post_id: r.postId })),
    });
  return messages;
}

/**
 * The finder. Primary course: read the SYNC#<day> buckets of the due-work index for the last 7
 * UTC days and send their posts, POSTS_PER_MESSAGE to a message, to the engagement-sync queue.
 */
export async function findEngagementWork(now: Date): Promise<FindResult> {
  const refs = (await Promise.all(syncDays(now).map((day) => postsPublishedOn(day)))).flat();
  const messages = engagementMessages(refs);
  await sendEngagementSyncs(messages);
  return { posts: refs.length, sent: messages.length };
}
