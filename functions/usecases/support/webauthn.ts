import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
  VerifiedAuthenticationResponse,
  VerifiedRegistrationResponse,
} from '@simplewebauthn/server';
import type { User } from '#core/accounts';
import { once } from '#core/once';
import { ActError, CEREMONY_TTL_MS, type PasskeyRecord } from '#core/people';

// Loaded on the first ceremony, not at init: the library and its certificate parsers are most of
// these functions' bundles, and their GET pages (and every cold start) never need them.
const webauthn = once(() => import('@simplewebauthn/server'));

// The WebAuthn side of the passkey use cases, on @simplewebauthn/server: the options a browser is
// given and the checks of its answers. Every failure becomes an ActError('invalid') with a sentence
// a person can act on; the library's own wording stays out of the page.

/** Who the passkeys are for: rp id (the console URL's host), its name and the exact origin. */
export interface RelyingParty {
  id: string;
  name: string;
  origin: string;
}

/** EdDSA, ES256, RS256: what platform and roaming authenticators offer (no PQC: not every runtime). */
const ALGORITHMS = [-8, -7, -257];

/**
 * The WebAuthn user.id of a person: the UTF-8 bytes of `<org>/<user>`. A discoverable credential
 * hands it back as the assertion's userHandle, which names the passkey's item without an index.
 */
export function userHandleOf(orgId: string, userId: string): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(`${orgId}/${userId}`);
}

/** The organization and user a (base64url) userHandle names; null when it names none. */
export function parseUserHandle(handle: unknown): { orgId: string; userId: string } | null {
  if (typeof handle !== 'string' || handle.length === 0 || handle.length > 400) return null;
  const text = Buffer.from(handle, 'base64url').toString('utf8');
  const m = /^([A-Za-z0-9_-]{1,100})\/([A-Za-z0-9_-]{1,100})$/.exec(text);
  return m?.[1] && m[2] ? { orgId: m[1], userId: m[2] } : null;
}

/** Registration options for `user`, who already has `existing` (not registered twice). */
export async function registrationOptions(
  rp: RelyingParty,
  user: User,
  existing: PasskeyRecord[],
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  return (await webauthn()).generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: user.email,
    userDisplayName: user.email,
    userID: userHandleOf(user.org_id, user.id),
    timeout: CEREMONY_TTL_MS,
    attestationType: 'none',
    excludeCredentials: existing.map((p) => ({ id: p.credential_id, transports: p.transports })),
    // Discoverable: signing in asks for no user name; the passkey names its user.
    authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
    supportedAlgorithmIDs: ALGORITHMS,
  });
}

/** Sign-in options: no allowCredentials, the browser offers the passkeys it holds for this site. */
export async function signInOptions(rp: RelyingParty): Promise<PublicKeyCredentialRequestOptionsJSON> {
  return (await webauthn()).generateAuthenticationOptions({
    rpID: rp.id,
    userVerification: 'preferred',
    timeout: CEREMONY_TTL_MS,
  });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
const isText = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length < 20_000;

function credentialShape(response: unknown, fields: string[]): Record<string, unknown> {
  const inner = isObject(response) ? response.response : undefined;
  if (
    !isObject(response) ||
    !isText(response.id) ||
    response.id.length > 1400 ||
    response.rawId !== response.id ||
    response.type !== 'public-key' ||
    !isObject(inner) ||
    !fields.every((f) => isText(inner[f]))
  ) {
    throw new ActError('The passkey answer is malformed; try again.', 'invalid');
  }
  return response;
}

/** The credential id an answer claims (before it is verified), or null when it has none. */
export function credentialIdOf(response: unknown): string | null {
  return isObject(response) && isText(response.id) && response.id.length <= 1400 ? response.id : null;
}

/** The user handle an assertion carries, unverified (it is not signed: the passkey lookup is the check). */
export function userHandleIn(response: unknown): unknown {
  return isObject(response) && isObject(response.response) ? response.response.userHandle : undefined;
}

/** Says why an answer was refused, in a person's words, from what the library found wrong. */
function refusal(err: unknown): ActError {
  const why = err instanceof Error ? err.message : '';
  if (/origin|RP ID/i.test(why)) {
    return new ActError(
      'This passkey answer was made for another site; open the console at its own address.',
    );
  }
  if (/challenge/i.test(why)) return new ActError('This answer belongs to another attempt; try again.');
  if (/type/i.test(why) && /webauthn/i.test(why))
    return new ActError('The passkey answer is malformed; try again.');
  return new ActError('The passkey could not be verified; try again.', 'invalid');
}

export interface NewCredential {
  credential_id: string;
  public_key: string;
  counter: number;
  transports: string[];
}

/** Checks a registration answer against its challenge and this site; the credential it creates. */
export async function verifyRegistration(
  response: unknown,
  challenge: string,
  rp: RelyingParty,
): Promise<NewCredential> {
  const answer = credentialShape(response, ['clientDataJSON', 'attestationObject']);
  let result: VerifiedRegistrationResponse;
  try {
    result = await (await webauthn()).verifyRegistrationResponse({
      response: answer as unknown as RegistrationResponseJSON,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      // 'preferred' in the options: a security key without a PIN still enrolls.
      requireUserVerification: false,
      supportedAlgorithmIDs: ALGORITHMS,
    });
  } catch (err) {
    throw refusal(err);
  }
  if (!result.verified) throw new ActError('The passkey could not be verified; try again.', 'invalid');
  const { credential } = result.registrationInfo;
  const transports = Array.isArray(credential.transports)
    ? credential.transports.filter((t): t is string => typeof t === 'string' && t.length <= 32).slice(0, 10)
    : [];
  return {
    credential_id: credential.id,
    public_key: Buffer.from(credential.publicKey).toString('base64url'),
    counter: credential.counter,
    transports,
  };
}

/**
 * Checks a sign-in answer against its challenge, this site and the stored passkey: the signature
 * with the stored public key, then the signature counter, which must grow unless the authenticator
 * keeps none (always 0). Answers the new counter.
 */
export async function verifyAssertion(
  response: unknown,
  challenge: string,
  rp: RelyingParty,
  passkey: PasskeyRecord,
): Promise<number> {
  const answer = credentialShape(response, ['clientDataJSON', 'authenticatorData', 'signature']);
  let result: VerifiedAuthenticationResponse;
  try {
    result = await (await webauthn()).verifyAuthenticationResponse({
      response: answer as unknown as AuthenticationResponseJSON,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      // The counter is checked below, after the signature, with our own message.
      credential: {
        id: passkey.credential_id,
        publicKey: new Uint8Array(Buffer.from(passkey.public_key, 'base64url')),
        counter: 0,
        transports: passkey.transports,
      },
      requireUserVerification: false,
    });
  } catch (err) {
    throw refusal(err);
  }
  if (!result.verified) throw new ActError('The passkey could not be verified; try again.', 'invalid');
  const counter = result.authenticationInfo.newCounter;
  if ((counter > 0 || passkey.counter > 0) && counter <= passkey.counter) {
    throw new ActError(
      'This passkey answered with a signature counter it already used (a copied authenticator or a replayed answer); sign-in refused.',
      'invalid',
    );
  }
  return counter;
}
