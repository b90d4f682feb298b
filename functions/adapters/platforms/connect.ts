import type { Platform } from '#core/platforms';
import type { OAuthApp, OAuthServer, TokenSet } from '../oauth.ts';
import { errorFromStatus, type HttpResponse, platformUrl, request } from './http.ts';
import { type Credentials, PlatformError } from './types.ts';

// How a channel is connected to each platform: the authorization server and scopes (OAuth
// platforms) or the login (Bluesky's app passwords), the accounts a grant covers and their profile
// as the platform reports it (handle, avatar, followers: never what someone typed), and revocation.
// One module per platform (platforms/<name>/connect.ts), loaded on first use.

/** What a channel posts as, read from the platform. */
export interface PlatformAccount {
  /** The platform's id of it (the channel's account_id). */
  id: string;
  type: 'user' | 'person' | 'organization' | 'page' | 'business_account' | 'board' | 'channel';
  handle: string;
  name: string | null;
  avatar_url: string | null;
  followers: number;
  /** The channel's credentials for this account: tokens and account_id. */
  credentials: Credentials;
  /** What a password login allows (Bluesky: its session's scope), recorded as the channel's granted scopes. */
  scopes?: string[] | null;
}

export interface OAuthConnect {
  kind: 'oauth';
  /** The authorization server; `origin` is the instance for Mastodon. */
  server(origin?: string): OAuthServer;
  /** Scopes requested unless the operator configured others. */
  scopes: readonly string[];
  /** Scopes publishing needs: a grant without one of them fails (missing_scopes). */
  required: readonly string[];
  /** Turns the code exchange's answer into the tokens to keep (Meta: a long-lived token). */
  afterExchange?(tokens: TokenSet, app: OAuthApp, server: OAuthServer): Promise<TokenSet>;
  /** Granted scopes when the token answer does not list them (Meta: /me/permissions). */
  grantedScopes?(tokens: TokenSet, app?: OAuthApp): Promise<string[] | null>;
  /**
   * The scopes pasted credentials hold, asked of the platform (its token inspection), for what a
   * channel connected without an authorization records; null when the platform cannot say.
   */
  scopesOf?(credentials: Credentials, app: OAuthApp | null): Promise<string[] | null>;
  /** Every account the grant covers (pages, organizations, boards, channels …), from the platform. */
  accounts(tokens: TokenSet, origin?: string): Promise<PlatformAccount[]>;
  /** The account these credentials post as, as the platform reports it now. */
  profile(credentials: Credentials): Promise<PlatformAccount>;
  /**
   * How the channel's access token is renewed: `oauth` (the refresh_token grant), a platform's own
   * exchange, or absent (the token does not expire, or only the person can renew it).
   */
  refresh?: 'oauth' | ((credentials: Credentials, app: OAuthApp, server: OAuthServer) => Promise<TokenSet>);
  /** Revocation when it is not RFC 7009 at server.revoke (Meta: DELETE /me/permissions). */
  revoke?(credentials: Credentials, app: OAuthApp, server: OAuthServer): Promise<void>;
  /**
   * Revoking any token ends the person's whole authorization of the app (Google, TikTok), so every
   * channel connected with that person's consent, in any organization: Herald then revokes only
   * when the owner disconnects, never to clean up a connection that failed.
   */
  revokesAuthorization?: true;
}

export interface PasswordConnect {
  kind: 'app_password';
  /** Opens a session with the credentials; the account they belong to. */
  login(credentials: Credentials): Promise<PlatformAccount>;
  profile(credentials: Credentials): Promise<PlatformAccount>;
  revoke?(credentials: Credentials): Promise<void>;
}

export type PlatformConnect = OAuthConnect | PasswordConnect;

/**
 * What a failed answer says: its readable detail (classified by status), or the platform's own
 * classification of its error body (Meta's codes arrive as 400/403 whatever they mean).
 */
export type ErrorReader = (res: HttpResponse) => string | PlatformError;

/**
 * A GET of a platform's JSON API for the connect flows. Failures are PlatformErrors: auth_expired
 * (the platform refused the token), system/rate_limited (try later), anything else refused.
 */
