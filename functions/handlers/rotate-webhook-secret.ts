import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { rotateWebhookSecret } from '#usecases/rotate-webhook-secret';

export const { handler, impl } = apiHandler(
  'rotateWebhookSecret',
  { query: NoQuery },
  ({ auth, params, now, admitted }) =>
    ok(rotateWebhookSecret(auth.orgId, params.id ?? '', now.toISOString(), admitted)),
);
