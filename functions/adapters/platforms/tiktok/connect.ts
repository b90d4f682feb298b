import {
  accessToken,
  count,
  getJson,
  type OAuthConnect,
  oauthCredentials,
  type PlatformAccount,
} from '../connect.ts';
import { type HttpResponse, platformUrl } from '../http.ts';
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

const api = (path: string) => platformUrl('tiktok', `https://open.tiktokapis.com${path}`);
const detail = (res: HttpResponse) => {
  const e = (res.body as UserInfo | undefined)?.error;
  return e ? `${e.code ?? ''}: ${e.message ?? ''}` : '';
};

async function me(token: string, credentials: Credentials): Promise<PlatformAccount> {
  const body = await getJson<UserInfo>(
    'tiktok',
    api('/v2/user/info/?fields=open_id,union_id,avatar_url,display_name,username,follower_count'),
    { token },
    detail,
  );
  const user = body.data?.user;
  if (!user?.open_id)
    throw new Error(`tiktok: user info answered no user (${detail({ body } as HttpResponse)})`);
  return {
    id: user.open_id,
    type: 'user',
    handle: user.username ?? user.display_name ?? user.open_id,
    name: user.display_name ?? null,
    avatar_url: user.avatar_url ?? null,
    followers: count(user.follower_count),
    credentials: { ...credentials, account_id: user.open_id },
  };
}

export const connect: OAuthConnect = {
  kind: 'oauth',
  server: () => ({
    name: 'tiktok',
    authorize: platformUrl('tiktok', 'https://www.tiktok.com/v2/auth/authorize/'),
    token: api('/v2/oauth/token/'),
    revoke: api('/v2/oauth/revoke/'),
    clientAuth: 'tiktok',
    pkce: false,
    scopeSeparator: ',',
  }),
  scopes: ['user.info.basic', 'user.info.profile', 'user.info.stats', 'video.publish', 'video.upload'],
  required: ['user.info.basic', 'video.publish'],
  async accounts(tokens) {
    return [await me(tokens.access_token, oauthCredentials(tokens, ''))];
  },
  profile: (credentials) => me(accessToken('tiktok', credentials), credentials),
  refresh: 'oauth',
};
