import { SelectChannelAccountBody } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { selectChannelAccount } from '#usecases/select-channel-account';

export const { handler, impl } = apiHandler(
  'selectChannelAccount',
  { body: SelectChannelAccountBody },
  ({ auth, params, body, now, admitted }) =>
    ok(selectChannelAccount(auth.orgId, params.id ?? '', body.account_id, now, admitted)),
);
