import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { testWebhookEndpoint } from '#usecases/test-webhook-endpoint';

export const { handler, impl } = apiHandler(
  'testWebhookEndpoint',
  { query: NoQuery },
  ({ auth, params, admitted }) => ok(testWebhookEndpoint(auth.orgId, params.id ?? '', admitted)),
);
