import { removePost } from '#adapters/posts';
import { decideDelete, type PostRecord } from '#core/posts';
import { type Gate, loadForDangerousOp, withRetry } from '#usecases/support/post-writes';

/** deletePost: needs the toggle; anything but publishing is removed. Published content stays on platforms. */
export async function deletePost(
  orgId: string,
  postId: string,
  gate: Pick<Gate, 'admitted'>,
  /** Runs on the post as read, before deciding (the console refuses a post changed since its page). */
  check?: (post: PostRecord) => void,
) {
  return withRetry(async () => {
    const { org, post } = await loadForDangerousOp(orgId, postId);
    check?.(post);
    decideDelete(post, org.settings);
    await gate.admitted();
    // One DeleteItem on the version read; the toggle was read with the post (support/post-writes.ts).
    await removePost(post);
    return { id: post.id, deleted: true as const };
  });
}
