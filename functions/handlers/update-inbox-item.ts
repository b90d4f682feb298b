import { etagOf, parseIfMatch } from '#core/etag';
import { UpdateInboxItemBody } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { updateInboxItem } from '#usecases/update-inbox-item';

export const { handler, impl } = apiHandler(
  'updateInboxItem',
  { body: UpdateInboxItemBody },
  async ({ auth, params, body, headers, now, admitted }) => {
    const ifMatch = parseIfMatch(headers['if-match']);
    const res = await updateInboxItem(auth.orgId, params.id ?? '', body.status, now, admitted, { ifMatch });
    return { status: 200, body: res.item, headers: { etag: etagOf(res.version) } };
  },
);
