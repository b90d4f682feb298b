import type {
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
} from '@simplewebauthn/server';
import { countAttempt } from '#adapters/attempts';
import { putCeremony, takeCeremony } from '#adapters/ceremonies';
import { getEnrollment } from '#adapters/enrollments';
import { getOrg } from '#adapters/orgs';
import {
  getPasskeyAndUser,
  listPasskeysOf,
  recordSignIn,
  removePasskeyKeeping,
  saveAddedPasskey,
  saveEnrolledPasskey,
} from '#adapters/passkeys';
import { getUser } from '#adapters/users';
import type { User } from '#core/accounts';
import {
  ActError,
  ATTEMPTS_PER_MINUTE,
  CEREMONY_TTL_MS,
  type CeremonyKind,
  type CeremonyRecord,
  hashSecret,
  newSecretToken,
  type PasskeyRecord,
  type SignedIn,
} from '#core/people';
import { hiddenCharacterIn, hiddenCharacterMessage } from '#core/text';
import { type NewSession, newSession } from '#usecases/console-sessions';
import { personAct } from '#usecases/support/person-audit';
import {
  credentialIdOf,
  type NewCredential,
  parseUserHandle,
  type RelyingParty,
  registrationOptions,
  signInOptions,
  userHandleIn,
  verifyAssertion,
  verifyRegistration,
} from '#usecases/support/webauthn';

// Passkeys: how a person gets in (an enrollment link, then their passkey) and manages their own.
// Every ceremony is two requests: begin* stores a challenge (5 minutes, single use) and answers the
// options for the browser; finish* takes the challenge back (deleting it) and checks the answer.

export { type NewSession, signOutEverywhere } from '#usecases/console-sessions';
export type { RelyingParty } from '#usecases/support/webauthn';

/** A session for a person who just proved this passkey: the item the transaction writes, and what the caller is given. */
function sessionFor(user: User, passkey: PasskeyRecord, now: Date) {
  const s = newSession(user.org_id, user.id, user.role, now, passkey.credential_id);
  return {
    item: { cookieHash: s.hash, session: s.session },
    issued: { cookie: s.cookie, session: s.session },
  };
}

