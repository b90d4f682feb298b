import { ListInboxQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { requireEnv } from '#shared/config';
import { listInbox } from '#usecases/list-inbox';

const CURSOR_SECRET = requireEnv('HERALD_CURSOR_SECRET');

export const { handler, impl } = apiHandler('listInbox', { query: ListInboxQuery }, ({ auth, query }) =>
  ok(listInbox(auth.orgId, query, CURSOR_SECRET)),
);
