import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { deleteWebhookEndpoint } from '#usecases/delete-webhook-endpoint';

export const { handler, impl } = apiHandler(
  'deleteWebhookEndpoint',
  { query: NoQuery },
  ({ auth, params, admitted }) => ok(deleteWebhookEndpoint(auth.orgId, params.id ?? '', admitted)),
);
