import type { SignedIn } from '#core/people';

// STUB (foundation commit): replaced by the sessions work.

/** The person behind a console session cookie's value, or null (no, unknown, expired, demoted). */
export async function resolveSession(_cookie: string | undefined, _now: Date): Promise<SignedIn | null> {
  throw new Error('not implemented');
}

/** Ends the session at once (its item is deleted) and records `signed_out`. */
export async function signOut(_cookie: string | undefined, _now: Date): Promise<void> {
  throw new Error('not implemented');
}
