import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { getChannel } from '#usecases/get-channel';

export const { handler, impl } = apiHandler('getChannel', { query: NoQuery }, ({ auth, params }) =>
  ok(getChannel(auth.orgId, params.id ?? '')),
);
