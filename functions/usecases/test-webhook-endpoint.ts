import { putTestDelivery } from '#adapters/webhook-deliveries';
import { getEndpoint } from '#adapters/webhook-endpoints';
import { notFound } from '#core/errors';
import { isId, newId } from '#core/ids';
import { classify, TEST_EVENT_TYPE, type WebhookEvent } from '#core/webhooks';
import { activeSecrets, sendSigned } from '#usecases/support/webhook-send';

/** testWebhookEndpoint: one signed webhook.test now, whatever the subscription or state. */
export async function testWebhookEndpoint(orgId: string, id: string, admitted: () => Promise<unknown>) {
  if (!isId('webhook', id)) throw notFound('webhook endpoint');
  const [endpoint] = await Promise.all([getEndpoint(orgId, id), admitted()]);
  if (!endpoint) throw notFound('webhook endpoint');
  const now = Date.now();
  const event: WebhookEvent = {
    id: newId('message', now),
    type: TEST_EVENT_TYPE,
    timestamp: new Date(now).toISOString(),
    data: { endpoint_id: id, message: 'A test event from Herald. No action is needed.' },
  };
  const secrets = await activeSecrets(endpoint, now);
  const result = await sendSigned(endpoint, event, secrets);
  const delivered = classify(result.statusCode) === 'delivered';
  await putTestDelivery(
    { orgId, endpointId: id, eventId: event.id, eventType: event.type },
    {
      attempt: 1,
      attempted_at: event.timestamp,
      status_code: result.statusCode,
      duration_ms: result.durationMs,
      error: result.error,
    },
    delivered,
  );
  return {
    event_id: event.id,
    delivered,
    status_code: result.statusCode,
    duration_ms: result.durationMs,
    error: result.error,
  };
}
