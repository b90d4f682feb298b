import type { TokenSet } from '../../oauth.ts';
import { accessToken, type OAuthConnect, oauthCredentials, platformAccount } from '../connect.ts';
import type { Credentials } from '../types.ts';
import { userOriginFetch } from '../user-origin.ts';
import { Api } from './client.ts';

// Mastodon: every instance is its own OAuth server. Herald registers an app on an instance the
// first time someone connects an account there (POST /api/v1/apps, kept per instance) and then runs
// the authorization code flow with PKCE (Mastodon 4.3+; older instances ignore it). Tokens do not
// expire; revocation is RFC 7009 at /oauth/revoke. The instance is the user's choice, so every call
// goes through the address-checked fetch.

interface Account {
  id: string;
  username: string;
  acct: string;
  display_name?: string;
  avatar?: string;
  followers_count?: number;
}

async function me(instance: string, token: string, credentials: Credentials) {
  const a = await new Api(instance, token).ok<Account>('GET', '/api/v1/accounts/verify_credentials');
  return platformAccount(
    { ...credentials, instance },
    {
      id: a.id,
      type: 'user',
      handle: `@${a.username}@${new URL(instance).host}`,
      name: a.display_name || null,
      avatar: a.avatar,
      followers: a.followers_count,
    },
  );
}

// read:notifications and read:statuses: the inbox's mentions and direct messages (inbox.ts).
export const SCOPES = [
  'read:accounts',
  'read:statuses',
  'read:notifications',
  'write:statuses',
  'write:media',
] as const;

export const connect: OAuthConnect = {
  kind: 'oauth',
  server: (instance = '') => ({
    name: 'mastodon',
    authorize: `${instance}/oauth/authorize`,
    token: `${instance}/oauth/token`,
    revoke: `${instance}/oauth/revoke`,
    clientAuth: 'post',
    pkce: true,
    scopeSeparator: ' ',
    fetch: userOriginFetch(),
  }),
  scopes: SCOPES,
  required: ['write:statuses', 'write:media'],
  async accounts(tokens: TokenSet, instance = '') {
    return [await me(instance, tokens.access_token, oauthCredentials(tokens, ''))];
  },
  async profile(credentials) {
    return me(
      String(credentials.instance ?? '').replace(/\/+$/, ''),
      accessToken('mastodon', credentials),
      credentials,
    );
  },
};
