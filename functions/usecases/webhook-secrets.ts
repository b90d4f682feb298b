import { sealSecret } from '#adapters/webhooks/secrets';
import { createEndpoint, EndpointLimitError, getEndpoint, updateEndpoint } from '#adapters/webhooks/store';
import { conflict, notFound } from '#core/errors';
import { isId, newId } from '#core/ids';
import {
  type EventType,
  MAX_ENDPOINTS_PER_ORG,
  newSigningSecret,
  SECRET_OVERLAP_MS,
  toWebhookEndpoint,
  type WebhookEndpointRecord,
} from '#core/webhooks';
import { checkEndpointUrl } from './webhook-endpoint-update.ts';
import { type Admitted, unique } from './webhook-endpoints.ts';

// The operations that make a signing secret: it is answered once and stored only sealed by KMS.

export async function createWebhookEndpoint(
  orgId: string,
  body: { url: string; event_types: EventType[]; description?: string | null; enabled?: boolean },
  now: string,
  admitted: Admitted,
) {
  const url = await checkEndpointUrl(body.url);
  const id = newId('webhook', Date.parse(now));
  const secret = newSigningSecret();
  const enabled = body.enabled ?? true;
  // Admitted first: a refused request must not spend the account-wide KMS quota.
  await admitted();
  const sealed = await sealSecret(orgId, id, secret);
  const rec: WebhookEndpointRecord = {
    entity: 'webhook_endpoint',
    id,
    org_id: orgId,
    url,
    description: body.description ?? null,
    event_types: unique(body.event_types),
    enabled,
    state: enabled ? 'active' : 'disabled',
    failure: { consecutive_failures: 0 },
    secret: { current: sealed },
    created_at: now,
    updated_at: now,
    version: 1,
  };
  try {
    await createEndpoint(rec);
  } catch (err) {
    if (err instanceof EndpointLimitError)
      throw conflict(`A workspace has at most ${MAX_ENDPOINTS_PER_ORG} webhook endpoints; delete one first.`);
    throw err;
  }
  return { ...toWebhookEndpoint(rec), secret };
}

export async function rotateWebhookSecret(orgId: string, id: string, now: string, admitted: Admitted) {
  if (!isId('webhook', id)) throw notFound('webhook endpoint');
  const secret = newSigningSecret();
  const [current] = await Promise.all([getEndpoint(orgId, id), admitted()]);
  if (!current) throw notFound('webhook endpoint');
  // Sealed only for an admitted request on an existing endpoint (KMS quotas are account-wide).
  const sealed = await sealSecret(orgId, id, secret);
  const previousUntil = new Date(Date.parse(now) + SECRET_OVERLAP_MS).toISOString();
  const updated = await updateEndpoint(
    orgId,
    id,
    {
      secret: { current: sealed, previous: current.secret.current, previous_until: previousUntil },
      updated_at: now,
    },
    { 'secret.current': current.secret.current },
  );
  if (!updated) {
    if (!(await getEndpoint(orgId, id))) throw notFound('webhook endpoint');
    throw conflict('The secret was rotated concurrently; rotate again if you need a new one.');
  }
  return { id, secret, previous_secret_expires_at: previousUntil };
}
