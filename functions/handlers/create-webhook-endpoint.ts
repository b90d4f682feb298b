import { CreateWebhookEndpointBody } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { createWebhookEndpoint } from '#usecases/create-webhook-endpoint';

export const { handler, impl } = apiHandler(
  'createWebhookEndpoint',
  { body: CreateWebhookEndpointBody },
  ({ auth, body, now, admitted }) =>
    ok(createWebhookEndpoint(auth.orgId, body, now.toISOString(), admitted), 201),
);
