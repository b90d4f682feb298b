import { sendEmail } from '#adapters/email';
import { putEnrollmentFor } from '#adapters/enrollments';
import {
  addMember,
  deleteMember,
  initOwnerCount,
  listUsers,
  passkeyCounts,
  setMemberRole,
} from '#adapters/members';
import { getUser } from '#adapters/users';
import { anyRole, canManageMembers, type Org, ROLES, type Role, type User } from '#core/accounts';
import { newId } from '#core/ids';
import { ActError, type Actor } from '#core/people';
import { hiddenCharacterIn, hiddenCharacterMessage } from '#core/text';
import { logger } from '#shared/logger';
import { activeKeysOf, revokeKey } from '#usecases/api-keys';
import { auditEntry, authorizeAct, issuerOf, newEnrollmentLink } from '#usecases/support/acts';

// The people of an organization: every member sees them; owners (and the operator) invite, change
// roles and remove. The last owner can be neither removed nor demoted — checked by the write itself
// (the org's owner_count, see adapters/members.ts), so two owners demoting each other at once
// leave one. People get in through one-time enrollment links.

export interface EnrollmentLink {
  url: string;
  expires_at: string;
}

export interface MemberView extends User {
  passkeys: number;
}

/** The organization's people, oldest first, with how many passkeys each has registered. */
export async function listMembers(a: { orgId: string; actor: Actor }): Promise<MemberView[]> {
  await authorizeAct(a.orgId, a.actor, anyRole, 'seeing the members');
  const [users, counts] = await Promise.all([listUsers(a.orgId), passkeyCounts(a.orgId)]);
  return users.map((u) => ({ ...u, passkeys: counts.get(u.id) ?? 0 }));
}

/**
 * Invites a person (owners): the user, their enrollment link and the audit entry in one
 * transaction; the link is returned to show the inviter once, and mailed to the person when the
 * operator configured a sender (`emailed`). An email already in the organization is a conflict.
 */
export async function inviteMember(a: {
  orgId: string;
  actor: Actor;
  email: string;
  role: string;
  consoleUrl: string;
  now: Date;
}): Promise<{ user: User; enrollment: EnrollmentLink; emailed: boolean }> {
  const by = await authorizeAct(a.orgId, a.actor, canManageMembers, 'inviting members');
  const email = validEmail(a.email);
  const role = validRole(a.role);
  const user: User = {
    id: newId('user', a.now.getTime()),
    org_id: a.orgId,
    email,
    role,
    created_at: a.now.toISOString(),
  };
  const enrollment = newEnrollmentLink({
    orgId: a.orgId,
    userId: user.id,
    issuedBy: issuerOf(by),
    consoleUrl: a.consoleUrl,
    now: a.now,
  });
  if (role === 'owner') await ensureOwnerCount(by.org);
  const audit = auditEntry(
    { ...by, orgId: a.orgId },
    'member_invited',
    user.id,
    { email, role, link_expires_at: enrollment.link.expires_at },
    a.now,
  );
  const refused = await addMember(user, enrollment, audit);
  if (refused === 'email_taken')
    throw new ActError(`${email} is already a member of ${by.org.name}`, 'conflict');
  if (refused) throw changedMeanwhile();
  const emailed = await mailLink(by.org, user, enrollment.link);
  return { user, enrollment: enrollment.link, emailed };
}

/**
 * Gives a member another role (owners). Demoting the last owner is refused; the same role again
 * changes nothing. A person demoted below their session's role is signed out by it.
 */
export async function changeMemberRole(a: {
  orgId: string;
  actor: Actor;
  userId: string;
  role: string;
  now: Date;
}): Promise<User> {
  const by = await authorizeAct(a.orgId, a.actor, canManageMembers, 'changing roles');
  const role = validRole(a.role);
  const target = await memberOf(a.orgId, a.userId);
  if (target.role === role) return target;
  if (target.role === 'owner' || role === 'owner') await ensureOwnerCount(by.org);
  const audit = auditEntry(
    { ...by, orgId: a.orgId },
    'member_role_changed',
    target.id,
    { email: target.email, from: target.role, to: role },
    a.now,
  );
  const refused = await setMemberRole(target, role, audit);
  if (refused === 'last_owner') throw lastOwner(target, 'demoted');
  if (refused) throw changedMeanwhile();
  return { ...target, role };
}

/**
 * Removes a member (owners): the user, their email (free to be invited again) and their passkeys.
 * Their sessions end with them. The last owner cannot be removed.
 */
