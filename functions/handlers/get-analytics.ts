import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { getAnalytics } from '#usecases/get-analytics';

export const { handler, impl } = apiHandler('getAnalytics', { query: NoQuery }, ({ auth, admitted, now }) =>
  ok(getAnalytics(auth.orgId, admitted, now.getTime())),
);
