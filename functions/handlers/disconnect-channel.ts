import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { disconnectChannel } from '#usecases/disconnect-channel';

export const { handler, impl } = apiHandler(
  'disconnectChannel',
  { query: NoQuery },
  ({ auth, params, now, admitted }) => ok(disconnectChannel(auth.orgId, params.id ?? '', now, admitted)),
);
