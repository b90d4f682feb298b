import { PageQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { requireEnv } from '#shared/config';
import { listMedia } from '#usecases/list-media';

const CURSOR_SECRET = requireEnv('HERALD_CURSOR_SECRET');

export const { handler, impl } = apiHandler('listMedia', { query: PageQuery }, ({ auth, query }) =>
  ok(listMedia(auth.orgId, query, CURSOR_SECRET)),
);
