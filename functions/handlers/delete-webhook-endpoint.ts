import { NoQuery } from '#core/requests';
import { apiHandler } from '#shared/http';
import { deleteWebhookEndpoint } from '#usecases/webhook-endpoints';

export const { handler, impl } = apiHandler(
  'deleteWebhookEndpoint',
  { query: NoQuery },
  async ({ auth, params, admitted }) => ({
    status: 200,
    body: await deleteWebhookEndpoint(auth.orgId, params.id ?? '', admitted),
  }),
);
