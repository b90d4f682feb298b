import { NoQuery } from '#core/requests';
import { apiHandler } from '#shared/http';
import { listWebhookDeliveries } from '#usecases/webhook-endpoints';

export const { handler, impl } = apiHandler(
  'listWebhookDeliveries',
  { query: NoQuery },
  async ({ auth, params }) => ({
    status: 200,
    body: await listWebhookDeliveries(auth.orgId, params.id ?? ''),
  }),
);
