import { SelectChannelAccountBody } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { selectChannelAccount } from '#usecases/select-channel-account';

export const { handler, impl } = apiHandler(
  'selectChannelAccount',
  { body: SelectChannelAccountBody },
  async ({ auth, params, body, now, admitted }) => ({
    status: 200,
    body: await selectChannelAccount(auth.orgId, params.id ?? '', body.account_id, now, admitted),
  }),
);
