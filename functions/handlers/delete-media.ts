import { NoQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { deleteMedia } from '#usecases/delete-media';

export const { handler, impl } = apiHandler(
  'deleteMedia',
  { query: NoQuery },
  async ({ auth, params, admitted }) => {
    await deleteMedia(auth.orgId, params.id ?? '', { admitted });
    return { status: 204, body: null };
  },
);
