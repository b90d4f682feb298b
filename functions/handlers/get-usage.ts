import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { getUsage } from '#usecases/get-usage';

export const { handler, impl } = apiHandler('getUsage', { query: NoQuery }, ({ auth, admitted, now }) =>
  ok(getUsage(auth.orgId, admitted, now.getTime())),
);
