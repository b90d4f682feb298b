import { apiHandler } from '#shared/http';
import { createWebhookEndpoint } from '#usecases/webhook-secrets';

export const { handler, impl } = apiHandler(
  'createWebhookEndpoint',
  async ({ auth, body, now, admitted }) => ({
    status: 201,
    body: await createWebhookEndpoint(auth.orgId, body, now.toISOString(), admitted),
  }),
);
