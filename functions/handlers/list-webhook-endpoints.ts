import { NoQuery } from '#core/requests';
import { apiHandler } from '#shared/http';
import { listWebhookEndpoints } from '#usecases/webhook-endpoints';

export const { handler, impl } = apiHandler('listWebhookEndpoints', { query: NoQuery }, async ({ auth }) => ({
  status: 200,
  body: await listWebhookEndpoints(auth.orgId),
}));