export interface PasskeyView {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

interface Ceremony<O> {
  ceremonyId: string;
  options: O;
}

const LINK_GONE = 'This enrollment link has expired or was already used; ask for a new one.';
const TOO_LONG = 'The sign-in took too long; try again.';
const NOT_HERE = 'This passkey is not registered here.';

/** Counts an attempt from `source`; refused past ATTEMPTS_PER_MINUTE in the same minute. */
async function limitAttempts(what: 'enroll' | 'sign_in', source: string, now: Date): Promise<void> {
  const minute = Math.floor(now.getTime() / 60_000);
  if (!(await countAttempt(what, source || 'unknown', minute, ATTEMPTS_PER_MINUTE))) {
    throw new ActError('Too many attempts from your address; wait a minute and try again.', 'rate_limited');
  }
}

/** Stores a ceremony's challenge and answers its id (unguessable: it travels in a cookie). */
async function startCeremony(
  kind: CeremonyKind,
  challenge: string,
  now: Date,
  who: { org_id: string; user_id: string; enrollment_hash?: string } | null,
): Promise<string> {
  const rec: CeremonyRecord = {
    id: newSecretToken(),
    kind,
    challenge,
    org_id: who?.org_id ?? null,
    user_id: who?.user_id ?? null,
    enrollment_hash: who?.enrollment_hash ?? null,
    expires_at: new Date(now.getTime() + CEREMONY_TTL_MS).toISOString(),
  };
  await putCeremony(rec);
  return rec.id;
}

/** Takes the ceremony back (it is deleted: an answer is checked once); refused when gone, late or another kind. */
async function takeBack(ceremonyId: string, kind: CeremonyKind, now: Date, late = TOO_LONG) {
  const rec =
    typeof ceremonyId === 'string' && ceremonyId.length > 0 && ceremonyId.length <= 100
      ? await takeCeremony(ceremonyId)
      : null;
  if (!rec || rec.kind !== kind || Date.parse(rec.expires_at) <= now.getTime()) {
    throw new ActError(late, 'invalid');
  }
  return rec;
}

function passkeyOf(user: User, cred: NewCredential, now: Date, name?: string): PasskeyRecord {
  const given = name?.trim().replace(/\s+/g, ' ').slice(0, 60);
  return {
    org_id: user.org_id,
    user_id: user.id,
    ...cred,
    name: given || `Passkey added ${now.toISOString().slice(0, 10)}`,
    created_at: now.toISOString(),
    last_used_at: null,
  };
}

const view = (p: PasskeyRecord): PasskeyView => ({
  id: p.credential_id,
  name: p.name,
  created_at: p.created_at,
  last_used_at: p.last_used_at,
});

/**
 * beginEnrollment. Primary course: count the attempt → find the link by its token's hash (unspent,
 * unexpired) → read its user and organization → registration options for that user (their
 * existing passkeys excluded) → store the ceremony with the link's hash.
 */
export async function beginEnrollment(a: {
  token: string;
  rp: RelyingParty;
  source: string;
  now: Date;
}): Promise<Ceremony<PublicKeyCredentialCreationOptionsJSON> & { email: string; orgName: string }> {
  await limitAttempts('enroll', a.source, a.now);
  const hash = typeof a.token === 'string' && a.token.length > 0 ? hashSecret(a.token) : null;
  const link = hash ? await getEnrollment(hash, a.now) : null;
  if (!hash || !link) throw new ActError(LINK_GONE, 'not_found');
  const [user, org, existing] = await Promise.all([
    getUser(link.org_id, link.user_id),
    getOrg(link.org_id),
    listPasskeysOf(link.org_id, link.user_id),
  ]);
  if (!user || !org)
    throw new ActError('The person this link was made for is no longer a member.', 'not_found');
  const options = await registrationOptions(a.rp, user, existing);
  const ceremonyId = await startCeremony('enroll', options.challenge, a.now, {
    org_id: user.org_id,
    user_id: user.id,
    enrollment_hash: hash,
  });
  return { ceremonyId, options, email: user.email, orgName: org.name };
}

/**
 * finishEnrollment. Primary course: take the ceremony back → verify the registration answer →
 * in one transaction spend the link, save the passkey, start a session, record passkey_added and
 * signed_in. A link spent or expired meanwhile fails the transaction: nothing is saved.
 */
export async function finishEnrollment(a: {
  ceremonyId: string;
  response: unknown;
  rp: RelyingParty;
  source: string;
  now: Date;
}): Promise<NewSession> {
  const ceremony = await takeBack(
    a.ceremonyId,
    'enroll',
    a.now,
    'The enrollment took too long; open the link again and try again.',
  );
  if (!ceremony.org_id || !ceremony.user_id || !ceremony.enrollment_hash)
    throw new ActError(LINK_GONE, 'not_found');
  const cred = await verifyRegistration(a.response, ceremony.challenge, a.rp);
  const user = await getUser(ceremony.org_id, ceremony.user_id);
  if (!user) throw new ActError('The person this link was made for is no longer a member.', 'not_found');
  const passkey = passkeyOf(user, cred, a.now);
  const start = sessionFor(user, passkey, a.now);
  const saved = await saveEnrolledPasskey({
    tokenHash: ceremony.enrollment_hash,
    passkey,
    start: start.item,
    audit: [
      personAct(user, 'passkey_added', a.now, passkey.credential_id, {
        name: passkey.name,
        via: 'enrollment',
      }),
      personAct(user, 'signed_in', a.now, null, { session: start.issued.session.id }),
    ],
    now: a.now,
  });
  if (!saved) throw new ActError(LINK_GONE, 'not_found');
  return start.issued;
}

/** beginSignIn. Primary course: count the attempt → options with no allowed credentials → store the ceremony. */
export async function beginSignIn(a: {
  rp: RelyingParty;
  source: string;
  now: Date;
}): Promise<Ceremony<PublicKeyCredentialRequestOptionsJSON>> {
  await limitAttempts('sign_in', a.source, a.now);
  const options = await signInOptions(a.rp);
  const ceremonyId = await startCeremony('sign_in', options.challenge, a.now, null);
  return { ceremonyId, options };
}

/**
 * finishSignIn. Primary course: take the ceremony back → the answer's user handle names the
 * organization and user → read that user's passkey with this credential id, and the user →
 * verify the signature with the stored key, and the counter → in one transaction record the
 * counter and last use (conditional on the counter read), start the session, record signed_in.
 */
export async function finishSignIn(a: {
  ceremonyId: string;
  response: unknown;
  rp: RelyingParty;
  source: string;
  now: Date;
}): Promise<NewSession> {
  const ceremony = await takeBack(a.ceremonyId, 'sign_in', a.now);
  const who = parseUserHandle(userHandleIn(a.response));
  const credentialId = credentialIdOf(a.response);
  if (!who || !credentialId) throw new ActError(NOT_HERE, 'invalid');
  const { passkey, user } = await getPasskeyAndUser(who.orgId, who.userId, credentialId);
  if (!passkey || !user) throw new ActError(NOT_HERE, 'invalid');
  const counter = await verifyAssertion(a.response, ceremony.challenge, a.rp, passkey);
  const start = sessionFor(user, passkey, a.now);
  const saved = await recordSignIn({
    passkey,
    counter,
    start: start.item,
    audit: personAct(user, 'signed_in', a.now, null, {
      session: start.issued.session.id,
      passkey: passkey.name,
    }),
  });
  // The passkey was used (or removed) by another request meanwhile.
  if (!saved) throw new ActError('This passkey was just used elsewhere; try again.', 'invalid');
  return start.issued;
}

/** beginAddPasskey. Primary course: registration options for the signed-in person → store the ceremony. */
export async function beginAddPasskey(a: {
  signedIn: SignedIn;
  rp: RelyingParty;
  now: Date;
}): Promise<Ceremony<PublicKeyCredentialCreationOptionsJSON>> {
  const { user } = a.signedIn;
  const options = await registrationOptions(a.rp, user, await listPasskeysOf(user.org_id, user.id));
  const ceremonyId = await startCeremony('add_passkey', options.challenge, a.now, {
    org_id: user.org_id,
    user_id: user.id,
  });
  return { ceremonyId, options };
}

/**
 * finishAddPasskey. Primary course: take the ceremony back (it must be this person's) → verify the
 * registration answer → save the passkey with its passkey_added entry.
 */
export async function finishAddPasskey(a: {
  signedIn: SignedIn;
  ceremonyId: string;
  response: unknown;
  rp: RelyingParty;
  name?: string | undefined;
  now: Date;
}): Promise<PasskeyView> {
  const { user } = a.signedIn;
  // Before the ceremony is taken back: a refused name leaves it to be answered again.
  const hidden = a.name ? hiddenCharacterIn(a.name) : null;
  if (hidden) throw new ActError(hiddenCharacterMessage('The name', hidden), 'invalid');
  const ceremony = await takeBack(
    a.ceremonyId,
    'add_passkey',
    a.now,
    'Adding the passkey took too long; try again.',
  );
  if (ceremony.org_id !== user.org_id || ceremony.user_id !== user.id) {
    throw new ActError('Adding the passkey took too long; try again.', 'invalid');
  }
  const cred = await verifyRegistration(a.response, ceremony.challenge, a.rp);
  const passkey = passkeyOf(user, cred, a.now, a.name);
  const saved = await saveAddedPasskey(
    passkey,
    personAct(user, 'passkey_added', a.now, passkey.credential_id, { name: passkey.name }),
  );
  if (!saved) throw new ActError('This passkey is already registered.', 'conflict');
  return view(passkey);
}

/** The signed-in person's passkeys, oldest first. */
export async function listPasskeys(signedIn: SignedIn): Promise<PasskeyView[]> {
  return (await listPasskeysOf(signedIn.user.org_id, signedIn.user.id)).map(view);
}

/** Removes one of the person's own passkeys; refused for the last one (they could not get back in). */
export async function removePasskey(signedIn: SignedIn, credentialId: string, now: Date): Promise<void> {
  const { user } = signedIn;
  const mine = await listPasskeysOf(user.org_id, user.id);
  const target = mine.find((p) => p.credential_id === credentialId);
  if (!target) throw new ActError('You have no passkey with this id.', 'not_found');
  const keep = mine.find((p) => p.credential_id !== credentialId);
  if (!keep) {
    throw new ActError(
      'This is your only passkey: add another before removing it, or you could not sign in again.',
      'conflict',
    );
  }
  const removed = await removePasskeyKeeping(
    user.org_id,
    user.id,
    credentialId,
    keep.credential_id,
    personAct(user, 'passkey_removed', now, credentialId, { name: target.name }),
  );
  // Removed meanwhile, or the one kept was: nothing changed; the page shows what is left.
  if (!removed) throw new ActError('Your passkeys changed meanwhile; look again and retry.', 'conflict');
}
