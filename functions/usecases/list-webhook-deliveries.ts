import { DELIVERY_LOG_POSITION, queryDeliveries } from '#adapters/webhook-deliveries';
import { getEndpoint } from '#adapters/webhook-endpoints';
import { PAGE_SIZE, type PageQuery, paginate } from '#core/cursor';
import { notFound } from '#core/errors';
import { isId } from '#core/ids';
import { toWebhookDelivery } from '#core/webhooks';

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
