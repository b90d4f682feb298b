import { auditPut } from '#adapters/audit-log';
import { sessionPut } from '#adapters/console-sessions';
import { spendEnrollmentItem } from '#adapters/enrollments';
import { keys } from '#adapters/keys';
import { batchGet, fromItem, queryAll, TABLE_NAME, transactIf } from '#adapters/table';
import { userOf } from '#adapters/users';
import type { User } from '#core/accounts';
import type { AuditEntry, ConsoleSessionRecord, PasskeyRecord } from '#core/people';

// A person's passkeys, under their organization (`PASSKEY#<user>#<credential>`): sign-in finds one
// from the assertion's user handle (`<org>/<user>`) and credential id, without an index. Writes are
// transaction items, so a passkey is saved or removed with the session, the link and the audit
// entry that go with it.

/** The transaction item that saves a new passkey (refused if that credential is already saved). */
function passkeyPut(rec: PasskeyRecord) {
  return {
    Put: {
      TableName: TABLE_NAME,
      Item: { ...keys.passkey(rec.org_id, rec.user_id, rec.credential_id), entity: 'passkey', ...rec },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
}

/**
 * The transaction item that records a sign-in with a passkey: its new signature counter and when it
 * was used. Conditional on the counter still being the one the assertion was checked against, so
 * two sign-ins racing with the same counter cannot both pass.
 */
function passkeyUsedUpdate(rec: PasskeyRecord, counter: number, at: string) {
  return {
    Update: {
      TableName: TABLE_NAME,
      Key: keys.passkey(rec.org_id, rec.user_id, rec.credential_id),
      UpdateExpression: 'SET #c = :c, #u = :u',
      ConditionExpression: 'attribute_exists(pk) AND #c = :old',
      ExpressionAttributeNames: { '#c': 'counter', '#u': 'last_used_at' },
      ExpressionAttributeValues: { ':c': counter, ':u': at, ':old': rec.counter },
    },
  };
}

/** The transaction item that removes a passkey (refused if it is already gone). */
function passkeyDelete(orgId: string, userId: string, credentialId: string) {
  return {
    Delete: {
      TableName: TABLE_NAME,
      Key: keys.passkey(orgId, userId, credentialId),
      ConditionExpression: 'attribute_exists(pk)',
    },
  };
}

/** The transaction item that holds only while that passkey exists (a person keeps at least one). */
function passkeyExistsCheck(orgId: string, userId: string, credentialId: string) {
  return {
    ConditionCheck: {
      TableName: TABLE_NAME,
      Key: keys.passkey(orgId, userId, credentialId),
      ConditionExpression: 'attribute_exists(pk)',
    },
  };
}

/** The transaction item that holds only while the user exists (not removed meanwhile). */
function userExistsCheck(orgId: string, userId: string) {
  return {
    ConditionCheck: {
      TableName: TABLE_NAME,
      Key: keys.user(orgId, userId),
      ConditionExpression: 'attribute_exists(pk)',
    },
  };
}

/** A passkey and its user, in one round trip; either null when missing. */
export async function getPasskeyAndUser(
  orgId: string,
  userId: string,
  credentialId: string,
): Promise<{ passkey: PasskeyRecord | null; user: User | null }> {
  const [passkey, user] = await batchGet([
    keys.passkey(orgId, userId, credentialId),
    keys.user(orgId, userId),
  ]);
  return {
    passkey: passkey ? fromItem<PasskeyRecord>(passkey) : null,
    user: user ? userOf(user) : null,
  };
}

/** The user's passkeys, oldest first. */
export async function listPasskeysOf(orgId: string, userId: string): Promise<PasskeyRecord[]> {
  const { pk, skPrefix } = keys.passkeysOfUser(orgId, userId);
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
    ExpressionAttributeValues: { ':pk': pk, ':sk': skPrefix },
  });
  return items
    .map((i) => fromItem<PasskeyRecord>(i))
    .sort(
      (a, b) => a.created_at.localeCompare(b.created_at) || a.credential_id.localeCompare(b.credential_id),
    );
}

type NewSessionItem = { cookieHash: string; session: ConsoleSessionRecord };

/**
 * Enrollment, all or nothing: spends the link (it must still be unspent and unexpired at `now`),
 * saves the passkey, starts the session and records `audit`, while the user still exists. False
 * when any of it was refused (nothing written).
 */
export function saveEnrolledPasskey(a: {
  tokenHash: string;
  passkey: PasskeyRecord;
  start: NewSessionItem;
  audit: AuditEntry[];
  now: Date;
}): Promise<boolean> {
  return transactIf([
    spendEnrollmentItem(a.tokenHash, a.now),
    userExistsCheck(a.passkey.org_id, a.passkey.user_id),
    passkeyPut(a.passkey),
    sessionPut(a.start.cookieHash, a.start.session),
    ...a.audit.map(auditPut),
  ]);
}

/** Another passkey for a signed-in person, with its audit entry; false when refused (nothing written). */
export function saveAddedPasskey(passkey: PasskeyRecord, audit: AuditEntry): Promise<boolean> {
  return transactIf([userExistsCheck(passkey.org_id, passkey.user_id), passkeyPut(passkey), auditPut(audit)]);
}

/**
 * A sign-in, all or nothing: the passkey's new counter and last use (while its counter is still the
 * one checked), the new session and its audit entry. False when refused (nothing written).
 */
export function recordSignIn(a: {
  passkey: PasskeyRecord;
  counter: number;
  start: NewSessionItem;
  audit: AuditEntry;
}): Promise<boolean> {
  return transactIf([
    passkeyUsedUpdate(a.passkey, a.counter, a.start.session.created_at),
    userExistsCheck(a.passkey.org_id, a.passkey.user_id),
    sessionPut(a.start.cookieHash, a.start.session),
    auditPut(a.audit),
  ]);
}

/**
 * Removes a passkey while `keep` (another of the same person's) still exists, so two removals racing
 * can never leave the person without one; false when refused (nothing written).
 */
export function removePasskeyKeeping(
  orgId: string,
  userId: string,
  credentialId: string,
  keep: string,
  audit: AuditEntry,
): Promise<boolean> {
  return transactIf([
    passkeyDelete(orgId, userId, credentialId),
    passkeyExistsCheck(orgId, userId, keep),
    auditPut(audit),
    {
      // The sessions this passkey opened end at their next request (see SessionCutoffs).
      Update: {
        TableName: TABLE_NAME,
        Key: keys.user(orgId, userId),
        UpdateExpression: 'ADD ended_passkeys :c SET passkey_removed_at = :at',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':c': new Set([credentialId]), ':at': audit.at },
      },
    },
  ]);
}
