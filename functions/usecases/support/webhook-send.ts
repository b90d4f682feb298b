import { webhookAddressPolicy } from '#adapters/webhooks/policy';
import {
  ForbiddenAddressError,
  type Resolver,
  safePost,
  WebhookRequestError,
} from '#adapters/webhooks/safe-http';
import { openSecret } from '#adapters/webhooks/secrets';
import { signedHeaders } from '#core/webhook-signing';
import {
  attemptError,
  DELIVERY_TIMEOUT_MS,
  type WebhookEndpointRecord,
  type WebhookEvent,
  webhookBody,
} from '#core/webhooks';

// Opening an endpoint's secrets and one signed POST: shared by the delivery worker and the test
// delivery.

/** The signing secrets in force: the current one, and the previous one during a rotation's overlap. */
export async function activeSecrets(endpoint: WebhookEndpointRecord, now: number): Promise<string[]> {
  const { current, previous, previous_until } = endpoint.secret;
  const sealed = [current];
  if (previous && previous_until && Date.parse(previous_until) > now) sealed.push(previous);
  return Promise.all(sealed.map((s) => openSecret(endpoint.org_id, endpoint.id, s)));
}

interface SendResult {
  statusCode: number | null;
  durationMs: number;
  error: string | null;
}

/** One signed POST under the address policy; never throws for the receiver's sake. */
export async function sendSigned(
  endpoint: WebhookEndpointRecord,
  event: WebhookEvent,
  secrets: string[],
  resolver?: Resolver,
): Promise<SendResult> {
  const body = webhookBody(event);
  const headers = signedHeaders(secrets, event.id, new Date(), body);
  const started = performance.now();
  try {
    const res = await safePost(endpoint.url, body, headers, {
      ...webhookAddressPolicy(),
      resolver,
      timeoutMs: DELIVERY_TIMEOUT_MS,
    });
    return { statusCode: res.status, durationMs: res.durationMs, error: attemptError(res.status, null) };
  } catch (err) {
    const durationMs = Math.round(performance.now() - started);
    if (err instanceof ForbiddenAddressError)
      return { statusCode: null, durationMs, error: `forbidden_address: ${err.address}` };
    if (err instanceof WebhookRequestError)
      return { statusCode: null, durationMs, error: `${err.reason}: ${err.message}`.slice(0, 300) };
    throw err;
  }
}
