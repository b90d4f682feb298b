import { getEndpoint, rotateEndpointSecret } from '#adapters/webhook-endpoints';
import { sealSecret } from '#adapters/webhooks/secrets';
import { conflict, notFound } from '#core/errors';
import { isId } from '#core/ids';
import { newSigningSecret, SECRET_OVERLAP_MS } from '#core/webhooks';
import type { Admitted } from '#usecases/support/webhook-endpoint-input';

// rotateWebhookSecret, apart from createWebhookEndpoint (create-webhook-endpoint.ts) so its bundle carries
// the KMS client but not the URL check (the address policy and ipaddr.js).

export async function rotateWebhookSecret(orgId: string, id: string, now: string, admitted: Admitted) {
  if (!isId('webhook', id)) throw notFound('webhook endpoint');
  const secret = newSigningSecret();
  const [current] = await Promise.all([getEndpoint(orgId, id), admitted()]);
  if (!current) throw notFound('webhook endpoint');
  // Sealed only for an admitted request on an existing endpoint (KMS quotas are account-wide).
  const sealed = await sealSecret(orgId, id, secret);
  const previousUntil = new Date(Date.parse(now) + SECRET_OVERLAP_MS).toISOString();
  const updated = await rotateEndpointSecret(
    orgId,
    id,
    { current: sealed, previous: current.secret.current, previous_until: previousUntil },
    current.secret.current,
    now,
  );
  if (!updated) {
    if (!(await getEndpoint(orgId, id))) throw notFound('webhook endpoint');
    throw conflict('The secret was rotated concurrently; rotate again if you need a new one.');
  }
  return { id, secret, previous_secret_expires_at: previousUntil };
}
