import { PageQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { requireEnv } from '#shared/config';
import { listWebhookEndpoints } from '#usecases/list-webhook-endpoints';

const CURSOR_SECRET = requireEnv('HERALD_CURSOR_SECRET');

export const { handler, impl } = apiHandler(
  'listWebhookEndpoints',
  { query: PageQuery },
  async ({ auth, query }) => ({
    status: 200,
    body: await listWebhookEndpoints(auth.orgId, query, CURSOR_SECRET),
  }),
);
