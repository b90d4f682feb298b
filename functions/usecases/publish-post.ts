import { decidePublish, type PostRecord } from '#core/posts';
import {
  counting,
  type Gate,
  loadForDangerousOp,
  quotaAware,
  withRetry,
} from '#usecases/support/post-writes';

/**
 * publishPost: needs the dangerous-operations toggle; draft/scheduled/failed → publishing. Its
 * admission is deferred (handlers/publish-post.ts): the post and the org are read and the decision
 * made first, so the gate's write carries the posts_per_month count when the post counts now.
 */
export async function publishPost(
  orgId: string,
  postId: string,
  now: Date,
  gate: Gate,
  /** Runs on the post as read, before deciding (the console refuses a post changed since its page). */
  check?: (post: PostRecord) => void,
) {
  return counting(orgId, gate, now, (counter) =>
    withRetry(async () => {
      const { org, post } = await loadForDangerousOp(orgId, postId);
      check?.(post);
      const decision = decidePublish(post, org.settings, now);
      if ('unchanged' in decision) {
        await gate.admitted();
        return { id: post.id, status: post.status };
      }
      const result = await quotaAware(() => counter.update(post, decision.change), now);
      return { id: result.id, status: result.status };
    }),
  );
}
