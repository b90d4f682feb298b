import { removePost } from '#adapters/posts';
import { decideDelete } from '#core/posts';
import { type Gate, loadForDangerousOp, withRetry } from '#usecases/support/post-writes';

/** deletePost: needs the toggle; anything but publishing is removed. Published content stays on platforms. */
export async function deletePost(orgId: string, postId: string, gate: Pick<Gate, 'admitted'>) {
  return withRetry(async () => {
    const { org, post } = await loadForDangerousOp(orgId, postId);
    decideDelete(post, org.settings);
    await gate.admitted();
    await removePost(post);
    return { id: post.id, deleted: true as const };
  });
}
