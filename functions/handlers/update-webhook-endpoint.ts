import { UpdateWebhookEndpointBody } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { updateWebhookEndpoint } from '#usecases/update-webhook-endpoint';

export const { handler, impl } = apiHandler(
  'updateWebhookEndpoint',
  { body: UpdateWebhookEndpointBody },
  async ({ auth, params, body, now, admitted }) => ({
    status: 200,
    body: await updateWebhookEndpoint(auth.orgId, params.id ?? '', body, now.toISOString(), admitted),
  }),
);
