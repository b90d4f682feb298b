import { deleteEndpoint, getEndpoint, listDeliveries, listEndpoints } from '#adapters/webhooks/store';
import { notFound } from '#core/errors';
import { isId } from '#core/ids';
import { type EventType, toWebhookDelivery, toWebhookEndpoint } from '#core/webhooks';

// The webhook endpoint operations that neither check a URL (update: webhook-endpoint-update.ts)
// nor touch a signing secret (create: webhook-secrets.ts, rotate-secret: webhook-rotation.ts), so
// only those bundles
// carry the address policy and the KMS client. `admitted` resolves once the rate limiter admitted
// the request; every write waits for it, so a refused request changes nothing.

export type Admitted = () => Promise<unknown>;

export const unique = (types: readonly EventType[]) => [...new Set(types)];

export async function listWebhookEndpoints(orgId: string) {
  const endpoints = await listEndpoints(orgId);
  return { data: endpoints.map(toWebhookEndpoint), has_more: false, next_cursor: null };
}

export async function deleteWebhookEndpoint(orgId: string, id: string, admitted: Admitted) {
  if (!isId('webhook', id)) throw notFound('webhook endpoint');
  await admitted();
  if (!(await deleteEndpoint(orgId, id))) throw notFound('webhook endpoint');
  return { id, deleted: true as const };
}

export async function listWebhookDeliveries(orgId: string, id: string) {
  if (!isId('webhook', id)) throw notFound('webhook endpoint');
  const [endpoint, deliveries] = await Promise.all([getEndpoint(orgId, id), listDeliveries(orgId, id)]);
  if (!endpoint) throw notFound('webhook endpoint');
  return { data: deliveries.map(toWebhookDelivery) };
}
