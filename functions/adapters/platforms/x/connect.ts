import type { TokenSet } from '../../oauth.ts';
import { connectApi, type OAuthConnect, oauthCredentials, oauthServer, platformAccount } from '../connect.ts';
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

const get = connectApi('x', 'https://api.x.com/2');

async function me(auth: string | Credentials): Promise<NonNullable<Me['data']>> {
  const body = await get<Me>('/users/me?user.fields=profile_image_url,public_metrics', auth);
  if (!body.data?.id) throw new Error('x: /2/users/me answered no user');
  return body.data;
}

const account = (user: NonNullable<Me['data']>, credentials: Credentials) =>
  platformAccount(credentials, {
    id: user.id,
    type: 'user',
    handle: user.username,
    name: user.name,
    avatar: user.profile_image_url,
    followers: user.public_metrics?.followers_count,
  });

export const connect: OAuthConnect = {
  kind: 'oauth',
  server: () =>
    oauthServer('x', {
      authorize: 'https://x.com/i/oauth2/authorize',
      token: 'https://api.x.com/2/oauth2/token',
      revoke: 'https://api.x.com/2/oauth2/revoke',
      clientAuth: 'basic',
      pkce: true,
      scopeSeparator: ' ',
      // X answers a spent, revoked or unknown refresh token (or code) with invalid_request.
      grantRefusals: [
        {
          error: 'invalid_request',
          description: /^Value passed for the (token|authorization code) was invalid/i,
        },
      ],
    }),
  // dm.read and dm.write: the inbox's direct messages (inbox.ts); mentions need tweet.read.
  scopes: ['tweet.read', 'tweet.write', 'users.read', 'media.write', 'offline.access', 'dm.read', 'dm.write'],
  required: ['tweet.write', 'users.read', 'offline.access'],
  async accounts(tokens: TokenSet) {
    const user = await me(tokens.access_token);
    return [account(user, oauthCredentials(tokens, user.id))];
  },
  async profile(credentials) {
    return account(await me(credentials), credentials);
  },
  refresh: 'oauth',
};
