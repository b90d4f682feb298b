import { apiHandler } from '#shared/http';
import { listChannelsOf } from '#usecases/channels';

export const { handler, impl } = apiHandler('listChannels', async ({ auth }) => ({
  status: 200,
  body: await listChannelsOf(auth.orgId),
}));
