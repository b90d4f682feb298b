import type { OAuthServer, TokenSet } from '../../oauth.ts';
import { grant } from '../../oauth.ts';
import { type AccountFields, accessToken, getJson, type OAuthConnect, platformAccount } from '../connect.ts';
import { type HttpResponse, platformUrl } from '../http.ts';
import type { Credentials } from '../types.ts';
import { GRAPH_VERSION } from './client.ts';
import { graphError, graphErrorOf } from './errors.ts';

// Facebook Login, which Facebook Pages and Instagram (with Facebook Login) share: the consent
// dialog, the code exchange for a short-lived user token, its exchange for a long-lived one
// (fb_exchange_token, about 60 days), and /me/permissions for what the person granted. Page
// tokens read with a long-lived user token do not expire.

export function facebookLogin(platform: 'facebook' | 'instagram'): OAuthServer {
  return {
    name: platform,
    authorize: platformUrl(platform, `https://www.facebook.com/${GRAPH_VERSION}/dialog/oauth`),
    token: platformUrl(platform, `https://graph.facebook.com/${GRAPH_VERSION}/oauth/access_token`),
    clientAuth: 'post',
    pkce: false,
    scopeSeparator: ',',
  };
}

export const graph = (platform: string, path: string) =>
  platformUrl(platform, `https://graph.facebook.com/${GRAPH_VERSION}${path}`);

export const graphDetail = (res: HttpResponse): string => {
  const e = graphErrorOf(res.body);
  return e ? `${e.message ?? ''} (code ${String(e.code ?? '?')})` : '';
};

/** The short-lived user token of the code exchange, traded for a long-lived one. */
export async function longLived(tokens: TokenSet, app: Parameters<typeof grant>[1], server: OAuthServer) {
  const long = await grant(server, app, 'fb_exchange_token', {
    client_id: app.clientId,
    fb_exchange_token: tokens.access_token,
  });
  return { ...long, scope: tokens.scope };
}

export async function permissions(platform: string, token: string): Promise<string[]> {
  const body = await getJson<{ data?: Array<{ permission?: string; status?: string }> }>(
    platform,
    graph(platform, '/me/permissions'),
    { token },
    (res) => graphError(platform, res),
  );
  return (body.data ?? [])
    .filter((p) => p.status === 'granted' && typeof p.permission === 'string')
    .map((p) => p.permission as string);
}

/**
 * The permissions behind a token (a Page token too) from GET /debug_token with the app's token
 * `{app-id}|{app-secret}` (Graph API reference, debug_token): `data.scopes`; null without the app.
 */
export async function debugTokenScopes(
  platform: string,
  token: string,
  app: { clientId: string; clientSecret: string } | null,
): Promise<string[] | null> {
  if (!app) return null;
  const q = new URLSearchParams({ input_token: token, access_token: `${app.clientId}|${app.clientSecret}` });
  const body = await getJson<{ data?: { scopes?: unknown; is_valid?: boolean } }>(
    platform,
    `${graph(platform, '/debug_token')}?${q}`,
    {},
    (res) => graphError(platform, res),
  );
  const scopes = body.data?.is_valid === false ? undefined : body.data?.scopes;
  return Array.isArray(scopes) ? scopes.filter((s): s is string => typeof s === 'string') : null;
}

/**
 * The connect flow of Facebook Pages and Instagram: Facebook Login for a long-lived user token, whose
 * grant covers the person's Pages (GET /me/accounts); each Page's token (which does not expire) is
 * what a channel keeps, for the account `accountsOf` finds on the Page. Only the person can renew it.
 */
export function pageConnect<Page, Account>(
  platform: 'facebook' | 'instagram',
  o: {
    scopes: readonly string[];
    required: readonly string[];
    /** Fields of /me/accounts, and of the account itself for its profile. */
    pageFields: string;
    profileFields: string;
    accountsOf(page: Page): Array<{ account: Account; token: string }>;
    account(account: Account): AccountFields;
  },
): OAuthConnect {
  const get = <T>(path: string, token: string) =>
    getJson<T>(platform, graph(platform, path), { token }, (res) => graphError(platform, res));
  const toAccount = (a: Account, credentials: Credentials) => platformAccount(credentials, o.account(a));
  return {
    kind: 'oauth',
    server: () => facebookLogin(platform),
    scopes: o.scopes,
    required: o.required,
    afterExchange: longLived,
    grantedScopes: (tokens) => permissions(platform, tokens.access_token),
    scopesOf: (credentials, app) => debugTokenScopes(platform, accessToken(platform, credentials), app),
    async accounts(tokens) {
      const body = await get<{ data?: Page[] }>(
        `/me/accounts?fields=${encodeURIComponent(o.pageFields)}&limit=100`,
        tokens.access_token,
      );
      return (body.data ?? [])
        .flatMap((p) => o.accountsOf(p))
        .map(({ account, token }) => toAccount(account, { access_token: token }));
    },
    async profile(credentials) {
      const id = encodeURIComponent(String(credentials.account_id ?? ''));
      const token = accessToken(platform, credentials);
      return toAccount(
        await get<Account>(`/${id}?fields=${encodeURIComponent(o.profileFields)}`, token),
        credentials,
      );
    },
  };
}
