import { UpdateWebhookEndpointBody } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { updateWebhookEndpoint } from '#usecases/update-webhook-endpoint';

export const { handler, impl } = apiHandler(
  'updateWebhookEndpoint',
  { body: UpdateWebhookEndpointBody },
  ({ auth, params, body, now, admitted }) =>
    ok(updateWebhookEndpoint(auth.orgId, params.id ?? '', body, now.toISOString(), admitted)),
);
