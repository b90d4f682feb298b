import { NoQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { rotateWebhookSecret } from '#usecases/rotate-webhook-secret';

export const { handler, impl } = apiHandler(
  'rotateWebhookSecret',
  { query: NoQuery },
  async ({ auth, params, now, admitted }) => ({
    status: 200,
    body: await rotateWebhookSecret(auth.orgId, params.id ?? '', now.toISOString(), admitted),
  }),
);
