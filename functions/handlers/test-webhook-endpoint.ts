import { NoQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { testWebhookEndpoint } from '#usecases/test-webhook-endpoint';

export const { handler, impl } = apiHandler(
  'testWebhookEndpoint',
  { query: NoQuery },
  async ({ auth, params, admitted }) => ({
    status: 200,
    body: await testWebhookEndpoint(auth.orgId, params.id ?? '', admitted),
  }),
);
