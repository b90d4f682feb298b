import type { User } from '#core/accounts';
import { newId } from '#core/ids';
import type { AuditAction, AuditEntry } from '#core/people';

/** An audit entry for an act a person did in the console (signing in, their own passkeys). */
export function personAct(
  user: User,
  action: AuditAction,
  now: Date,
  target: string | null = null,
  detail: AuditEntry['detail'] = {},
): AuditEntry {
  return {
    id: newId('audit', now.getTime()),
    org_id: user.org_id,
    at: now.toISOString(),
    actor: { kind: 'person', user_id: user.id, email: user.email },
    action,
    target,
    detail,
  };
}
