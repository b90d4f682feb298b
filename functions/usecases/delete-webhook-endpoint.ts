import { deleteEndpoint } from '#adapters/webhook-endpoints';
import { notFound } from '#core/errors';
import { isId } from '#core/ids';
import type { Admitted } from '#usecases/support/webhook-endpoint-input';

export async function deleteWebhookEndpoint(orgId: string, id: string, admitted: Admitted) {
  if (!isId('webhook', id)) throw notFound('webhook endpoint');
  await admitted();
  if (!(await deleteEndpoint(orgId, id))) throw notFound('webhook endpoint');
  return { id, deleted: true as const };
}
