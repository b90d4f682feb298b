import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { getPostById } from '#usecases/get-post';

export const { handler, impl } = apiHandler('getPost', { query: NoQuery }, ({ auth, params }) =>
  ok(getPostById(auth.orgId, params.id ?? '')),
);
