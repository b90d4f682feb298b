import { PageQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { requireEnv } from '#shared/config';
import { listMedia } from '#usecases/list-media';

const CURSOR_SECRET = requireEnv('HERALD_CURSOR_SECRET');

export const { handler, impl } = apiHandler('listMedia', { query: PageQuery }, async ({ auth, query }) => ({
  status: 200,
  body: await listMedia(auth.orgId, query, CURSOR_SECRET),
}));
