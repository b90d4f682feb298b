import { connectApi, type OAuthConnect, oauthCredentials, oauthServer, platformAccount } from '../connect.ts';
import type { HttpResponse } from '../http.ts';
import type { Credentials } from '../types.ts';

// TikTok Login Kit for web: authorization code with the app's client_key (TikTok's name for the
// client id) and secret as form fields, access tokens for a day, rotating refresh tokens (a year),
// revocation at /v2/oauth/revoke/. The account is the user (Display API /v2/user/info/).

interface UserInfo {
  data?: {
    user?: {
      open_id: string;
      username?: string;
      display_name?: string;
      avatar_url?: string;
      follower_count?: number;
    };
  };
  error?: { code?: string; message?: string };
}

const API = 'https://open.tiktokapis.com';
const detail = (res: HttpResponse) => {
  const e = (res.body as UserInfo | undefined)?.error;
  return e ? `${e.code ?? ''}: ${e.message ?? ''}` : '';
};
const get = connectApi('tiktok', API, detail);

async function me(auth: string | Credentials, credentials: Credentials) {
  const body = await get<UserInfo>(
    '/v2/user/info/?fields=open_id,union_id,avatar_url,display_name,username,follower_count',
    auth,
  );
  const user = body.data?.user;
  if (!user?.open_id)
    throw new Error(`tiktok: user info answered no user (${detail({ body } as HttpResponse)})`);
  return platformAccount(credentials, {
    id: user.open_id,
    type: 'user',
    handle: user.username ?? user.display_name ?? user.open_id,
    name: user.display_name,
    avatar: user.avatar_url,
    followers: user.follower_count,
  });
}

export const connect: OAuthConnect = {
  kind: 'oauth',
  server: () =>
    oauthServer('tiktok', {
      authorize: 'https://www.tiktok.com/v2/auth/authorize/',
      token: `${API}/v2/oauth/token/`,
      revoke: `${API}/v2/oauth/revoke/`,
      clientAuth: 'tiktok',
      pkce: false,
      scopeSeparator: ',',
    }),
  scopes: ['user.info.basic', 'user.info.profile', 'user.info.stats', 'video.publish', 'video.upload'],
  required: ['user.info.basic', 'video.publish'],
  async accounts(tokens) {
    return [await me(tokens.access_token, oauthCredentials(tokens, ''))];
  },
  profile: (credentials) => me(credentials, credentials),
  refresh: 'oauth',
  revokesAuthorization: true,
};
