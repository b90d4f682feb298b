import { getInboxItem as readItem } from '#adapters/inbox';
import { notFound } from '#core/errors';
import { isId } from '#core/ids';
import { inboxItemVersion, toInboxItem } from '#core/inbox';

export const inboxItemNotFound = () => notFound('inbox item');

/** getInboxItem: one item of the organization and its version (the ETag); another org's is a 404. */
export async function getInboxItem(orgId: string, id: string) {
  if (!isId('inbox', id)) throw inboxItemNotFound();
  const item = await readItem(orgId, id);
  if (!item) throw inboxItemNotFound();
  return { item: toInboxItem(item), version: inboxItemVersion(item) };
}
