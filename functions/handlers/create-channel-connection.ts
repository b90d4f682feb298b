import { CreateChannelConnectionBody } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { createChannelConnection } from '#usecases/create-channel-connection';

export const { handler, impl } = apiHandler(
  'createChannelConnection',
  { body: CreateChannelConnectionBody },
  async ({ auth, body, headers, now, admitted }) => ({
    status: 201,
    body: await createChannelConnection({
      orgId: auth.orgId,
      body,
      requestHost: headers.host,
      now,
      admitted,
    }),
  }),
);
