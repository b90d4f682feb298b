import { NoQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { getAnalytics } from '#usecases/get-analytics';

export const { handler, impl } = apiHandler(
  'getAnalytics',
  { query: NoQuery },
  async ({ auth, admitted, now }) => ({
    status: 200,
    body: await getAnalytics(auth.orgId, admitted, now.getTime()),
  }),
);
