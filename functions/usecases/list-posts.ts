import { queryPosts } from '#adapters/posts';
import type { PostStatus } from '#core/constants';
import { PAGE_SIZE, type PageQuery, paginate } from '#core/cursor';
import { isId } from '#core/ids';
import { type PostRecord, type PostResource, toPost } from '#core/posts';

/** listPosts: newest first, by status when given. `view` shapes each item (the API's post by default). */
export async function listPosts<R = PostResource>(
  orgId: string,
  query: PageQuery & { status?: PostStatus | undefined },
  cursorSecret: string,
  view: (post: PostRecord) => R = toPost as unknown as (post: PostRecord) => R,
) {
  const scope = { list: 'posts', orgId, filter: query.status ?? '' };
  const page = paginate(cursorSecret, scope, query.after, (k) => isId('post', k));
  const posts = await queryPosts(orgId, {
    limit: query.limit ?? PAGE_SIZE.default,
    afterId: page.afterKey,
    status: query.status,
  });
  return page.envelope({ items: posts.posts, hasMore: posts.hasMore }, view, (p) => p.id);
}
