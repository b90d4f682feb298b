import { type PasswordConnect, platformAccount } from '../connect.ts';
import type { Credentials } from '../types.ts';
import { Client } from './client.ts';

// Bluesky: an app password (identifier, app password, PDS origin), no OAuth. Connecting opens a
// session (com.atproto.server.createSession) and reads the profile (app.bsky.actor.getProfile);
// disconnecting ends the session. The PDS is the user's choice, so every call goes through the
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

export const connect: PasswordConnect = {
  kind: 'app_password',
  async login(credentials) {
    // A fresh session: connecting checks the password itself, not a session cached from before.
    await new Client(credentials).login();
    return profileOf(credentials);
  },
  profile: profileOf,
  async revoke(credentials) {
    await new Client(credentials).logout();
  },
};
