import { ListPostsQuery } from '#core/requests';
import { requireEnv } from '#shared/config';
import { apiHandler } from '#shared/http';
import { listPosts } from '#usecases/list-posts';

const CURSOR_SECRET = requireEnv('HERALD_CURSOR_SECRET');

export const { handler, impl } = apiHandler(
  'listPosts',
  { query: ListPostsQuery },
  async ({ auth, query }) => ({
    status: 200,
    body: await listPosts(auth.orgId, query, CURSOR_SECRET),
  }),
);
