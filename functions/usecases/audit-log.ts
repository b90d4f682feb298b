import { listAudit } from '#adapters/audit-log';
import { canReadAuditLog } from '#core/accounts';
import { decodeCursor, encodeCursor, PAGE_SIZE } from '#core/cursor';
import { isId } from '#core/ids';
import { ActError, type Actor, type AuditEntry } from '#core/people';
import { authorizeAct } from '#usecases/support/acts';

// The audit log (owners, and the operator): who did what and when, newest first, a page at a time.
// The cursor is signed like every list's (core/cursor.ts), bound to the organization, so it can be
// neither forged nor replayed against another organization's log.

export async function listAuditLog(a: {
  orgId: string;
  actor: Actor;
  cursor?: string | undefined;
  limit?: number | undefined;
  /** The cursors' signing secret; HERALD_CURSOR_SECRET when not given. */
  cursorSecret?: string | undefined;
}): Promise<{ data: AuditEntry[]; next_cursor: string | null }> {
  await authorizeAct(a.orgId, a.actor, canReadAuditLog, 'reading the audit log');
  const limit = a.limit ?? PAGE_SIZE.default;
  if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_SIZE.max)
    throw new ActError(`limit is a whole number from 1 to ${PAGE_SIZE.max}`);
  const secret = a.cursorSecret ?? process.env.HERALD_CURSOR_SECRET;
  if (!secret) throw new Error('HERALD_CURSOR_SECRET is not set');
  const scope = { list: 'audit-log', orgId: a.orgId };
  let after: string | undefined;
  if (a.cursor) {
    try {
      after = decodeCursor(secret, scope, a.cursor);
    } catch {
      after = undefined;
    }
    if (!after || !isId('audit', after))
      throw new ActError('the cursor is not valid for this audit log; use the next page link unchanged');
  }
  const page = await listAudit(a.orgId, limit, after);
  const last = page.items.at(-1);
  return {
    data: page.items,
    next_cursor: page.hasMore && last ? encodeCursor(secret, scope, last.id) : null,
  };
}
