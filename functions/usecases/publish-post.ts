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
 * admission (deferred to here by handlers/publish-post.ts) starts at once, beside the read, asking
 * the gate's write to count the post: publishing most likely makes it count (a draft). A post that
 * counted already gives that count back (one more write) rather than the request waiting for its
 * read to ask: publishPost stays at two sequential round trips.
 */
export async function publishPost(
  orgId: string,
  postId: string,
  now: Date,
  gate: Gate,
  /** Runs on the post as read, before deciding (the console refuses a post changed since its page). */
  check?: (post: PostRecord) => void,
  /** Told the post's version once decided (the answer's ETag). */
  written?: (version: number) => void,
) {
  return counting(
    orgId,
    gate,
    now,
    (counter) =>
      withRetry(async () => {
        const { org, post } = await loadForDangerousOp(orgId, postId);
        check?.(post);
        const decision = decidePublish(post, org.settings, now);
        if ('unchanged' in decision) {
          await gate.admitted();
          written?.(post.version);
          return { id: post.id, status: post.status };
        }
        const result = await quotaAware(() => counter.update(post, decision.change), now);
        written?.(result.version);
        return { id: result.id, status: result.status };
      }),
    { expect: true },
  );
}
