import { NoQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { getPostById } from '#usecases/get-post';

export const { handler, impl } = apiHandler('getPost', { query: NoQuery }, async ({ auth, params }) => ({
  status: 200,
  body: await getPostById(auth.orgId, params.id ?? ''),
}));
