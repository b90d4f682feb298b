import { OAuthError, type OAuthServer, type TokenSet } from '../../oauth.ts';
import {
  accessToken,
  count,
  getJson,
  type OAuthConnect,
  oauthCredentials,
  type PlatformAccount,
} from '../connect.ts';
import { platformUrl, request } from '../http.ts';
import { graphDetail } from '../meta/connect.ts';
import type { Credentials } from '../types.ts';

// Threads: authorization code (no PKCE, client secret as a form field) for a short-lived token
// (1 h, answered without token_type), exchanged at once for a long-lived one (60 days,
// GET /access_token?grant_type=th_exchange_token), which is refreshed with itself
// (GET /refresh_access_token?grant_type=th_refresh_token) while it is valid. Threads documents no
// revocation endpoint: disconnecting erases the token; the person removes the app in Threads' settings.

const API = 'https://graph.threads.net';
const api = (path: string) => platformUrl('threads', `${API}${path}`);

interface Me {
  id: string;
  username?: string;
  name?: string;
  threads_profile_picture_url?: string;
}

/** A token exchange Threads serves as a GET (long-lived exchange, refresh). */
async function getToken(path: string, params: Record<string, string>, what: string): Promise<TokenSet> {
  const res = await request<{ access_token?: string; expires_in?: number }>(
    'threads',
    `${api(path)}?${new URLSearchParams(params)}`,
    { method: 'GET' },
  ).catch((err: Error) => {
    throw new OAuthError('transient', 'network', `threads: ${what}: ${err.message}`);
  });
  if (res.status === 200 && typeof res.body.access_token === 'string') {
    return {
      access_token: res.body.access_token,
      ...(typeof res.body.expires_in === 'number'
        ? { expires_at: new Date(Date.now() + res.body.expires_in * 1000).toISOString() }
        : {}),
      scope: null,
      extra: {},
    };
  }
  const transient = res.status >= 500 || res.status === 429;
  throw new OAuthError(
    transient ? 'transient' : 'rejected',
    transient ? 'server_error' : 'invalid_grant',
    `threads: ${what}: ${res.status} ${graphDetail(res)}`,
    res.status,
  );
}

async function me(token: string, credentials: Credentials): Promise<PlatformAccount> {
  const [user, insights] = await Promise.all([
    getJson<Me>(
      'threads',
      api('/v1.0/me?fields=id,username,name,threads_profile_picture_url'),
      { token },
      graphDetail,
    ),
    getJson<{ data?: Array<{ name?: string; total_value?: { value?: number } }> }>(
      'threads',
      api('/v1.0/me/threads_insights?metric=followers_count'),
      { token },
      graphDetail,
    ).catch(() => ({ data: [] })),
  ]);
  const followers = insights.data?.find((d) => d.name === 'followers_count')?.total_value?.value;
  return {
    id: user.id,
    type: 'user',
    handle: user.username ?? user.id,
    name: user.name ?? null,
    avatar_url: user.threads_profile_picture_url ?? null,
    followers: count(followers),
    credentials: { ...credentials, account_id: user.id },
  };
}

export const connect: OAuthConnect = {
  kind: 'oauth',
  server: (): OAuthServer => ({
    name: 'threads',
    authorize: platformUrl('threads', 'https://threads.net/oauth/authorize'),
    token: api('/oauth/access_token'),
    clientAuth: 'post',
    pkce: false,
    scopeSeparator: ',',
  }),
  scopes: ['threads_basic', 'threads_content_publish', 'threads_manage_insights'],
  required: ['threads_basic', 'threads_content_publish'],
  async afterExchange(tokens, app) {
    const long = await getToken(
      '/access_token',
      { grant_type: 'th_exchange_token', client_secret: app.clientSecret, access_token: tokens.access_token },
      'long-lived token',
    );
    return { ...long, scope: tokens.scope, extra: tokens.extra };
  },
  async accounts(tokens) {
    return [await me(tokens.access_token, oauthCredentials(tokens, ''))];
  },
  profile: (credentials) => me(accessToken('threads', credentials), credentials),
  refresh: (credentials) =>
    getToken(
      '/refresh_access_token',
      { grant_type: 'th_refresh_token', access_token: accessToken('threads', credentials) },
      'refresh',
    ),
};
