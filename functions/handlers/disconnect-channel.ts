import { NoQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { disconnectChannel } from '#usecases/disconnect-channel';

export const { handler, impl } = apiHandler(
  'disconnectChannel',
  { query: NoQuery },
  async ({ auth, params, now, admitted }) => ({
    status: 200,
    body: await disconnectChannel(auth.orgId, params.id ?? '', now, admitted),
  }),
);
