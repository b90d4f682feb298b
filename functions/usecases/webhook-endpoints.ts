import {
  DELIVERY_LOG_POSITION,
  deleteEndpoint,
  getEndpoint,
  queryDeliveries,
  queryEndpoints,
} from '#adapters/webhooks/store';
import { PAGE_SIZE, type PageQuery, paginate } from '#core/cursor';
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

/** listWebhookEndpoints: a page of the organization's endpoints, newest first. */
export async function listWebhookEndpoints(orgId: string, query: PageQuery, cursorSecret: string) {
  const page = paginate(cursorSecret, { list: 'webhook-endpoints', orgId }, query.after, (k) =>
    isId('webhook', k),
  );
  const found = await queryEndpoints(orgId, {
    limit: query.limit ?? PAGE_SIZE.default,
    afterId: page.afterKey,
  });
  return page.envelope(found, toWebhookEndpoint, (e) => e.id);
}

export async function deleteWebhookEndpoint(orgId: string, id: string, admitted: Admitted) {
  if (!isId('webhook', id)) throw notFound('webhook endpoint');
  await admitted();
  if (!(await deleteEndpoint(orgId, id))) throw notFound('webhook endpoint');
  return { id, deleted: true as const };
}

/**
 * listWebhookDeliveries: a page of the endpoint's delivery log, most recently attempted first
 * (an event attempted again while a client pages moves to the top).
 */
export async function listWebhookDeliveries(
  orgId: string,
  id: string,
  query: PageQuery,
  cursorSecret: string,
) {
  if (!isId('webhook', id)) throw notFound('webhook endpoint');
  const page = paginate(cursorSecret, { list: 'webhook-deliveries', orgId, filter: id }, query.after, (k) =>
    DELIVERY_LOG_POSITION.test(k),
  );
  const [endpoint, found] = await Promise.all([
    getEndpoint(orgId, id),
    queryDeliveries(orgId, id, { limit: query.limit ?? PAGE_SIZE.default, after: page.afterKey }),
  ]);
  if (!endpoint) throw notFound('webhook endpoint');
  return page.envelope(found, toWebhookDelivery, (d) => d.log_position);
}
