import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { getChannelOptions } from '#usecases/get-channel-options';

export const { handler, impl } = apiHandler(
  'getChannelOptions',
  { query: NoQuery },
  ({ auth, params, now, admitted }) => ok(getChannelOptions(auth.orgId, params.id ?? '', now, admitted)),
);
