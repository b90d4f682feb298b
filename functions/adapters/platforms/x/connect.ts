import type { TokenSet } from '../../oauth.ts';
import {
  accessToken,
  count,
  getJson,
  type OAuthConnect,
  oauthCredentials,
  type PlatformAccount,
} from '../connect.ts';
import { platformUrl } from '../http.ts';
import type { Credentials } from '../types.ts';

// X: OAuth 2.0 authorization code with PKCE (confidential client, HTTP Basic at the token
// endpoint), access tokens for 2 h, single-use refresh tokens (offline.access), RFC 7009
// revocation; the account is the authenticated user (GET /2/users/me).

interface Me {
  data?: {
    id: string;
    username: string;
    name?: string;
    profile_image_url?: string;
    public_metrics?: { followers_count?: number };
  };
}

async function me(token: string): Promise<NonNullable<Me['data']>> {
  const url = platformUrl('x', 'https://api.x.com/2/users/me?user.fields=profile_image_url,public_metrics');
  const body = await getJson<Me>('x', url, { token });
  if (!body.data?.id) throw new Error('x: /2/users/me answered no user');
  return body.data;
}

function account(user: NonNullable<Me['data']>, credentials: Credentials): PlatformAccount {
  return {
    id: user.id,
    type: 'user',
    handle: user.username,
    name: user.name ?? null,
    avatar_url: user.profile_image_url ?? null,
    followers: count(user.public_metrics?.followers_count),
    credentials: { ...credentials, account_id: user.id },
  };
}

export const connect: OAuthConnect = {
  kind: 'oauth',
  server: () => ({
    name: 'x',
    authorize: platformUrl('x', 'https://x.com/i/oauth2/authorize'),
    token: platformUrl('x', 'https://api.x.com/2/oauth2/token'),
    revoke: platformUrl('x', 'https://api.x.com/2/oauth2/revoke'),
    clientAuth: 'basic',
    pkce: true,
    scopeSeparator: ' ',
  }),
  scopes: ['tweet.read', 'tweet.write', 'users.read', 'media.write', 'offline.access'],
  required: ['tweet.write', 'users.read', 'offline.access'],
  async accounts(tokens: TokenSet) {
    const user = await me(tokens.access_token);
    return [account(user, oauthCredentials(tokens, user.id))];
  },
  async profile(credentials) {
    return account(await me(accessToken('x', credentials)), credentials);
  },
  refresh: 'oauth',
};
