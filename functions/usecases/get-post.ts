import { getPost } from '#adapters/posts';
import { isId } from '#core/ids';
import { toPost } from '#core/posts';
import { postNotFound } from '#usecases/support/post-writes';

export async function getPostById(orgId: string, postId: string) {
  if (!isId('post', postId)) throw postNotFound();
  const post = await getPost(orgId, postId);
  if (!post) throw postNotFound();
  return toPost(post);
}
