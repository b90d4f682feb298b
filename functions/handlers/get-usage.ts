import { NoQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { getUsage } from '#usecases/get-usage';

export const { handler, impl } = apiHandler(
  'getUsage',
  { query: NoQuery },
  async ({ auth, admitted, now }) => ({
    status: 200,
    body: await getUsage(auth.orgId, admitted, now.getTime()),
  }),
);
