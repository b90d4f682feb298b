import { createEndpoint, EndpointLimitError } from '#adapters/webhook-endpoints';
import { sealSecret } from '#adapters/webhooks/secrets';
import { conflict } from '#core/errors';
import { newId } from '#core/ids';
import {
  type EventType,
  MAX_ENDPOINTS_PER_ORG,
  newSigningSecret,
  toWebhookEndpoint,
  type WebhookEndpointRecord,
} from '#core/webhooks';
import { checkEndpointUrl } from '#usecases/support/endpoint-url';
import { type Admitted, unique } from '#usecases/support/webhook-endpoint-input';

// createWebhookEndpoint makes the signing secret: it is answered once and stored only sealed by
// KMS (rotation: rotate-webhook-secret.ts).

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
