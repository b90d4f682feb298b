import { NoQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { deleteWebhookEndpoint } from '#usecases/delete-webhook-endpoint';

export const { handler, impl } = apiHandler(
  'deleteWebhookEndpoint',
  { query: NoQuery },
  async ({ auth, params, admitted }) => ({
    status: 200,
    body: await deleteWebhookEndpoint(auth.orgId, params.id ?? '', admitted),
  }),
);
