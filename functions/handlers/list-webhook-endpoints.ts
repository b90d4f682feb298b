import { PageQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { requireEnv } from '#shared/config';
import { listWebhookEndpoints } from '#usecases/list-webhook-endpoints';

const CURSOR_SECRET = requireEnv('HERALD_CURSOR_SECRET');

export const { handler, impl } = apiHandler('listWebhookEndpoints', { query: PageQuery }, ({ auth, query }) =>
  ok(listWebhookEndpoints(auth.orgId, query, CURSOR_SECRET)),
);
