import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { listChannelsOf } from '#usecases/list-channels';

export const { handler, impl } = apiHandler('listChannels', { query: NoQuery }, ({ auth }) =>
  ok(listChannelsOf(auth.orgId)),
);
