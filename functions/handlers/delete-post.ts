import { NoQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { deletePost } from '#usecases/delete-post';

export const { handler, impl } = apiHandler(
  'deletePost',
  { query: NoQuery },
  async ({ auth, params, admitted }) => ({
    status: 200,
    body: await deletePost(auth.orgId, params.id ?? '', { admitted }),
  }),
);
