import { CreateChannelConnectionBody } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { createChannelConnection } from '#usecases/create-channel-connection';

export const { handler, impl } = apiHandler(
  'createChannelConnection',
  { body: CreateChannelConnectionBody },
  ({ auth, body, headers, now, admitted }) =>
    ok(
      createChannelConnection({
        orgId: auth.orgId,
        body,
        requestHost: headers.host,
        now,
        admitted,
      }),
      201,
    ),
);
