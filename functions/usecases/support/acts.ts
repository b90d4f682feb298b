import { countAttempt } from '#adapters/attempts';
import { putAudit } from '#adapters/audit-log';
import { getOrg, getOrgWithUser } from '#adapters/orgs';
import { type Admission, type Org, ROLES, type Role, type User } from '#core/accounts';
import { newId } from '#core/ids';
import {
  ActError,
  type Actor,
  type AuditAction,
  type AuditEntry,
  ENROLLMENT_TTL_MS,
  type EnrollmentRecord,
  hashSecret,
  newSecretToken,
} from '#core/people';
import { CONSOLE_PATH } from '#core/vocabulary';
import { logger } from '#shared/logger';

// What every act of an organization's people starts with (who may do it) and ends with (its entry
// in the audit log), for the console and the admin CLI alike.

/** Who acts, as authorizeAct found them: the organization, and the person (null: the operator alone). */
export interface Authorized {
  org: Org;
  actor: Actor;
  user: User | null;
}

/**
 * Checks that `actor` may do an act of organization `orgId` that `allowed` roles may do. The
 * operator alone passes; a person, and the user the operator acts for (`--by`), are read again
 * (their role now, not at sign-in) and must have an allowed role. Missing organization or user:
 * not_found; a role not allowed: forbidden (`what` names the act in the message).
 */
export async function authorizeAct(
  orgId: string,
  actor: Actor,
  allowed: (role: Role) => boolean,
  what: string,
): Promise<Authorized> {
  const userId = actor.kind === 'person' ? actor.userId : actor.onBehalfOf;
  if (userId === undefined) {
    const org = await getOrg(orgId);
    if (!org) throw new ActError(`no organization ${orgId}`, 'not_found');
    return { org, actor, user: null };
  }
  const { org, user } = await getOrgWithUser(orgId, userId);
  if (!org) throw new ActError(`no organization ${orgId}`, 'not_found');
  if (!user) throw new ActError(`no user ${userId} in organization ${orgId}`, 'not_found');
  if (!allowed(user.role)) {
    await recordRefusal(org, actor, user, what);
    const roles = ROLES.filter(allowed).join(' or ');
    throw new ActError(
      `${what} needs the ${roles} role; ${user.email} is ${article(user.role)}`,
      'forbidden',
    );
  }
  return { org, actor, user };
}

/**
 * Leaves `act_refused` (the act, the role) in the organization's audit log, so owners see probing
 * from inside. At most one entry per person and act a minute: a counter item (conditional, like
 * the sign-in attempts) admits the first, so a flood of refusals costs one small write each and
 * never an entry each. Recording is best effort: the refusal stands whatever happens here.
 */
async function recordRefusal(org: Org, actor: Actor, user: User, what: string): Promise<void> {
  const now = new Date();
  try {
    const minute = Math.floor(now.getTime() / 60_000);
    const source = `${org.id}/${user.id}/${hashSecret(what).slice(0, 16)}`;
    if (!(await countAttempt('act_refused', source, minute, 1))) return;
    const detail = { act: what, role: user.role };
    await putAudit(auditEntry({ actor, user, orgId: org.id }, 'act_refused', null, detail, now));
  } catch (err) {
    logger.warn('refused act not recorded', { error: err, org_id: org.id });
  }
}

const article = (role: Role) => (role === 'owner' || role === 'admin' ? `an ${role}` : `a ${role}`);

/** The audit entry of an act done by `by` (as authorizeAct found them). Never put a secret in `detail`. */
export function auditEntry(
  by: Pick<Authorized, 'actor' | 'user'> & { orgId: string },
  action: AuditAction,
  target: string | null,
  detail: AuditEntry['detail'],
  now: Date,
): AuditEntry {
  const userId = by.actor.kind === 'person' ? by.actor.userId : (by.actor.onBehalfOf ?? null);
  return {
    id: newId('audit', now.getTime()),
    org_id: by.orgId,
    at: now.toISOString(),
    actor: { kind: by.actor.kind, user_id: by.user?.id ?? userId, email: by.user?.email ?? null },
    action,
    target,
    detail,
  };
}

/** Who issued something, as records keep it: the person (or the operator's `--by`), else `operator`. */
export const issuerOf = (by: Pick<Authorized, 'user'>) => by.user?.id ?? 'operator';

/**
 * A new one-time enrollment link for a user: the URL with its secret token (shown or mailed once)
 * and the record stored under the token's hash, valid ENROLLMENT_TTL_MS. The token is in the URL's
 * fragment, which browsers never send, so it stays out of every server and proxy log.
 */
export function newEnrollmentLink(a: {
  orgId: string;
  userId: string;
  issuedBy: string;
  consoleUrl: string;
  now: Date;
}): { tokenHash: string; record: EnrollmentRecord; link: { url: string; expires_at: string } } {
  const base = consoleOrigin(a.consoleUrl);
  const token = newSecretToken();
  const expiresAt = new Date(a.now.getTime() + ENROLLMENT_TTL_MS).toISOString();
  return {
    tokenHash: hashSecret(token),
    record: {
      org_id: a.orgId,
      user_id: a.userId,
      created_at: a.now.toISOString(),
      expires_at: expiresAt,
      issued_by: a.issuedBy,
    },
    link: { url: `${base}${CONSOLE_PATH}/enroll#${token}`, expires_at: expiresAt },
  };
}

/** The console's origin (`https://herald.example.com`); anything else is refused. */
function consoleOrigin(consoleUrl: string): string {
  let url: URL | undefined;
  try {
    url = new URL(consoleUrl);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:'))
    throw new ActError(
      `the console URL must be an http(s) origin, like https://herald.example.com: ${consoleUrl}`,
    );
  return url.origin;
}

/**
 * Admits an API use case's work without counting it as an API request: the console's and the
 * CLI's reads and acts are people's and the operator's, not an API client's (posts still count
 * against posts_per_month where the use case counts them).
 */
export const unmetered = async (): Promise<Admission> => ({
  allowed: true,
  headers: {},
  apiRequests: 0,
  period: '',
});
