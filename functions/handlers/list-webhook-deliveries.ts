import { PageQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { requireEnv } from '#shared/config';
import { listWebhookDeliveries } from '#usecases/list-webhook-deliveries';

const CURSOR_SECRET = requireEnv('HERALD_CURSOR_SECRET');

export const { handler, impl } = apiHandler(
  'listWebhookDeliveries',
  { query: PageQuery },
  ({ auth, params, query }) => ok(listWebhookDeliveries(auth.orgId, params.id ?? '', query, CURSOR_SECRET)),
);
