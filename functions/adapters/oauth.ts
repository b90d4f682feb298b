import * as oauth from 'oauth4webapi';
import { parseJson } from '#adapters/platforms/http';
import { graphTokenError, igOAuthError } from '#adapters/platforms/meta/errors';
import { inLambda } from '#shared/config';

// The one OAuth 2.0 client of Herald: authorization URLs, code exchange (PKCE where the platform
// supports it), refresh and revocation for every OAuth platform, on oauth4webapi. Chosen over arctic
// because every endpoint is ours to configure (the local stack points platforms at sandboxes and
// contract fakes, and Mastodon has one server per instance; arctic's providers hard-code theirs) and
// because it lets each platform authenticate its client the way it documents (HTTP Basic, form
// fields, TikTok's client_key), where arctic's generic client knows only HTTP Basic. It also parses
// RFC 6749 error answers and validates token answers.
//
// Platforms that bend the standard are normalised in one place, the fetch this client uses:
// LinkedIn and Threads answer tokens without token_type (added: bearer), Meta answers errors as
// `{"error": {"message", "code"}}` and Pinterest as `{"code", "message"}` (both rewritten to RFC
// 6749's `error`/`error_description`), TikTok answers some errors with HTTP 200 (made a 400), and ID
// tokens are dropped (Herald never signs anyone in, so it neither needs nor validates them).
//
// Every refused call is classified by who can fix it (core/channel-health.ts): the person's grant
// (`grant`), the operator's app (`client`), or nobody but time (`transient`). RFC 6749 §5.2 names
// invalid_grant as the grant's refusal; invalid_client, unauthorized_client, invalid_request,
// invalid_scope and unsupported_grant_type are about the client's request, so the operator's.
// Platforms that answer a spent or revoked grant with another code declare it (`grantRefusals`).

export type ClientAuthMethod = 'basic' | 'post' | 'tiktok';

/** A platform's authorization server, as Herald uses it. */
export interface OAuthServer {
  /** For messages and the local endpoint override. */
  name: string;
  authorize: string;
  token: string;
  revoke?: string;
  clientAuth: ClientAuthMethod;
  /** Sends an S256 code challenge and verifier. */
  pkce: boolean;
  scopeSeparator: ' ' | ',';
  /** Extra parameters of the authorization request (e.g. Google's access_type=offline). */
  authorizeParams?: Record<string, string>;
  /** Extra parameters of the code exchange (e.g. Pinterest's continuous_refresh). */
  exchangeParams?: Record<string, string>;
  /**
   * Fetch for this server (a server at an origin a user chose, e.g. a Mastodon instance, goes
   * through the address-checked client). Default: fetch with a 15 s timeout.
   */
  fetch?: typeof fetch;
  /**
   * Answers besides RFC 6749's invalid_grant that mean "the grant (code or refresh token) is
   * invalid, expired or revoked" on this server (X and LinkedIn answer invalid_request for it).
   */
  grantRefusals?: ReadonlyArray<{ error: string; description: RegExp }>;
}

/** The operator's app on a platform (or Herald's app on a Mastodon instance). */
export interface OAuthApp {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
}

export interface TokenSet {
  access_token: string;
  refresh_token?: string;
  /** ISO time the access token expires, when the platform said. */
  expires_at?: string;
  /** The scopes granted, when the platform said (null: not said). */
  scope: string[] | null;
  /** Other fields of the answer (TikTok's open_id, Threads' user_id, …). */
  extra: Record<string, unknown>;
}

/**
 * Why an OAuth call failed, by who can fix it. `grant`: the platform refused the person's grant or
 * code (a refused refresh means the person must connect again). `client`: it refused the
 * operator's app or the request, or answered something that is not OAuth (the operator must act;
 * the person's grant may be fine). `transient`: network, timeout, 5xx, 429 or the platform's
 * throttling (worth another try later).
 */
export type OAuthFault = 'grant' | 'client' | 'transient';

