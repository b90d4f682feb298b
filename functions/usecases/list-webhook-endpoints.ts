import { queryEndpoints } from '#adapters/webhook-endpoints';
import { PAGE_SIZE, type PageQuery, paginate } from '#core/cursor';
import { isId } from '#core/ids';
import { toWebhookEndpoint } from '#core/webhooks';

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
