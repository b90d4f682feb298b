import { CreateWebhookEndpointBody } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { createWebhookEndpoint } from '#usecases/create-webhook-endpoint';

export const { handler, impl } = apiHandler(
  'createWebhookEndpoint',
  { body: CreateWebhookEndpointBody },
  async ({ auth, body, now, admitted }) => ({
    status: 201,
    body: await createWebhookEndpoint(auth.orgId, body, now.toISOString(), admitted),
  }),
);
