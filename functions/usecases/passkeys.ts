import type {
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
} from '@simplewebauthn/server';
import type { ConsoleSessionRecord, SignedIn } from '#core/people';

// STUB (foundation commit): replaced by the passkeys work.

/** Who the passkeys are for: rp id (the console URL's host), its name and the exact origin. */
export interface RelyingParty {
  id: string;
  name: string;
  origin: string;
}

/** A new session: the cookie's value (set by the web layer) and its record. */
export interface NewSession {
  cookie: string;
  session: ConsoleSessionRecord;
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

export async function beginEnrollment(_a: {
  token: string;
  rp: RelyingParty;
  source: string;
  now: Date;
}): Promise<Ceremony<PublicKeyCredentialCreationOptionsJSON> & { email: string; orgName: string }> {
  throw new Error('not implemented');
}

export async function finishEnrollment(_a: {
  ceremonyId: string;
  response: unknown;
  rp: RelyingParty;
  source: string;
  now: Date;
}): Promise<NewSession> {
  throw new Error('not implemented');
}

export async function beginSignIn(_a: {
  rp: RelyingParty;
  source: string;
  now: Date;
}): Promise<Ceremony<PublicKeyCredentialRequestOptionsJSON>> {
  throw new Error('not implemented');
}

export async function finishSignIn(_a: {
  ceremonyId: string;
  response: unknown;
  rp: RelyingParty;
  source: string;
  now: Date;
}): Promise<NewSession> {
  throw new Error('not implemented');
}

export async function beginAddPasskey(_a: {
  signedIn: SignedIn;
  rp: RelyingParty;
  now: Date;
}): Promise<Ceremony<PublicKeyCredentialCreationOptionsJSON>> {
  throw new Error('not implemented');
}

export async function finishAddPasskey(_a: {
  signedIn: SignedIn;
  ceremonyId: string;
  response: unknown;
  rp: RelyingParty;
  name?: string | undefined;
  now: Date;
}): Promise<PasskeyView> {
  throw new Error('not implemented');
}

export async function listPasskeys(_signedIn: SignedIn): Promise<PasskeyView[]> {
  throw new Error('not implemented');
}

/** Removes one of the person's own passkeys; refused for the last one (they could not get back in). */
export async function removePasskey(_signedIn: SignedIn, _credentialId: string, _now: Date): Promise<void> {
  throw new Error('not implemented');
}
