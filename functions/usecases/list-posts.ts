import { queryPosts } from '#adapters/posts';
import type { PostStatus } from '#core/constants';
import { PAGE_SIZE, type PageQuery, paginate } from '#core/cursor';
import { isId } from '#core/ids';
import { toPost } from '#core/posts';

export async function listPosts(
  orgId: string,
  query: PageQuery & { status?: PostStatus | undefined },
  cursorSecret: string,
) {
  const scope = { list: 'posts', orgId, filter: query.status ?? '' };
  const page = paginate(cursorSecret, scope, query.after, (k) => isId('post', k));
  const posts = await queryPosts(orgId, {
    limit: query.limit ?? PAGE_SIZE.default,
    afterId: page.afterKey,
    status: query.status,
  });
  return page.envelope({ items: posts.posts, hasMore: posts.hasMore }, toPost, (p) => p.id);
}
