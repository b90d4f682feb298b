import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { getChannelConnection } from '#usecases/get-channel-connection';

export const { handler, impl } = apiHandler(
  'getChannelConnection',
  { query: NoQuery },
  ({ auth, params, now }) => ok(getChannelConnection(auth.orgId, params.id ?? '', now)),
);
