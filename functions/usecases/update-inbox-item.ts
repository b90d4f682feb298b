import { getInboxItem, setInboxStatus } from '#adapters/inbox';
import { conflict } from '#core/errors';
import { checkIfMatch, type IfMatch } from '#core/etag';
import { isId } from '#core/ids';
import { type InboxStatus, inboxItemVersion, toInboxItem } from '#core/inbox';
import { inboxItemNotFound } from '#usecases/get-inbox-item';

/**
 * updateInboxItem: gives an item a status. Primary course: read the item (alongside the request's
 * admission) → 404 → If-Match (412) → the same status: nothing written, the item as it is → one
 * UpdateItem conditioned on the version read, so a reply or another status written in between is
 * never undone: the item is read again and the checks run again. A retried request finds the
 * status it set and writes nothing (idempotent).
 */
export async function updateInboxItem(
  orgId: string,
  id: string,
  status: InboxStatus,
  now: Date,
  admitted: () => Promise<unknown>,
  opts: { ifMatch?: IfMatch | undefined } = {},
) {
  if (!isId('inbox', id)) throw inboxItemNotFound();
  const [, first] = await Promise.all([admitted(), getInboxItem(orgId, id)]);
  for (let round = 0; round < 4; round++) {
    const current = round === 0 ? first : await getInboxItem(orgId, id);
    if (!current) throw inboxItemNotFound();
    const version = inboxItemVersion(current);
    checkIfMatch(opts.ifMatch, version, 'inbox item');
    if (current.status === status) return { item: toInboxItem(current), version };
    const written = await setInboxStatus(orgId, id, status, now.toISOString(), current.version ?? null);
    if (written) return { item: toInboxItem(written), version: inboxItemVersion(written) };
  }
  throw conflict('The inbox item kept changing while its status was being set; read it and try again.');
}