export class OAuthError extends Error {
  override readonly name = 'OAuthError';
  constructor(
    readonly kind: OAuthFault,
    /** The platform's RFC 6749 error code, or ours (timeout, network, invalid_response). */
    readonly code: string,
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

const TIMEOUT_MS = 15_000;

function asServer(server: OAuthServer): oauth.AuthorizationServer {
  return {
    issuer: new URL(server.authorize).origin,
    authorization_endpoint: server.authorize,
    token_endpoint: server.token,
    ...(server.revoke ? { revocation_endpoint: server.revoke } : {}),
  };
}

function clientAuth(server: OAuthServer, app: OAuthApp): oauth.ClientAuth {
  // HTTP Basic as the platforms document it (X, Pinterest): base64 of `id:secret` as they are.
  // oauth4webapi's ClientSecretBasic form-encodes both first (RFC 6749 §2.3.1), which platforms
  // that do not decode them (ids and secrets with `-`, `_`, `.`) refuse.
  if (server.clientAuth === 'basic')
    return (_as, _client, _body, headers) => {
      headers.set(
        'authorization',
        `Basic ${Buffer.from(`${app.clientId}:${app.clientSecret}`).toString('base64')}`,
      );
    };
  if (server.clientAuth === 'post') return oauth.ClientSecretPost(app.clientSecret);
  // TikTok names the client id client_key.
  return (_as, _client, body) => {
    body.delete('client_id');
    body.set('client_key', app.clientId);
    body.set('client_secret', app.clientSecret);
  };
}

/** Makes an answer conform where the platform bends RFC 6749 (see the top of this file). */
async function normalized(res: Response): Promise<Response> {
  const type = res.headers.get('content-type') ?? '';
  const text = await res.text();
  const json = text ? parseJson(text) : undefined;
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    return new Response(text || null, {
      status: res.status,
      headers: { 'content-type': type || 'text/plain' },
    });
  }
  const body = { ...(json as Record<string, unknown>) };
  let status = res.status;
  const bent = bentError(status, body);
  if (bent) Object.assign(body, bent);
  if (typeof body.error === 'string' && body.access_token === undefined && status < 300) status = 400;
  if (typeof body.access_token === 'string' && body.token_type === undefined) body.token_type = 'bearer';
  delete body.id_token;
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json' },
  });
}

/**
 * A token endpoint's error body in a platform's own shape, as RFC 6749's `error` and
 * `error_description`; undefined for an RFC 6749 body (or no error at all).
 */
export function bentError(
  status: number,
  body: Record<string, unknown>,
): { error: string; error_description: string } | undefined {
  if (typeof body.error === 'object' && body.error !== null) {
    // Meta's Graph errors: {"error": {"message", "type", "code", "error_subcode"}}.
    const e = body.error as { message?: unknown; code?: unknown; error_subcode?: unknown };
    return {
      error: graphTokenError(status, body.error),
      error_description: `${String(e.message ?? 'refused')} (code ${String(e.code ?? '?')}${
        e.error_subcode ? `/${String(e.error_subcode)}` : ''
      })`,
    };
  }
  if (body.error !== undefined) return undefined;
  if (typeof body.error_message === 'string')
    // Instagram-style OAuth errors (Threads): {"error_type", "code", "error_message"}.
    return { error: igOAuthError(body) ?? 'invalid_request', error_description: body.error_message };
  if (status >= 400 && typeof body.code === 'number' && typeof body.message === 'string')
    // Pinterest's {"code", "message"}: 283 "The authorization grant is invalid" (a 401, like its
    // client authentication failing, code 2), 8 throttled.
    return {
      error:
        body.code === 283
          ? 'invalid_grant'
          : status === 401
            ? 'invalid_client'
            : status === 429 || body.code === 8
              ? 'slow_down'
              : 'invalid_request',
      error_description: `${body.message} (code ${body.code})`,
    };
  return undefined;
}

function options(server: OAuthServer): oauth.TokenEndpointRequestOptions {
  const base =
    server.fetch ?? ((input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(TIMEOUT_MS) }));
  return {
    [oauth.customFetch]: async (url: string, init: oauth.CustomFetchOptions<string, unknown>) =>
      normalized(await base(url, init as RequestInit)),
    // Real platforms are https; the local stack's sandboxes and fakes may be plain http on loopback.
    ...(inLambda() ? {} : { [oauth.allowInsecureRequests]: true }),
  };
}

