import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { deletePost } from '#usecases/delete-post';

export const { handler, impl } = apiHandler('deletePost', { query: NoQuery }, ({ auth, params, admitted }) =>
  ok(deletePost(auth.orgId, params.id ?? '', { admitted })),
);