export async function getJson<T>(
  platform: string,
  url: string,
  init: { token?: string; headers?: Record<string, string>; fetch?: typeof fetch } = {},
  describe: ErrorReader = detailOf,
): Promise<T> {
  const res = await request<T>(platform, url, {
    method: 'GET',
    headers: { ...(init.token ? { authorization: `Bearer ${init.token}` } : {}), ...init.headers },
    ...(init.fetch ? { fetch: init.fetch } : {}),
  });
  if (res.status >= 200 && res.status < 300 && typeof res.body === 'object' && res.body !== null)
    return res.body;
  if (res.status >= 200 && res.status < 300)
    throw new PlatformError('system', `${platform}: unexpected answer from ${new URL(url).pathname}`);
  const said = describe(res);
  throw said instanceof PlatformError ? said : errorFromStatus(platform, res, said);
}

/** The readable part of a platform's error body, whichever shape it has. */
export function detailOf(res: HttpResponse): string {
  const b = res.body as Record<string, unknown> | string | null;
  if (typeof b === 'string') return b.slice(0, 300);
  if (!b || typeof b !== 'object') return '';
  const e = b.error as Record<string, unknown> | string | undefined;
  const parts = [
    typeof e === 'string' ? e : (e?.message as string | undefined),
    b.error_description,
    b.message,
    b.detail,
    b.title,
  ].filter((x): x is string => typeof x === 'string' && x !== '');
  return [...new Set(parts)].join(': ').slice(0, 300);
}

/** A whole number from a platform's count (YouTube sends strings), 0 when it has none. */
export const count = (v: unknown): number => {
  const n = typeof v === 'string' ? Number(v) : typeof v === 'number' ? v : 0;
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
};

/** The access token of pasted or stored credentials; auth_expired without one. */
export function accessToken(platform: string, credentials: Credentials): string {
  const token = credentials.access_token;
  if (typeof token !== 'string' || token === '')
    throw new PlatformError('auth_expired', `${platform}: no access_token`, { retryable: false });
  return token;
}

/** The credentials a channel keeps from an OAuth grant, for one account. */
export function oauthCredentials(tokens: TokenSet, accountId: string, extra: Credentials = {}): Credentials {
  return {
    access_token: tokens.access_token,
    ...(tokens.refresh_token ? { refresh_token: tokens.refresh_token } : {}),
    ...(tokens.expires_at ? { expires_at: tokens.expires_at } : {}),
    account_id: accountId,
    ...extra,
  };
}

/** The OAuth server at a platform's real URLs, each mapped to the sandbox or fake that stands in for it. */
export function oauthServer(platform: Platform, server: Omit<OAuthServer, 'name'>): OAuthServer {
  return {
    name: platform,
    ...server,
    authorize: platformUrl(platform, server.authorize),
    token: platformUrl(platform, server.token),
    ...(server.revoke ? { revoke: platformUrl(platform, server.revoke) } : {}),
  };
}

/**
 * The connect flow's GETs of one platform's JSON API under `base`, with the platform's error detail:
 * `auth` is a token, or credentials whose access token is used (auth_expired without one).
 */
export function connectApi(platform: Platform, base: string, describe: ErrorReader = detailOf) {
  return async <T>(
    path: string,
    auth: string | Credentials,
    headers?: Record<string, string>,
  ): Promise<T> => {
    const token = typeof auth === 'string' ? auth : accessToken(platform, auth);
    return getJson<T>(platform, platformUrl(platform, `${base}${path}`), { token, headers }, describe);
  };
}

/** What the platform says of an account; `followers` as it sends it. */
export interface AccountFields {
  id: string;
  type: PlatformAccount['type'];
  handle: string;
  name?: string | null;
  avatar?: string | null;
  followers?: unknown;
}

/** An account as the platform reports it, with the credentials that post as it. */
export function platformAccount(credentials: Credentials, a: AccountFields): PlatformAccount {
  return {
    id: a.id,
    type: a.type,
    handle: a.handle,
    name: a.name ?? null,
    avatar_url: a.avatar ?? null,
    followers: count(a.followers),
    credentials: { ...credentials, account_id: a.id },
  };
}
