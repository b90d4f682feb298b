import { NoQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { listChannelsOf } from '#usecases/list-channels';

export const { handler, impl } = apiHandler('listChannels', { query: NoQuery }, async ({ auth }) => ({
  status: 200,
  body: await listChannelsOf(auth.orgId),
}));
