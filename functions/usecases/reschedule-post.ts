import { getPostWithOrg } from '#adapters/posts';
import { ValidationError } from '#core/errors';
import { isId } from '#core/ids';
import { checkScheduleTime, decideReschedule, type PostRecord, toPost } from '#core/posts';
import {
  counting,
  type Gate,
  postNotFound,
  quotaAware,
  requireOrg,
  withRetry,
} from '#usecases/support/post-writes';

/**
 * reschedulePost: draft/scheduled/failed → scheduled at a new future time (docs/api/posts.md). Its
 * admission is deferred, as publishPost's: decided first, so the gate's write carries the count.
 */
export async function reschedulePost(
  orgId: string,
  postId: string,
  scheduledAt: string,
  now: Date,
  gate: Gate,
  /** Runs on the post as read, before deciding (the console refuses a post changed since its page). */
  check?: (post: PostRecord) => void,
  /** Told the post's version once written (the answer's ETag). */
  written?: (version: number) => void,
) {
  const timeError = checkScheduleTime(scheduledAt, now);
  if (timeError) throw new ValidationError([timeError]);
  if (!isId('post', postId)) throw postNotFound();
  return counting(orgId, gate, now, (counter) =>
    withRetry(async () => {
      const { org, post } = await getPostWithOrg(orgId, postId);
      const settings = requireOrg(org).settings;
      if (!post) throw postNotFound();
      check?.(post);
      const next = decideReschedule(post, scheduledAt, settings, now);
      const result = await quotaAware(() => counter.update(post, next), now);
      written?.(result.version);
      return toPost(result);
    }),
  );
}
