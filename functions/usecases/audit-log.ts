import type { Actor, AuditEntry } from '#core/people';

// STUB (foundation commit): replaced by the people work.

export async function listAuditLog(_a: {
  orgId: string;
  actor: Actor;
  cursor?: string | undefined;
  limit?: number | undefined;
}): Promise<{ data: AuditEntry[]; next_cursor: string | null }> {
  throw new Error('not implemented');
}