/** RFC 6749 error codes (and the platforms' own) that mean "later", whatever the status. */
const TRANSIENT_ERRORS = new Set([
  'temporarily_unavailable',
  'server_error',
  'slow_down',
  'rate_limit_exceeded',
]);

/** Who can fix a refused token-endpoint answer (see OAuthError). */
export function faultOf(
  server: Pick<OAuthServer, 'grantRefusals'>,
  status: number,
  error: string,
  description = '',
): OAuthFault {
  if (status >= 500 || status === 429 || TRANSIENT_ERRORS.has(error)) return 'transient';
  if (error === 'invalid_grant') return 'grant';
  if (server.grantRefusals?.some((r) => r.error === error && r.description.test(description))) return 'grant';
  return 'client';
}

/** Maps whatever oauth4webapi or the network threw onto OAuthError. */
function failure(server: OAuthServer, what: string, err: unknown): OAuthError {
  if (err instanceof OAuthError) return err;
  const said = (error: string, description?: string) =>
    `${server.name}: ${what}: ${error}${description ? `: ${description}` : ''}`;
  if (err instanceof oauth.ResponseBodyError)
    return new OAuthError(
      faultOf(server, err.status, err.error, err.error_description),
      err.error,
      said(err.error, err.error_description),
      err.status,
    );
  if (err instanceof oauth.WWWAuthenticateChallengeError) {
    // RFC 6749 §5.2: a 401 for a client that authenticated with the Authorization header carries
    // a WWW-Authenticate challenge; its `error` parameter (if any) says what was refused.
    const params = err.cause[0]?.parameters ?? {};
    const error = params.error ?? 'invalid_client';
    return new OAuthError(
      faultOf(server, err.status, error, params.error_description),
      error,
      said(error, params.error_description),
      err.status,
    );
  }
  if (err instanceof oauth.AuthorizationResponseError)
    return new OAuthError('grant', err.error, said(err.error, err.error_description ?? ''));
  const status = (err as { cause?: { status?: unknown } }).cause?.status;
  if (typeof status === 'number') {
    // Not an OAuth answer (an HTML page, a proxy's error): a failing platform, else a malformed one.
    const transient = status >= 500 || status === 429;
    return new OAuthError(
      transient ? 'transient' : 'client',
      transient ? 'server_error' : 'invalid_response',
      `${server.name}: ${what}: HTTP ${status} without an OAuth answer`,
      status,
    );
  }
  const name = (err as Error | undefined)?.name ?? '';
  if (name === 'ForbiddenAddressError')
    return new OAuthError(
      'client',
      'forbidden_address',
      `${server.name}: ${what}: ${(err as Error).message}`,
    );
  if (name === 'TimeoutError' || name === 'AbortError')
    return new OAuthError('transient', 'timeout', `${server.name}: ${what}: timed out`);
  if (err instanceof TypeError || (err as { code?: unknown })?.code === undefined)
    return new OAuthError('transient', 'network', `${server.name}: ${what}: ${(err as Error).message}`);
  // oauth4webapi refused the answer itself (a 200 that is not a token response, an HTML body…).
  return new OAuthError('client', 'invalid_response', `${server.name}: ${what}: ${(err as Error).message}`);
}

function tokenSet(res: oauth.TokenEndpointResponse): TokenSet {
  const { access_token, refresh_token, expires_in, scope, token_type: _type, ...extra } = res;
  return {
    access_token,
    ...(typeof refresh_token === 'string' && refresh_token ? { refresh_token } : {}),
    ...(typeof expires_in === 'number' && expires_in > 0
      ? { expires_at: new Date(Date.now() + expires_in * 1000).toISOString() }
      : {}),
    scope:
      typeof scope === 'string'
        ? scope
            // LinkedIn asks for scopes space-separated and reports them comma-separated.
            .split(/[,\s]+/)
            .filter(Boolean)
        : null,
    extra: extra as Record<string, unknown>,
  };
}

export const newState = (): string => oauth.generateRandomState();
export const newCodeVerifier = (): string => oauth.generateRandomCodeVerifier();

