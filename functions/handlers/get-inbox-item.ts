import { etagOf } from '#core/etag';
import { NoQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { getInboxItem } from '#usecases/get-inbox-item';

export const { handler, impl } = apiHandler('getInboxItem', { query: NoQuery }, async ({ auth, params }) => {
  const { item, version } = await getInboxItem(auth.orgId, params.id ?? '');
  return { status: 200, body: item, headers: { etag: etagOf(version) } };
});
