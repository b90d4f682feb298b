import { type PasswordConnect, platformAccount } from '../connect.ts';
import { AccountMismatchError, type Credentials } from '../types.ts';
import { Client, type SessionData, sessionScope } from './client.ts';

// Bluesky: an app password (identifier, app password, PDS origin), no OAuth. Connecting opens a
// session (com.atproto.server.createSession) and reads the profile (app.bsky.actor.getProfile);
// the session's scope says whether the password allows direct messages (the inbox's); disconnecting
// ends the session. The PDS is the user's choice, so every call goes through the
// address-checked fetch (client.ts).

interface Profile {
  did: string;
  handle: string;
  displayName?: string;
  avatar?: string;
  followersCount?: number;
}

async function profileOf(credentials: Credentials) {
  const client = new Client(credentials);
  const session = await client.session();
  const p = await client.ok<Profile>('app.bsky.actor.getProfile', { query: { actor: session.did } });
  return platformAccount(credentials, {
    id: p.did,
    type: 'user',
    handle: p.handle,
    name: p.displayName,
    avatar: p.avatar,
    followers: p.followersCount,
  });
}

/**
 * The server is the person's choice and may answer any handle or DID: the account it signed in must
 * be the one typed — that handle (case aside) or that DID. An e-mail address names no account to
 * hold the answer to, so it is refused: the handle is asked for instead.
 */
function checkNamed(typed: string, session: SessionData): void {
  const named = typed.trim().toLowerCase();
  if (named.includes('@'))
    throw new AccountMismatchError(
      'Sign in with your handle (like you.bsky.social) or DID, not an e-mail address: Herald checks that the server signed in the account you named.',
    );
  const answered = named.startsWith('did:') ? session.did : String(session.handle ?? '').toLowerCase();
  if (answered !== named)
    throw new AccountMismatchError(
      `The server signed in ${answered || 'another account'}, not ${named}: Herald connects only the account you named.`,
    );
}

/**
 * What the password allows, from its session's scope: an app password with direct-message access
 * (com.atproto.appPassPrivileged), one without (com.atproto.appPass), or the account's own password
 * (com.atproto.access), which allows all a privileged one does. null: the PDS's token says nothing.
 */
export function grantedScopes(session: SessionData): string[] | null {
  const scope = sessionScope(session);
  if (!scope) return null;
  return scope === 'com.atproto.access' ? [scope, 'com.atproto.appPassPrivileged'] : [scope];
}

export const connect: PasswordConnect = {
  kind: 'app_password',
  async login(credentials) {
    // A fresh session: connecting checks the password itself, not a session cached from before.
    const session = await new Client(credentials).login();
    checkNamed(String(credentials.identifier ?? ''), session);
    return { ...(await profileOf(credentials)), scopes: grantedScopes(session) };
  },
  profile: profileOf,
  async revoke(credentials) {
    await new Client(credentials).logout();
  },
};