/** The URL the person opens to grant Herald access. */
export async function authorizationUrl(
  server: OAuthServer,
  app: OAuthApp,
  args: { state: string; codeVerifier: string | null; scopes: readonly string[] },
): Promise<string> {
  const url = new URL(server.authorize);
  const p = url.searchParams;
  p.set(server.clientAuth === 'tiktok' ? 'client_key' : 'client_id', app.clientId);
  p.set('response_type', 'code');
  p.set('redirect_uri', app.redirectUri);
  p.set('scope', args.scopes.join(server.scopeSeparator));
  p.set('state', args.state);
  if (server.pkce && args.codeVerifier) {
    p.set('code_challenge', await oauth.calculatePKCECodeChallenge(args.codeVerifier));
    p.set('code_challenge_method', 'S256');
  }
  for (const [k, v] of Object.entries(server.authorizeParams ?? {})) p.set(k, v);
  return url.toString();
}

/**
 * The authorization response that reached the callback: its `code`, or the platform's refusal
 * (e.g. access_denied) as a rejected OAuthError. `state` was checked by the caller (it found the
 * session by it); it is checked again here against the same value.
 */
export function callbackCode(
  server: OAuthServer,
  app: OAuthApp,
  params: URLSearchParams,
  state: string,
): URLSearchParams {
  try {
    return oauth.validateAuthResponse(asServer(server), { client_id: app.clientId }, params, state);
  } catch (err) {
    throw failure(server, 'authorization', err);
  }
}

type Client = { client_id: string };

/** One call at the token endpoint: its request, its response check, our errors. */
async function tokenRequest(
  server: OAuthServer,
  app: OAuthApp,
  what: string,
  call: (
    as: oauth.AuthorizationServer,
    client: Client,
    auth: oauth.ClientAuth,
  ) => Promise<oauth.TokenEndpointResponse>,
): Promise<TokenSet> {
  try {
    return tokenSet(await call(asServer(server), { client_id: app.clientId }, clientAuth(server, app)));
  } catch (err) {
    throw failure(server, what, err);
  }
}

export function exchangeCode(
  server: OAuthServer,
  app: OAuthApp,
  callback: URLSearchParams,
  codeVerifier: string | null,
): Promise<TokenSet> {
  return tokenRequest(server, app, 'code exchange', async (as, client, auth) => {
    const verifier = server.pkce && codeVerifier ? codeVerifier : oauth.nopkce;
    const res = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      auth,
      callback,
      app.redirectUri,
      verifier,
      {
        ...options(server),
        additionalParameters: server.exchangeParams ?? {},
      },
    );
    return oauth.processAuthorizationCodeResponse(as, client, res);
  });
}

export function refreshTokens(server: OAuthServer, app: OAuthApp, refreshToken: string): Promise<TokenSet> {
  return tokenRequest(server, app, 'refresh', async (as, client, auth) => {
    const res = await oauth.refreshTokenGrantRequest(as, client, auth, refreshToken, options(server));
    return oauth.processRefreshTokenResponse(as, client, res);
  });
}

/** Another grant at the token endpoint (Meta's fb_exchange_token for a long-lived token). */
export function grant(
  server: OAuthServer,
  app: OAuthApp,
  grantType: string,
  parameters: Record<string, string>,
): Promise<TokenSet> {
  return tokenRequest(server, app, grantType, async (as, client, auth) => {
    const res = await oauth.genericTokenEndpointRequest(
      as,
      client,
      auth,
      grantType,
      parameters,
      options(server),
    );
    return oauth.processGenericTokenEndpointResponse(as, client, res);
  });
}

/** RFC 7009 revocation. A token the platform no longer knows counts as revoked. */
export async function revokeToken(
  server: OAuthServer,
  app: OAuthApp,
  token: string,
  hint?: 'access_token' | 'refresh_token',
): Promise<void> {
  if (!server.revoke) return;
  const as = asServer(server);
  try {
    const res = await oauth.revocationRequest(
      as,
      { client_id: app.clientId },
      clientAuth(server, app),
      token,
      {
        ...options(server),
        ...(hint ? { additionalParameters: { token_type_hint: hint } } : {}),
      },
    );
    await oauth.processRevocationResponse(res);
  } catch (err) {
    const e = failure(server, 'revocation', err);
    if (e.code === 'invalid_token' || e.code === 'invalid_grant') return;
    throw e;
  }
}
