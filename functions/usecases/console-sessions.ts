import {
  deleteSession,
  endSession,
  endSessionsOf,
  getSessionAndUser,
  touchSession,
} from '#adapters/console-sessions';
import type { Role, User } from '#core/accounts';
import { newId } from '#core/ids';
import {
  type ConsoleSessionRecord,
  hashSecret,
  newSecretToken,
  ROLE_RANK,
  SESSION_ABSOLUTE_MS,
  SESSION_IDLE_MS,
  SESSION_TOUCH_MS,
  type SessionCutoffs,
  type SignedIn,
} from '#core/people';
import { personAct } from '#usecases/support/person-audit';

// Console sessions. The cookie's value is `<org>~<user>~<secret>` and the session is stored under
// the SHA-256 of that whole value: the cookie names whom to read, the hash proves it was issued
// (a cookie changed in any character hashes to no session), and one BatchGet answers both.

/** A new session: the cookie's value (set by the web layer) and its record. */
export interface NewSession {
  cookie: string;
  session: ConsoleSessionRecord;
}

const ID = /^[A-Za-z0-9_-]{1,100}$/;
const SECRET = /^[A-Za-z0-9_-]{43}$/;

/** The organization and user a cookie value names, and its hash; null when it is not one of ours. */
function parseCookie(cookie: string | undefined): { orgId: string; userId: string; hash: string } | null {
  if (!cookie || cookie.length > 300) return null;
  const [orgId, userId, secret, ...rest] = cookie.split('~');
  if (rest.length > 0 || !orgId || !userId || !secret) return null;
  if (!ID.test(orgId) || !ID.test(userId) || !SECRET.test(secret)) return null;
  return { orgId, userId, hash: hashSecret(cookie) };
}

/** A session for a person who just proved a passkey: the cookie and the record to store under its hash. */
export function newSession(
  orgId: string,
  userId: string,
  role: Role,
  now: Date,
  passkey: string,
): NewSession & { hash: string } {
  const cookie = `${orgId}~${userId}~${newSecretToken()}`;
  const at = now.toISOString();
  return {
    cookie,
    hash: hashSecret(cookie),
    session: {
      id: newId('session', now.getTime()),
      org_id: orgId,
      user_id: userId,
      role,
      created_at: at,
      seen_at: at,
      expires_at: new Date(now.getTime() + SESSION_ABSOLUTE_MS).toISOString(),
      passkey,
    },
  };
}

/** Why a stored session no longer lets its person in; null while it does. */
function ended(
  s: ConsoleSessionRecord,
  user: User | null,
  cut: SessionCutoffs | null,
  orgId: string,
  userId: string,
  now: Date,
) {
  if (s.org_id !== orgId || s.user_id !== userId) return 'mismatch';
  if (now.getTime() >= Date.parse(s.expires_at)) return 'expired';
  if (now.getTime() - Date.parse(s.seen_at) >= SESSION_IDLE_MS) return 'idle';
  if (!user || !cut) return 'removed';
  if (ROLE_RANK[user.role] < ROLE_RANK[s.role]) return 'demoted';
  const began = Date.parse(s.created_at);
  if (cut.validAfter && began <= Date.parse(cut.validAfter)) return 'signed_out_everywhere';
  if (
    s.passkey
      ? cut.endedPasskeys.has(s.passkey)
      : cut.passkeyRemovedAt && began <= Date.parse(cut.passkeyRemovedAt)
  )
    return 'passkey_removed';
  return null;
}

/**
 * resolveSession. Primary course: parse the cookie → read the session and its user (one BatchGet)
 * → check it (names this org and user, before its absolute expiry, seen within the idle time, the
 * user still there at no lower role, not ended by a sign-out everywhere or by removing its passkey) → touch its last-seen time when older than SESSION_TOUCH_MS.
 * A session that fails a check is deleted, so it can never come back.
 */
export async function resolveSession(cookie: string | undefined, now: Date): Promise<SignedIn | null> {
  const parsed = parseCookie(cookie);
  if (!parsed) return null;
  const { session, user, cutoffs } = await getSessionAndUser(parsed.hash, parsed.orgId, parsed.userId);
  if (!session) return null;
  if (!user || ended(session, user, cutoffs, parsed.orgId, parsed.userId, now)) {
    await deleteSession(parsed.hash);
    return null;
  }
  if (now.getTime() - Date.parse(session.seen_at) >= SESSION_TOUCH_MS) {
    const seenAt = now.toISOString();
    // Another request may have touched it meanwhile: theirs is as good as ours.
    if (await touchSession(parsed.hash, session.seen_at, seenAt)) session.seen_at = seenAt;
  }
  return { session, user };
}

/** Ends the session at once (its item is deleted) and records `signed_out`. */
export async function signOut(cookie: string | undefined, now: Date): Promise<void> {
  const parsed = parseCookie(cookie);
  if (!parsed) return;
  const { session, user } = await getSessionAndUser(parsed.hash, parsed.orgId, parsed.userId);
  if (!session) return;
  if (!user || session.org_id !== parsed.orgId || session.user_id !== parsed.userId) {
    // Nobody to record it for: the session only goes.
    await deleteSession(parsed.hash);
    return;
  }
  // False when a concurrent sign-out ended it first (and recorded it).
  await endSession(parsed.hash, personAct(user, 'signed_out', now, null, { session: session.id }));
}

/**
 * resolveSession's checks without its writes (no last-seen touch, no delete of an ended session):
 * for the 404 of an address no page serves, whose function may only read. A session it refuses is
 * ended by the next page the person opens.
 */
export async function peekSession(cookie: string | undefined, now: Date): Promise<SignedIn | null> {
  const parsed = parseCookie(cookie);
  if (!parsed) return null;
  const { session, user, cutoffs } = await getSessionAndUser(parsed.hash, parsed.orgId, parsed.userId);
  if (!session || !user || ended(session, user, cutoffs, parsed.orgId, parsed.userId, now)) return null;
  return { session, user };
}

/**
 * Ends every session of the signed-in person, on every device and this one, and records
 * `signed_out_everywhere`. Their passkeys stay: they sign in again with any of them.
 */
export async function signOutEverywhere(signedIn: SignedIn, now: Date): Promise<void> {
  const { user, session } = signedIn;
  const at = now.toISOString();
  await endSessionsOf(
    user.org_id,
    user.id,
    at,
    personAct(user, 'signed_out_everywhere', now, null, { session: session.id }),
  );
}
