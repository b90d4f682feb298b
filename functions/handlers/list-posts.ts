import { ListPostsQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { requireEnv } from '#shared/config';
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
