import { getPost } from '#adapters/posts';
import { isId } from '#core/ids';
import { toPost } from '#core/posts';
import { postNotFound } from '#usecases/support/post-writes';

/** The post and its version (getPost's ETag). */
export async function readPost(orgId: string, postId: string) {
  if (!isId('post', postId)) throw postNotFound();
  const post = await getPost(orgId, postId);
  if (!post) throw postNotFound();
  return { post: toPost(post), version: post.version };
}

export async function getPostById(orgId: string, postId: string) {
  return (await readPost(orgId, postId)).post;
}
