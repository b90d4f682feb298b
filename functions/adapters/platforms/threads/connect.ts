import { bentError, faultOf, OAuthError, type TokenSet } from '../../oauth.ts';
import {
  accessToken,
  connectApi,
  type OAuthConnect,
  oauthCredentials,
  oauthServer,
  platformAccount,
} from '../connect.ts';
import { platformUrl, request } from '../http.ts';
import { graphDetail } from '../meta/connect.ts';
import { graphError } from '../meta/errors.ts';
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
  const body = typeof res.body === 'object' && res.body ? (res.body as Record<string, unknown>) : {};
  const error =
    bentError(res.status, body)?.error ??
    (res.status >= 500 || res.status === 429 ? 'server_error' : 'invalid_response');
  throw new OAuthError(
    faultOf({}, res.status, error),
    error,
    `threads: ${what}: ${res.status} ${graphDetail(res)}`,
    res.status,
  );
}

const get = connectApi('threads', `${API}/v1.0`, (res) => graphError('threads', res));

/**
 * What the person granted: the token answers name no scopes, so GET /debug_token's `scopes`
 * (Threads "Debug Access Token"): the token inspecting itself, else inspected with the app's token
 * `TH|{app-id}|{app-secret}` ("App Access Tokens"). null when neither can be read: the channel then
 * lacks what needs a recorded grant until reconnected, never the connection itself.
 */
async function debugScopes(token: string, app?: { clientId: string; clientSecret: string } | null) {
  const inspectors = [token, ...(app ? [`TH|${app.clientId}|${app.clientSecret}`] : [])];
  for (const inspector of inspectors) {
    const q = new URLSearchParams({ input_token: token, access_token: inspector });
    const res = await request<{ data?: { scopes?: unknown } }>(
      'threads',
      `${api('/v1.0/debug_token')}?${q}`,
      {
        method: 'GET',
      },
    ).catch(() => null);
    const scopes = res?.status === 200 ? res.body.data?.scopes : undefined;
    if (Array.isArray(scopes)) return scopes.filter((s): s is string => typeof s === 'string');
  }
  return null;
}

async function me(token: string, credentials: Credentials) {
  const [user, insights] = await Promise.all([
    get<Me>('/me?fields=id,username,name,threads_profile_picture_url', token),
    get<{ data?: Array<{ name?: string; total_value?: { value?: number } }> }>(
      '/me/threads_insights?metric=followers_count',
      token,
    ).catch(() => ({ data: [] })),
  ]);
  return platformAccount(credentials, {
    id: user.id,
    type: 'user',
    handle: user.username ?? user.id,
    name: user.name,
    avatar: user.threads_profile_picture_url,
    followers: insights.data?.find((d) => d.name === 'followers_count')?.total_value?.value,
  });
}

export const connect: OAuthConnect = {
  kind: 'oauth',
  server: () =>
    oauthServer('threads', {
      authorize: 'https://threads.net/oauth/authorize',
      token: `${API}/oauth/access_token`,
      clientAuth: 'post',
      pkce: false,
      scopeSeparator: ',',
    }),
  // threads_manage_replies: replies (a thread's items, the first comment, answers from the inbox);
  // threads_delete: unpublishPost; threads_read_replies and threads_manage_mentions: the inbox's
  // replies and mentions. A person may decline any of them and still post.
  scopes: [
    'threads_basic',
    'threads_content_publish',
    'threads_manage_insights',
    'threads_manage_replies',
    'threads_delete',
    'threads_read_replies',
    'threads_manage_mentions',
  ],
  required: ['threads_basic', 'threads_content_publish'],
  grantedScopes: (tokens, app) => debugScopes(tokens.access_token, app),
  scopesOf: (credentials, app) => debugScopes(accessToken('threads', credentials), app),
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
