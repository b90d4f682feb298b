import { replacePost } from '#adapters/posts';
import { decidePublish, type PostRecord } from '#core/posts';
import {
  type Gate,
  loadForDangerousOp,
  postCount,
  quotaAware,
  withRetry,
} from '#usecases/support/post-writes';

/** publishPost: needs the dangerous-operations toggle; draft/scheduled/failed → publishing. */
export async function publishPost(
  orgId: string,
  postId: string,
  now: Date,
  gate: Gate,
  /** Runs on the post as read, before deciding (the console refuses a post changed since its page). */
  check?: (post: PostRecord) => void,
) {
  return withRetry(async () => {
    const { org, post } = await loadForDangerousOp(orgId, postId);
    check?.(post);
    const decision = decidePublish(post, org.settings, now);
    await gate.admitted();
    if ('unchanged' in decision) return { id: post.id, status: post.status };
    const { next, count } = postCount(decision.change, gate, now);
    const settings = { dangerous_ops: true, approval_required: org.settings.approval_required };
    const result = await quotaAware(() => replacePost(next, post.version, settings, count), now);
    return { id: result.id, status: result.status };
  });
}
