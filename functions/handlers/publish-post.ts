import { apiHandler } from '#shared/http';
import { publishPost } from '#usecases/posts';

export const { handler, impl } = apiHandler('publishPost', async ({ auth, params, now }) => ({
  status: 202,
  body: await publishPost(auth.orgId, params.id ?? '', now),
}));
