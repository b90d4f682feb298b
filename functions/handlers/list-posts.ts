import { ListPostsQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { requireEnv } from '#shared/config';
import { listPosts } from '#usecases/list-posts';

const CURSOR_SECRET = requireEnv('HERALD_CURSOR_SECRET');

export const { handler, impl } = apiHandler('listPosts', { query: ListPostsQuery }, ({ auth, query }) =>
  ok(listPosts(auth.orgId, query, CURSOR_SECRET)),
);