export async function removeMember(a: {
  orgId: string;
  actor: Actor;
  userId: string;
  /** Also revoke the API keys the person minted that still work (each audited as key_revoked). */
  revokeKeys?: boolean;
  now: Date;
}): Promise<User> {
  const by = await authorizeAct(a.orgId, a.actor, canManageMembers, 'removing members');
  const target = await memberOf(a.orgId, a.userId);
  if (target.role === 'owner') await ensureOwnerCount(by.org);
  const audit = auditEntry(
    { ...by, orgId: a.orgId },
    'member_removed',
    target.id,
    { email: target.email, role: target.role },
    a.now,
  );
  const refused = await deleteMember(target, audit);
  if (refused === 'last_owner') throw lastOwner(target, 'removed');
  if (refused) throw changedMeanwhile();
  // After the removal, one revocation each: a key revoked meanwhile by someone else is left be.
  if (a.revokeKeys)
    for (const key of await activeKeysOf({ orgId: a.orgId, actor: a.actor, userId: target.id, now: a.now }))
      await revokeKey({ orgId: a.orgId, actor: a.actor, keyId: key.id, now: a.now }).catch((err: unknown) => {
        if (!(err instanceof ActError && err.kind === 'conflict')) throw err;
      });
  return target;
}

/**
 * A fresh enrollment link for a member who lost their device (`herald user enroll`): the operator's
 * act only — with `--by`, that user must be an owner. Earlier links stay valid until they expire.
 */
export async function issueEnrollment(a: {
  orgId: string;
  actor: Actor;
  userId: string;
  consoleUrl: string;
  now: Date;
}): Promise<EnrollmentLink> {
  if (a.actor.kind !== 'operator')
    throw new ActError(
      'a fresh enrollment link is issued by the operator (herald user enroll); ask them',
      'forbidden',
    );
  const by = await authorizeAct(a.orgId, a.actor, canManageMembers, 'issuing enrollment links');
  const target = await memberOf(a.orgId, a.userId);
  const enrollment = newEnrollmentLink({
    orgId: a.orgId,
    userId: target.id,
    issuedBy: issuerOf(by),
    consoleUrl: a.consoleUrl,
    now: a.now,
  });
  const audit = auditEntry(
    { ...by, orgId: a.orgId },
    'enrollment_issued',
    target.id,
    { email: target.email, link_expires_at: enrollment.link.expires_at },
    a.now,
  );
  if (!(await putEnrollmentFor(enrollment.tokenHash, enrollment.record, audit)))
    throw new ActError(`no user ${a.userId} in organization ${a.orgId}`, 'not_found');
  return enrollment.link;
}

// ---- support --------------------------------------------------------------------------------------

/** A user of the organization; another organization's user id is not_found like an unknown one. */
async function memberOf(orgId: string, userId: string): Promise<User> {
  const user = await getUser(orgId, userId);
  if (!user) throw new ActError(`no user ${userId} in organization ${orgId}`, 'not_found');
  return user;
}

/** Organizations created before owner_count existed get it before their first change of owners. */
async function ensureOwnerCount(org: Org): Promise<void> {
  if (typeof org.owner_count !== 'number') await initOwnerCount(org.id);
}

const lastOwner = (user: User, what: 'demoted' | 'removed') =>
  new ActError(
    `${user.email} is the last owner and cannot be ${what}: make another member an owner first`,
    'conflict',
  );

const changedMeanwhile = () =>
  new ActError('the members changed while this was being done; look again and retry', 'conflict');

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
/** Printable ASCII: a letter of another script can pass for a Latin one (a Cyrillic о for o). */
const ASCII = /^[\x21-\x7e]+$/;

/**
 * Stored lowercased: one person, one user per organization, however they type it. Plain ASCII
 * only: hidden characters and other scripts could make one address display as another.
 */
function validEmail(raw: string): string {
  const email = raw.trim().toLowerCase();
  const hidden = hiddenCharacterIn(email, false);
  if (hidden) throw new ActError(hiddenCharacterMessage('The e-mail address', hidden));
  if (!ASCII.test(email))
    throw new ActError(
      'Use an e-mail address of plain ASCII letters, digits and punctuation: letters of other scripts can imitate another address.',
    );
  if (email.length > 254 || !EMAIL.test(email)) throw new ActError(`not an email address: ${raw}`);
  return email;
}

function validRole(raw: string): Role {
  if (!(ROLES as readonly string[]).includes(raw))
    throw new ActError(`a role is one of ${ROLES.join(', ')}; not ${raw}`);
  return raw as Role;
}

/** Mails the link when a sender is configured; a failure to send is logged, the link still shown. */
async function mailLink(org: Org, user: User, link: EnrollmentLink): Promise<boolean> {
  try {
    return await sendEmail({
      what: 'enrollment link',
      to: [user.email],
      subject: `You are invited to ${org.name} on Herald`,
      text: [
        `You have been invited to ${org.name} on Herald as ${user.role}.`,
        '',
        'Open this link to register a passkey and sign in. It works once, until',
        `${link.expires_at}:`,
        '',
        link.url,
        '',
        'If you did not expect this, ignore it: nothing happens unless the link is opened.',
      ].join('\n'),
    });
  } catch (err) {
    logger.warn('enrollment link not emailed', { reason: (err as Error).name, user_id: user.id });
    return false;
  }
}

export type { Role };
