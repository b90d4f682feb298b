import { NoQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { getChannelConnection } from '#usecases/get-channel-connection';

export const { handler, impl } = apiHandler(
  'getChannelConnection',
  { query: NoQuery },
  async ({ auth, params, now }) => ({
    status: 200,
    body: await getChannelConnection(auth.orgId, params.id ?? '', now),
  }),
);
