import { randomBytes } from 'node:crypto';
import { PLATFORMS, type Platform } from '#core/platforms';
import { FAKE_APPS } from './oauth.ts';
import type { FakeResponse, InjectedFailure } from './server.ts';

// The platforms' documented (or, where nothing is documented, publicly observed) answers to the three
// kinds of failure a connector must tell apart: the operator's mistake (the app's client id or secret is
// refused), the user's (the grant is gone: revoked, expired, used up — re-authorize), and the platform's
// (throttling — try later). The contract fakes build their own answers from the builders below, and tests
// elsewhere inject the entries of `documentedErrors` through the failure injection (`failNext`, or
// `POST /__fakes/<platform>/fail` with `{"documented": "<kind>"}`) to drive Herald's classification with
// the exact documented bodies, statuses and headers.
//
// Each entry names its source and its basis:
//   documented  the platform's own reference shows this answer (an OpenAPI document, an error table,
//               the platform's published source code for Mastodon);
//   observed    the platform documents the error but not its exact body or status, and the one here is
//               the answer developers report (SDK issues, bug reports — the source names them);
//   assumed     the shape is documented or observed, a detail (status, wording) is not.
// RFC 6749 §5.2 is the reference for the OAuth token endpoints: 400 with {"error", "error_description"},
// except invalid_client, which MAY be 401 and MUST be 401 with WWW-Authenticate when the client
// authenticated through the Authorization header. Most platforms bend it; each entry says how.

/** A fake's answer with a body (what the builders below return). */
export interface Answer extends FakeResponse {
  body: unknown;
}

/** The OAuth platforms (Bluesky uses app passwords and has no authorization server). */
export type OAuthPlatform = Exclude<Platform, 'bluesky'>;

export const OAUTH_PLATFORMS: readonly OAuthPlatform[] = PLATFORMS.filter(
  (p): p is OAuthPlatform => p !== 'bluesky',
);

/** What the failure means for Herald: fix the app's credentials, re-authorize the user, or try later. */
export type ErrorMeaning = 'operator' | 'reauthorize' | 'later';

export interface DocumentedError {
  status: number;
  /** The body as the platform sends it (objects go out as JSON). */
  body: unknown;
  headers?: Record<string, string>;
  /** The fake's paths (below its prefix) the answer applies to. */
  path: RegExp;
  meaning: ErrorMeaning;
  basis: 'documented' | 'observed' | 'assumed';
  /** Where the answer is documented or observed. */
  source: string;
}

export interface PlatformErrors {
  /** The token endpoint refuses the app's client id or secret. */
  tokenInvalidClient: DocumentedError;
  /** The token endpoint refuses the refresh token (revoked, expired, used, unknown) — re-authorize. */
  tokenInvalidGrant: DocumentedError;
  /** The API refuses an access token the user revoked. */
  revokedToken: DocumentedError;
  /** The API refuses an access token that expired. */
  expiredToken: DocumentedError;
  /** The API throttles the call. */
  throttled: DocumentedError;
  /** A malformed token request (a missing parameter) — Herald's own mistake, when documented. */
  tokenInvalidRequest?: DocumentedError;
  /** Further documented forms of these answers (other codes, statuses, the code exchange's wording). */
  variants: Record<string, DocumentedError>;
}

export type DocumentedErrorKind = Exclude<keyof PlatformErrors, 'variants'>;

export const DOCUMENTED_KINDS: readonly DocumentedErrorKind[] = [
  'tokenInvalidClient',
  'tokenInvalidGrant',
  'revokedToken',
  'expiredToken',
  'throttled',
  'tokenInvalidRequest',
];

/** An entry as a failure to inject with `FakePlatforms.failNext` (`times` defaults to 1). */
export function asFailure(e: DocumentedError, times = 1): InjectedFailure {
  return {
    status: e.status,
    body: e.body,
    ...(e.headers ? { headers: e.headers } : {}),
    path: e.path,
    times,
  };
}

/** An entry as the JSON body of `POST /__fakes/<platform>/fail`, for tests in other processes. */
export function asControlFailure(e: DocumentedError, times = 1): Record<string, unknown> {
  return {
    status: e.status,
    body: e.body,
    ...(e.headers ? { headers: e.headers } : {}),
    pathPattern: e.path.source,
    times,
  };
}

const now = () => Math.floor(Date.now() / 1000);
const fbtraceId = () => randomBytes(8).toString('base64url');
const tiktokLogId = () => `2026${randomBytes(6).toString('hex').toUpperCase()}`;

// ---- X (api.x.com) ----------------------------------------------------------------------------

/** X's token endpoint (the fake serves it below its prefix). */
const X_TOKEN = /^\/2\/oauth2\/(token|revoke)$/;
const X_API = /^\/2\/(?!oauth2\/)/;

export const xAnswers = {
  /**
   * An RFC 7807 problem with type about:blank, as X answers 401 and 429 (content type
   * application/problem+json). X API v2 OpenAPI 2.159 (xdevplatform/xdk latest-openapi.json) declares it
   * as Problem / GenericProblem ("no additional information beyond that provided by the HTTP status
   * code"); the 2.167 document (xdk specs/openapi.json) lists only typed problems, but X still answers
   * these (node-twitter-api-v2#425, xdevplatform/samples#69).
   */
  generic(status: 401 | 429, headers: Record<string, string> = {}): Answer {
    const title = status === 401 ? 'Unauthorized' : 'Too Many Requests';
    return {
      status,
      headers: { 'content-type': 'application/problem+json', ...headers },
      body: { title, detail: title, type: 'about:blank', status },
    };
  },
  /** docs.x.com "Rate limits": x-rate-limit-limit/-remaining/-reset (epoch seconds), 15-minute windows. */
  limitHeaders(remaining: number, resetIn = 900): Record<string, string> {
    return {
      'x-rate-limit-limit': '100',
      'x-rate-limit-remaining': String(remaining),
      'x-rate-limit-reset': String(now() + resetIn),
    };
  },
  /** POST /2/oauth2/token and /revoke: X's answer to a wrong, or missing, Basic client authentication
   * (node-twitter-api-v2#319, omniauth-twitter2#4): 401 unauthorized_client, not RFC 6749's invalid_client,
   * and no WWW-Authenticate. */
  badClient: (): Answer => ({
    status: 401,
    body: { error: 'unauthorized_client', error_description: 'Missing valid authorization header' },
  }),
  /** X answers every refused grant invalid_request (not invalid_grant), worded by what was refused. */
  badGrant: (what: 'code' | 'token' | 'verifier'): Answer => ({
    status: 400,
    body: {
      error: 'invalid_request',
      error_description:
        what === 'verifier'
          ? 'Value passed for the code verifier did not match the code challenge.'
          : `Value passed for the ${what === 'code' ? 'authorization code' : 'token'} was invalid.`,
    },
  }),
};

function xErrors(): PlatformErrors {
  const unauthorized = {
    ...xAnswers.generic(401),
    path: X_API,
    meaning: 'reauthorize' as const,
    basis: 'documented' as const,
    source:
      'X API v2 OpenAPI 2.159 (xdevplatform/xdk latest-openapi.json) Problem / GenericProblem (type about:blank); body observed in node-twitter-api-v2#425',
  };
  return {
    tokenInvalidClient: {
      ...xAnswers.badClient(),
      path: X_TOKEN,
      meaning: 'operator',
      basis: 'observed',
      source:
        'POST /2/oauth2/token with a wrong or missing Basic client authentication: 401 unauthorized_client "Missing valid authorization header" (node-twitter-api-v2#319, omniauth-twitter2#4); not RFC 6749 §5.2 invalid_client',
    },
    tokenInvalidGrant: {
      ...xAnswers.badGrant('token'),
      path: X_TOKEN,
      meaning: 'reauthorize',
      basis: 'observed',
      source:
        'POST /2/oauth2/token grant_type=refresh_token with a used, revoked or unknown refresh token: 400 invalid_request "Value passed for the token was invalid." (X uses invalid_request where RFC 6749 §5.2 says invalid_grant)',
    },
    revokedToken: unauthorized,
    expiredToken: unauthorized,
    throttled: {
      ...xAnswers.generic(429, xAnswers.limitHeaders(0)),
      path: X_API,
      meaning: 'later',
      basis: 'documented',
      source:
        'docs.x.com "Rate limits" (429 Too Many Requests; x-rate-limit-limit/-remaining/-reset, reset in epoch seconds); body: X API v2 OpenAPI 2.159 GenericProblem',
    },
    variants: {
      codeInvalid: {
        ...xAnswers.badGrant('code'),
        path: X_TOKEN,
        meaning: 'reauthorize',
        basis: 'observed',
        source:
          'POST /2/oauth2/token grant_type=authorization_code with an unknown, used or expired code or another redirect_uri',
      },
      verifierMismatch: {
        ...xAnswers.badGrant('verifier'),
        path: X_TOKEN,
        meaning: 'reauthorize',
        basis: 'observed',
        source: 'xdevplatform/twitter-api-typescript-sdk#26',
      },
    },
  };
}

// ---- LinkedIn ---------------------------------------------------------------------------------

const LI_TOKEN = /^\/oauth\/v2\/accessToken$/;
const LI_API = /^\/(rest|v2)\//;

export const linkedinAnswers = {
  /** learn.microsoft.com LinkedIn "Authorization Code Flow", API Error Details (/oauth/v2/accessToken). */
  oauth: (status: number, error: string, description: string): Answer => ({
    status,
    body: { error, error_description: description },
  }),
  badClient: () => linkedinAnswers.oauth(401, 'invalid_client', 'Client authentication failed'),
  /** The table's wording for a code that is unknown. */
  codeNotFound: () =>
    linkedinAnswers.oauth(
      400,
      'invalid_request',
      'Unable to retrieve access token: authorization code not found',
    ),
  /** The table's wording for a code that expired or was issued for another app, redirect_uri or verifier
   * (the table names the error invalid_redirect_uri; LinkedIn answers invalid_request, as reported in
   * nvh95/react-linkedin-login-oauth2#26). */
  codeMismatch: () =>
    linkedinAnswers.oauth(
      400,
      'invalid_request',
      'Unable to retrieve access token: appid/redirect uri/code verifier does not match authorization code. Or authorization code expired. Or external member binding exists',
    ),
  /** "Refresh Tokens with OAuth 2.0" (programmatic refresh tokens): a refresh token that expired (365 days)
   * or was revoked. */
  refreshInvalid: () =>
    linkedinAnswers.oauth(
      400,
      'invalid_request',
      'The provided authorization grant or refresh token is invalid, expired or revoked',
    ),
  missing: (param: string) =>
    linkedinAnswers.oauth(400, 'invalid_request', `A required parameter "${param}" is missing`),
  /** LinkedIn API "Error Handling": 401 with {status, serviceErrorCode, code, message}. */
  token(state: 'revoked' | 'expired' | 'invalid'): Answer {
    const body = {
      revoked: {
        serviceErrorCode: 65601,
        code: 'REVOKED_ACCESS_TOKEN',
        message: 'The token used in the request has been revoked by the user',
      },
      expired: {
        serviceErrorCode: 65602,
        code: 'EXPIRED_ACCESS_TOKEN',
        message: 'The token used in the request has expired',
      },
      invalid: { serviceErrorCode: 65600, code: 'INVALID_ACCESS_TOKEN', message: 'Invalid access token' },
    }[state];
    return { status: 401, body: { status: 401, ...body } };
  },
  throttled: (): Answer => ({
    status: 429,
    body: {
      status: 429,
      serviceErrorCode: 101,
      code: 'TOO_MANY_REQUESTS',
      message: 'Resource level throttle limit for calls to this resource is reached.',
    },
  }),
};

function linkedinErrors(): PlatformErrors {
  return {
    tokenInvalidClient: {
      ...linkedinAnswers.badClient(),
      path: LI_TOKEN,
      meaning: 'operator',
      basis: 'documented',
      source:
        'LinkedIn "Client Credentials Flow" API Error Details: 401 "Client authentication failed" (the table names the error invalid_client_id; /oauth/v2/accessToken answers invalid_client, as reported); client credentials go in the form, so RFC 6749 §5.2 asks no WWW-Authenticate',
    },
    tokenInvalidGrant: {
      ...linkedinAnswers.refreshInvalid(),
      path: LI_TOKEN,
      meaning: 'reauthorize',
      basis: 'documented',
      source:
        'LinkedIn "Refresh Tokens with OAuth 2.0" (programmatic refresh tokens): 400 invalid_request "The provided authorization grant or refresh token is invalid, expired or revoked" — LinkedIn never answers invalid_grant',
    },
    tokenInvalidRequest: {
      ...linkedinAnswers.missing('code'),
      path: LI_TOKEN,
      meaning: 'operator',
      basis: 'documented',
      source:
        'LinkedIn "Authorization Code Flow" API Error Details: 400 invalid_request "A required parameter "code" is missing"',
    },
    revokedToken: {
      ...linkedinAnswers.token('revoked'),
      path: LI_API,
      meaning: 'reauthorize',
      basis: 'observed',
      source:
        'LinkedIn API "Error Handling" 401 "The token has been revoked"; body {status, serviceErrorCode 65601, code REVOKED_ACCESS_TOKEN, message} as reported in omniauth-linkedin-oauth2#81',
    },
    expiredToken: {
      ...linkedinAnswers.token('expired'),
      path: LI_API,
      meaning: 'reauthorize',
      basis: 'assumed',
      source:
        'LinkedIn API "Error Handling" 401 "Expired access token" (code EXPIRED_ACCESS_TOKEN); serviceErrorCode 65602 is not on the page (65600 invalid and 65601 revoked are reported)',
    },
    throttled: {
      ...linkedinAnswers.throttled(),
      path: LI_API,
      meaning: 'later',
      basis: 'observed',
      source:
        'LinkedIn API "Rate Limits" / "Error Handling": 429 "Resource level throttle limit for calls to this resource is reached." (daily limits, reset at midnight UTC, no rate-limit headers documented); serviceErrorCode 101 as reported in Automattic/wp-calypso#32007; the code string TOO_MANY_REQUESTS is assumed (LinkedIn\'s newer error bodies carry one)',
    },
    variants: {
      codeNotFound: {
        ...linkedinAnswers.codeNotFound(),
        path: LI_TOKEN,
        meaning: 'reauthorize',
        basis: 'documented',
        source: 'LinkedIn "Authorization Code Flow" API Error Details (/oauth/v2/accessToken)',
      },
      codeMismatch: {
        ...linkedinAnswers.codeMismatch(),
        path: LI_TOKEN,
        meaning: 'reauthorize',
        basis: 'documented',
        source: 'LinkedIn "Authorization Code Flow" API Error Details (/oauth/v2/accessToken)',
      },
      invalidToken: {
        ...linkedinAnswers.token('invalid'),
        path: LI_API,
        meaning: 'reauthorize',
        basis: 'observed',
        source:
          'LinkedIn API "Error Handling" 401 "Invalid access token"; serviceErrorCode 65600 (xcarpentier/react-native-linkedin#80)',
      },
    },
  };
}

// ---- Meta: Graph API (Facebook, Instagram) and Threads ----------------------------------------

const GRAPH_TOKEN = /^(\/v\d+\.\d+)?\/oauth\/access_token$/;
const GRAPH_API = /^(\/v\d+\.\d+)?\/(?!oauth\/|dialog\/)/;
const THREADS_TOKEN = /^(\/v\d+\.\d+)?\/(oauth\/access_token|access_token|refresh_access_token)$/;
const THREADS_API = /^(\/v\d+\.\d+)?\/(?!oauth\/|access_token|refresh_access_token)/;

export const metaAnswers = {
  /** Graph API "Handling Errors": {"error": {message, type, code, error_subcode?, fbtrace_id}}. */
  graph(
    code: number,
    message: string,
    opts: {
      subcode?: number;
      status?: number;
      type?: string;
      transient?: boolean;
      headers?: Record<string, string>;
    } = {},
  ): Answer {
    return {
      status: opts.status ?? 400,
      ...(opts.headers ? { headers: opts.headers } : {}),
      body: {
        error: {
          message,
          type: opts.type ?? 'OAuthException',
          ...(opts.transient ? { is_transient: true } : {}),
          code,
          ...(opts.subcode ? { error_subcode: opts.subcode } : {}),
          fbtrace_id: fbtraceId(),
        },
      },
    };
  },
  /** Graph sends the OAuth error in WWW-Authenticate too on code 190 (observed in Graph responses). */
  invalidTokenHeader: (message: string) => ({
    'www-authenticate': `OAuth "Facebook Platform" "invalid_token" "${message.replace(/"/g, "'")}"`,
  }),
  /**
   * Code 190 with subcode 458 ("App Not Installed": the user removed the app) or 463 ("Expired"), as the
   * Graph API error-handling guide lists them; HTTP 400 and the wording as observed (bridgy#59,
   * flutter_facebook_login#151, blynk-server#435).
   */
  token(state: 'revoked' | 'expired', appId: string, expiredAt?: number, withHeader = true): Answer {
    const message =
      state === 'revoked'
        ? `Error validating access token: The user has not authorized application ${appId}.`
        : `Error validating access token: Session has expired on ${new Date(expiredAt ?? Date.now()).toUTCString()}.`;
    return metaAnswers.graph(190, message, {
      subcode: state === 'revoked' ? 458 : 463,
      ...(withHeader ? { headers: metaAnswers.invalidTokenHeader(message) } : {}),
    });
  },
  /** Code-exchange refusals of GET|POST /oauth/access_token (widely reported wordings; HTTP 400). */
  badSecret: () => metaAnswers.graph(1, 'Error validating client secret.'),
  badAppId: () => metaAnswers.graph(101, 'Error validating application. Invalid application ID.'),
  codeUsed: () => metaAnswers.graph(100, 'This authorization code has been used.', { subcode: 36009 }),
  codeExpired: () => metaAnswers.graph(100, 'This authorization code has expired.', { subcode: 36007 }),
  codeRedirect: () =>
    metaAnswers.graph(
      100,
      'Error validating verification code. Please make sure your redirect_uri is identical to the one you used in the OAuth dialog request',
      { subcode: 36008 },
    ),
  /** X-App-Usage / X-Business-Use-Case-Usage (Graph API "Rate Limits"): percentages, 100 = throttled. */
  appUsage: () => ({ 'x-app-usage': JSON.stringify({ call_count: 100, total_cputime: 12, total_time: 15 }) }),
  bucUsage: (id: string, type: string) => ({
    'x-business-use-case-usage': JSON.stringify({
      [id]: [
        {
          type,
          call_count: 100,
          total_cputime: 12,
          total_time: 15,
          estimated_time_to_regain_access: 5,
        },
      ],
    }),
  }),
  /** Instagram-API-with-Instagram-Login style OAuth errors (api.instagram.com/oauth/access_token): the
   * Threads fake answers its code exchange this way (Threads' own wording is not documented). */
  igOAuth: (message: string): Answer => ({
    status: 400,
    body: { error_type: 'OAuthException', code: 400, error_message: message },
  }),
};

const META_THROTTLE_SOURCE =
  'Graph API "Handling Errors" (codes 4, 17, 32, 613: throttling — wait and retry; 80001–80014: Business Use Case limits) and "Rate Limits" (X-App-Usage, X-Business-Use-Case-Usage); Meta answers them with HTTP 400/403, never 429';

function metaThrottles(
  path: RegExp,
  buc: { id: string; type: string; code: number; message: string },
): Record<string, DocumentedError> {
  const entry = (r: Answer, basis: DocumentedError['basis'], note: string): DocumentedError => ({
    ...r,
    path,
    meaning: 'later',
    basis,
    source: `${META_THROTTLE_SOURCE}; ${note}`,
  });
  return {
    throttledUser: entry(
      metaAnswers.graph(17, '(#17) User request limit reached', {
        transient: true,
        headers: metaAnswers.appUsage(),
      }),
      'assumed',
      'HTTP 400 assumed (Graph default)',
    ),
    throttledPage: entry(
      metaAnswers.graph(32, '(#32) Page request limit reached', {
        transient: true,
        headers: metaAnswers.bucUsage(buc.id, 'pages'),
      }),
      'assumed',
      'message as reported in facebookarchive/php-graph-sdk#634; HTTP 400 assumed',
    ),
    throttledCustom: entry(
      metaAnswers.graph(613, '(#613) Calls to this api have exceeded the rate limit.', { transient: true }),
      'assumed',
      'HTTP 400 assumed',
    ),
    throttledBusinessUseCase: entry(
      metaAnswers.graph(buc.code, buc.message, {
        transient: true,
        headers: metaAnswers.bucUsage(buc.id, buc.type),
      }),
      'assumed',
      `code ${buc.code} from the Business Use Case table; HTTP 400 assumed`,
    ),
  };
}

function graphErrors(platform: 'facebook' | 'instagram'): PlatformErrors {
  const appId = FAKE_APPS[platform].clientId;
  const token = (r: Answer, meaning: ErrorMeaning, source: string): DocumentedError => ({
    ...r,
    path: GRAPH_TOKEN,
    meaning,
    basis: 'observed',
    source,
  });
  return {
    tokenInvalidClient: token(
      metaAnswers.badSecret(),
      'operator',
      'Facebook Login "Manually Build a Login Flow" code exchange (GET /oauth/access_token): OAuthException code 1 "Error validating client secret." with HTTP 400 (widely reported; the guide shows no error bodies)',
    ),
    tokenInvalidGrant: token(
      metaAnswers.codeUsed(),
      'reauthorize',
      'Facebook Login code exchange: OAuthException code 100, subcode 36009 "This authorization code has been used." (36007 expired, 36008 other redirect_uri), HTTP 400 (laravel/socialite#385)',
    ),
    revokedToken: {
      ...metaAnswers.token('revoked', appId),
      path: GRAPH_API,
      meaning: 'reauthorize',
      basis: 'documented',
      source:
        'Graph API "Handling Errors": code 190 (OAuthException) subcode 458 "App Not Installed" (460 password changed, 467 logged out: also re-authorize); HTTP 400 and wording observed',
    },
    expiredToken: {
      ...metaAnswers.token('expired', appId, Date.now() - 1000),
      path: GRAPH_API,
      meaning: 'reauthorize',
      basis: 'documented',
      source:
        'Graph API "Handling Errors": code 190 subcode 463 "Expired"; HTTP 400 and wording observed (snarfed/bridgy#59)',
    },
    throttled: {
      ...metaAnswers.graph(4, '(#4) Application request limit reached', {
        status: 403,
        transient: true,
        headers: metaAnswers.appUsage(),
      }),
      path: GRAPH_API,
      meaning: 'later',
      basis: 'observed',
      source: `${META_THROTTLE_SOURCE}; code 4 with HTTP 403 as reported in facebook-android-sdk#582 and python-social-auth/social-core#859`,
    },
    variants: {
      badAppId: token(
        metaAnswers.badAppId(),
        'operator',
        'Facebook Login code exchange: OAuthException code 101',
      ),
      codeExpired: token(
        metaAnswers.codeExpired(),
        'reauthorize',
        'Facebook Login code exchange: subcode 36007',
      ),
      codeRedirect: token(
        metaAnswers.codeRedirect(),
        'reauthorize',
        'Facebook Login code exchange: subcode 36008',
      ),
      ...metaThrottles(
        GRAPH_API,
        platform === 'facebook'
          ? {
              id: '104857600000001',
              type: 'pages',
              code: 80001,
              message: 'There have been too many calls to this Page account. Wait a bit and try again.',
            }
          : {
              id: '17841405822304914',
              type: 'instagram',
              code: 80002,
              message: 'There have been too many calls to this Instagram account. Wait a bit and try again.',
            },
      ),
    },
  };
}

function threadsErrors(): PlatformErrors {
  const appId = FAKE_APPS.threads.clientId;
  return {
    tokenInvalidClient: {
      ...metaAnswers.igOAuth('Error validating client secret'),
      path: THREADS_TOKEN,
      meaning: 'operator',
      basis: 'assumed',
      source:
        'Threads "Get Access Tokens" documents no error bodies; the shape is the Instagram OAuth one (error_type, code, error_message)',
    },
    tokenInvalidGrant: {
      ...metaAnswers.igOAuth('Matching code was not found or was already used'),
      path: THREADS_TOKEN,
      meaning: 'reauthorize',
      basis: 'assumed',
      source:
        'Instagram OAuth "Matching code was not found or was already used." (sachin-handiekar/jInstagram#191); Threads unverified. A long-lived token whose refresh is refused answers the Graph revoked/expired answers below',
    },
    revokedToken: {
      ...metaAnswers.token('revoked', appId, undefined, false),
      path: THREADS_API,
      meaning: 'reauthorize',
      basis: 'assumed',
      source:
        'Graph API "Handling Errors" code 190 subcode 458, as graph.threads.net shares Graph error handling (Threads documents no token errors)',
    },
    expiredToken: {
      ...metaAnswers.token('expired', appId, Date.now() - 1000, false),
      path: THREADS_API,
      meaning: 'reauthorize',
      basis: 'assumed',
      source:
        'Graph API "Handling Errors" code 190 subcode 463 (Threads long-lived tokens expire after 60 days)',
    },
    throttled: {
      ...metaAnswers.graph(4, '(#4) Application request limit reached', {
        status: 403,
        transient: true,
        headers: metaAnswers.appUsage(),
      }),
      path: THREADS_API,
      meaning: 'later',
      basis: 'assumed',
      source: `${META_THROTTLE_SOURCE}; Threads documents its own limits (250 posts per 24 hours) but not the answer`,
    },
    variants: metaThrottles(THREADS_API, {
      id: '17841400000000001',
      type: 'threads',
      code: 80002,
      message: 'There have been too many calls to this account. Wait a bit and try again.',
    }),
  };
}

// ---- TikTok -----------------------------------------------------------------------------------

const TT_TOKEN = /^\/v2\/oauth\/(token|revoke)\/$/;
const TT_API = /^\/v2\/(?!oauth\/)/;

export const tiktokAnswers = {
  /** Login Kit "OAuth Error Handling": {error, error_description, log_id}; the page gives no HTTP status. */
  oauth: (status: number, error: string, description: string): Answer => ({
    status,
    body: { error, error_description: description, log_id: tiktokLogId() },
  }),
  /** TikTok API v2 "Error Handling": {data, error: {code, message, log_id}} with the listed statuses. */
  api: (status: number, code: string, message: string): Answer => ({
    status,
    body: { data: {}, error: { code, message, log_id: tiktokLogId() } },
  }),
  tokenInvalid: () =>
    tiktokAnswers.api(
      401,
      'access_token_invalid',
      'The access token is invalid or not found in the request.',
    ),
  throttled: () =>
    tiktokAnswers.api(429, 'rate_limit_exceeded', 'The API rate limit was exceeded. Please try again later.'),
};

function tiktokErrors(): PlatformErrors {
  const token = (r: Answer, meaning: ErrorMeaning, basis: DocumentedError['basis'], source: string) => ({
    ...r,
    path: TT_TOKEN,
    meaning,
    basis,
    source,
  });
  const dead = {
    ...tiktokAnswers.tokenInvalid(),
    path: TT_API,
    meaning: 'reauthorize' as const,
    basis: 'documented' as const,
    source:
      'TikTok API v2 "Error Handling": access_token_invalid, HTTP 401 ("The access token is invalid or not found in the request."); revoked and expired tokens answer alike',
  };
  return {
    tokenInvalidClient: token(
      tiktokAnswers.oauth(401, 'invalid_client', 'Client key or secret is incorrect.'),
      'operator',
      'assumed',
      'Login Kit "OAuth Error Handling": invalid_client (error categories of RFC 6749 §5.2; HTTP status and wording not documented, 401 assumed)',
    ),
    tokenInvalidGrant: token(
      tiktokAnswers.oauth(400, 'invalid_grant', 'Refresh token is invalid or expired.'),
      'reauthorize',
      'assumed',
      'Login Kit "OAuth Error Handling": invalid_grant ("authorization code or refresh token is invalid, expired, revoked…"); HTTP status and wording not documented',
    ),
    tokenInvalidRequest: token(
      tiktokAnswers.oauth(400, 'invalid_request', 'The request parameters are malformed.'),
      'operator',
      'observed',
      'Login Kit "OAuth Error Handling": invalid_request; wording as reported for POST /v2/oauth/token/ without grant_type',
    ),
    revokedToken: dead,
    expiredToken: dead,
    throttled: {
      ...tiktokAnswers.throttled(),
      path: TT_API,
      meaning: 'later',
      basis: 'documented',
      source: 'TikTok API v2 "Error Handling": rate_limit_exceeded, HTTP 429',
    },
    variants: {
      codeExpired: token(
        tiktokAnswers.oauth(400, 'invalid_grant', 'Authorization code is expired.'),
        'reauthorize',
        'assumed',
        'Login Kit "OAuth Error Handling": invalid_grant',
      ),
      /** Herald's OAuth client also expects TikTok to answer some token errors with HTTP 200. */
      grantRefusedAs200: token(
        tiktokAnswers.oauth(200, 'invalid_grant', 'Refresh token is invalid or expired.'),
        'reauthorize',
        'assumed',
        'Login Kit "OAuth Error Handling" documents no HTTP status; client code (Herald\'s included) reports error bodies answered with HTTP 200 — unverified',
      ),
      scopeNotAuthorized: {
        ...tiktokAnswers.api(
          401,
          'scope_not_authorized',
          'The user did not authorize the scope required for completing this request.',
        ),
        path: TT_API,
        meaning: 'reauthorize',
        basis: 'documented',
        source: 'TikTok API v2 "Error Handling": scope_not_authorized, HTTP 401',
      },
    },
  };
}

// ---- YouTube (Google) -------------------------------------------------------------------------

const GOOGLE_TOKEN = /^\/(token|revoke)$/;
const YOUTUBE_API = /^\/(upload\/)?youtube\/v3\//;

export const googleAnswers = {
  oauth: (status: number, error: string, description: string): Answer => ({
    status,
    body: { error, error_description: description },
  }),
  /** Google's JSON error envelope {"error": {code, message, errors: [{message, domain, reason}], status}}. */
  api(status: number, reason: string, domain: string, message: string, grpc: string, extra = {}): Answer {
    return {
      status,
      body: {
        error: { code: status, message, errors: [{ message, domain, reason, ...extra }], status: grpc },
      },
    };
  },
  /** YouTube Data API "Errors" (core errors): 401 authError "Invalid Credentials", with RFC 6750's
   * WWW-Authenticate. */
  invalidCredentials(): Answer {
    return {
      status: 401,
      headers: { 'www-authenticate': 'Bearer realm="https://accounts.google.com/", error="invalid_token"' },
      body: {
        error: {
          code: 401,
          message:
            'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
          errors: [
            {
              message: 'Invalid Credentials',
              domain: 'global',
              reason: 'authError',
              location: 'Authorization',
              locationType: 'header',
            },
          ],
          status: 'UNAUTHENTICATED',
        },
      },
    };
  },
};

function youtubeErrors(): PlatformErrors {
  const token = (r: Answer, meaning: ErrorMeaning, basis: DocumentedError['basis'], source: string) => ({
    ...r,
    path: GOOGLE_TOKEN,
    meaning,
    basis,
    source,
  });
  const dead = {
    ...googleAnswers.invalidCredentials(),
    path: YOUTUBE_API,
    meaning: 'reauthorize' as const,
    basis: 'observed' as const,
    source:
      'Google APIs\' standard 401 authError "Invalid Credentials" (YouTube Data API "Errors", core errors) with RFC 6750\'s WWW-Authenticate error="invalid_token"; the whole body as observed. The access token expired or was revoked: refresh it, then re-authorize',
  };
  return {
    tokenInvalidClient: token(
      googleAnswers.oauth(401, 'invalid_client', 'Unauthorized'),
      'operator',
      'observed',
      'Google OAuth 2.0 token endpoint: 401 invalid_client "Unauthorized" for a wrong secret ("The OAuth client was not found." for an unknown client); whether Google adds the WWW-Authenticate RFC 6749 §5.2 asks for after HTTP Basic is not documented',
    ),
    tokenInvalidGrant: token(
      googleAnswers.oauth(400, 'invalid_grant', 'Token has been expired or revoked.'),
      'reauthorize',
      'observed',
      'Google "Using OAuth 2.0 for Web Server Applications", refresh token expiration (the user revoked access, 6 months unused, testing-mode 7 days); the answer, 400 invalid_grant "Token has been expired or revoked.", as widely reported',
    ),
    tokenInvalidRequest: token(
      googleAnswers.oauth(400, 'invalid_request', 'Could not determine client ID from request.'),
      'operator',
      'observed',
      'Google OAuth 2.0 token endpoint without a client id: 400 invalid_request "Could not determine client ID from request." (zcaceres/gtasks-mcp#35)',
    ),
    revokedToken: dead,
    expiredToken: dead,
    throttled: {
      ...googleAnswers.api(
        429,
        'rateLimitExceeded',
        'global',
        "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute per user' of service 'youtube.googleapis.com'.",
        'RESOURCE_EXHAUSTED',
      ),
      path: YOUTUBE_API,
      meaning: 'later',
      basis: 'assumed',
      source:
        'YouTube Data API "Errors" (core errors): 429 tooManyRequests / rateLimitExceeded; Google API error model (google.rpc.Status RESOURCE_EXHAUSTED). Wording assumed',
    },
    variants: {
      clientNotFound: token(
        googleAnswers.oauth(401, 'invalid_client', 'The OAuth client was not found.'),
        'operator',
        'observed',
        'Google OAuth 2.0 token endpoint, unknown client_id',
      ),
      refreshOfAnotherClient: token(
        googleAnswers.oauth(401, 'unauthorized_client', 'Unauthorized'),
        'operator',
        'observed',
        'Google OAuth 2.0 token endpoint, a refresh token presented by another OAuth client than the one it was issued to (the operator changed the client: its connections must be re-authorized with the new one): 401 unauthorized_client "Unauthorized" (google-auth-library-python#1561, prasmussen/gdrive#375)',
      ),
      codeInvalid: token(
        googleAnswers.oauth(400, 'invalid_grant', 'Bad Request'),
        'reauthorize',
        'observed',
        'Google OAuth 2.0 token endpoint, an unknown, used or expired code',
      ),
      userRateLimitExceeded: {
        ...googleAnswers.api(
          403,
          'userRateLimitExceeded',
          'usageLimits',
          'User Rate Limit Exceeded',
          'PERMISSION_DENIED',
        ),
        path: YOUTUBE_API,
        meaning: 'later',
        basis: 'assumed',
        source:
          'YouTube Data API "Errors" (core errors): 403 usageLimits userRateLimitExceeded; wording assumed',
      },
      quotaExceeded: {
        ...googleAnswers.api(
          403,
          'quotaExceeded',
          'youtube.quota',
          'The request cannot be completed because you have exceeded your <a href="/youtube/v3/getting-started#quota">quota</a>.',
          'PERMISSION_DENIED',
        ),
        path: YOUTUBE_API,
        meaning: 'later',
        basis: 'documented',
        source:
          'YouTube Data API "Errors": 403 youtube.quota quotaExceeded (the daily quota; resets at midnight Pacific Time); body as reported in bperel/youtube-caption-indicator#1',
      },
    },
  };
}

// ---- Pinterest --------------------------------------------------------------------------------

const PIN_TOKEN = /^\/v5\/oauth\/token(\/revoke)?$/;
const PIN_API = /^\/v5\/(?!oauth\/)/;

export const pinterestAnswers = {
  /** Pinterest API v5 OpenAPI (pinterest/api-description v5/openapi.json) schema Error {code, message}. */
  error: (status: number, code: number, message: string): Answer => ({ status, body: { code, message } }),
  /** The document's 401 example ("UnauthenticatedAccess", e.g. POST /catalogs/items/batch; "Client
   * authentication error." on POST /oauth/token/revoke). */
  authFailed: () => pinterestAnswers.error(401, 2, 'Authentication failed.'),
  /** A refused code or refresh token, as the token endpoint answers it (pinterest-python-sdk#114). */
  grantInvalid: () => pinterestAnswers.error(401, 283, 'The authorization grant is invalid'),
  /** The document's 429 example on GET /pins/analytics. */
  throttled: () =>
    pinterestAnswers.error(
      429,
      8,
      'This request exceeded a rate limit. This can happen if the client exceeds one\nof the published rate limits or if multiple write operations are applied to\nan object within a short time window.',
    ),
};

function pinterestErrors(): PlatformErrors {
  return {
    tokenInvalidClient: {
      ...pinterestAnswers.authFailed(),
      path: PIN_TOKEN,
      meaning: 'operator',
      basis: 'assumed',
      source:
        'Pinterest API v5 OpenAPI 5.23.0 (pinterest/api-description v5/openapi.json): POST /oauth/token/revoke 401 "Client authentication error." example {code 2, "Authentication failed."}; POST /oauth/token declares only `default` Error {code, message}. No WWW-Authenticate although the client authenticates with HTTP Basic (RFC 6749 §5.2)',
    },
    tokenInvalidGrant: {
      ...pinterestAnswers.grantInvalid(),
      path: PIN_TOKEN,
      meaning: 'reauthorize',
      basis: 'observed',
      source:
        'POST /v5/oauth/token with a refused refresh token (or code): 401 {code 283, "The authorization grant is invalid"} (pinterest/pinterest-python-sdk#114); the OpenAPI document declares `default` Error only',
    },
    revokedToken: {
      ...pinterestAnswers.authFailed(),
      path: PIN_API,
      meaning: 'reauthorize',
      basis: 'documented',
      source:
        'Pinterest API v5 OpenAPI 5.23.0: 401 "UnauthenticatedAccess" example {code 2, "Authentication failed."} (e.g. POST /catalogs/items/batch); POST /pins 401 is Pinterest.Lib.Error {code, message}',
    },
    expiredToken: {
      ...pinterestAnswers.authFailed(),
      path: PIN_API,
      meaning: 'reauthorize',
      basis: 'documented',
      source:
        'Pinterest API v5 OpenAPI 5.23.0: 401 {code 2, "Authentication failed."} (expired and revoked alike)',
    },
    throttled: {
      ...pinterestAnswers.throttled(),
      path: PIN_API,
      meaning: 'later',
      basis: 'documented',
      source:
        'Pinterest API v5 OpenAPI 5.23.0: GET /pins/analytics 429 example {code 8, "This request exceeded a rate limit…"}; POST /pins, GET /boards and /media declare 429 Pinterest.Lib.Error. No rate-limit headers documented',
    },
    variants: {
      throttledCode30: {
        ...pinterestAnswers.error(
          429,
          30,
          'This request exceeded a rate limit. This can happen if the client exceeds one\nof the published rate limits within a short time window.',
        ),
        path: PIN_API,
        meaning: 'later',
        basis: 'documented',
        source:
          'Pinterest API v5 OpenAPI 5.23.0: PATCH /business_access/business_hierarchy/{id}/brand_accounts/{id} 429 example {code 30, …}',
      },
    },
  };
}

// ---- Mastodon (Doorkeeper) ---------------------------------------------------------------------

const MASTO_TOKEN = /^\/oauth\/(token|revoke)$/;
const MASTO_API = /^\/api\//;

/** Doorkeeper's en.yml wordings (doorkeeper-gem/doorkeeper config/locales/en.yml). */
export const DOORKEEPER = {
  invalid_client:
    'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.',
  invalid_grant:
    'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.',
  invalid_request:
    'The request is missing a required parameter, includes an unsupported parameter value, or is otherwise malformed.',
  unsupported_grant_type: 'The authorization grant type is not supported by the authorization server.',
  invalid_scope: 'The requested scope is invalid, unknown, or malformed.',
  revoked: 'The access token was revoked',
  expired: 'The access token expired',
  unknown: 'The access token is invalid',
} as const;

export const mastodonAnswers = {
  /**
   * Doorkeeper's OAuth::ErrorResponse (lib/doorkeeper/oauth/error_response.rb, 5.8): 401 for invalid_client
   * (and unauthorized_client), 400 otherwise; every error carries WWW-Authenticate
   * `Bearer realm="Doorkeeper", error=…, error_description=…` and Cache-Control no-store.
   */
  oauth(error: keyof typeof DOORKEEPER, description: string = DOORKEEPER[error]): Answer {
    return {
      status: error === 'invalid_client' ? 401 : 400,
      headers: {
        'cache-control': 'no-store, no-cache',
        'www-authenticate': `Bearer realm="Doorkeeper", error="${error}", error_description="${description}"`,
      },
      body: { error, error_description: description },
    };
  },
  /** Api::BaseController#doorkeeper_unauthorized_render_options: {"error": <description>}, status 401,
   * with Doorkeeper's InvalidTokenResponse headers. */
  token(state: 'revoked' | 'expired' | 'unknown'): Answer {
    const description = DOORKEEPER[state];
    return {
      status: 401,
      headers: {
        'www-authenticate': `Bearer realm="Doorkeeper", error="invalid_token", error_description="${description}"`,
      },
      body: { error: description },
    };
  },
  /** config/initializers/rack_attack.rb throttled_responder: 429 {"error": I18n errors.429} with
   * X-RateLimit-Limit, -Remaining "0" and -Reset as an ISO 8601 time (not epoch seconds). */
  throttled(limit = 300, periodSeconds = 300): Answer {
    const t = Date.now();
    const reset = new Date(t + (periodSeconds - (Math.floor(t / 1000) % periodSeconds)) * 1000);
    return {
      status: 429,
      headers: {
        'x-ratelimit-limit': String(limit),
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': reset.toISOString(),
      },
      body: { error: 'Too many requests' },
    };
  },
};

function mastodonErrors(): PlatformErrors {
  const token = (r: Answer, meaning: ErrorMeaning, source: string): DocumentedError => ({
    ...r,
    path: MASTO_TOKEN,
    meaning,
    basis: 'documented',
    source,
  });
  return {
    tokenInvalidClient: token(
      mastodonAnswers.oauth('invalid_client'),
      'operator',
      "Doorkeeper (Mastodon's OAuth server) OAuth::ErrorResponse: 401 invalid_client with WWW-Authenticate, as RFC 6749 §5.2 asks; docs.joinmastodon.org methods/oauth",
    ),
    tokenInvalidGrant: token(
      mastodonAnswers.oauth('invalid_grant'),
      'reauthorize',
      'Doorkeeper OAuth::ErrorResponse: 400 invalid_grant (docs.joinmastodon.org entities/Error shows this body)',
    ),
    tokenInvalidRequest: token(
      mastodonAnswers.oauth('invalid_request'),
      'operator',
      'Doorkeeper: 400 invalid_request',
    ),
    revokedToken: {
      ...mastodonAnswers.token('revoked'),
      path: MASTO_API,
      meaning: 'reauthorize',
      basis: 'documented',
      source:
        'Mastodon app/controllers/api/base_controller.rb (doorkeeper_unauthorized_render_options) and Doorkeeper en.yml invalid_token.revoked: 401 {"error": "The access token was revoked"}',
    },
    expiredToken: {
      ...mastodonAnswers.token('expired'),
      path: MASTO_API,
      meaning: 'reauthorize',
      basis: 'documented',
      source: 'Mastodon Api::BaseController and Doorkeeper en.yml invalid_token.expired',
    },
    throttled: {
      ...mastodonAnswers.throttled(),
      path: MASTO_API,
      meaning: 'later',
      basis: 'documented',
      source:
        'docs.joinmastodon.org "Rate limits" (X-RateLimit-Limit/-Remaining/-Reset, 300 calls per 5 minutes) and Mastodon config/initializers/rack_attack.rb throttled_responder (429, {"error": "Too many requests"}, Reset as ISO 8601)',
    },
    variants: {
      unknownToken: {
        ...mastodonAnswers.token('unknown'),
        path: MASTO_API,
        meaning: 'reauthorize',
        basis: 'documented',
        source: 'Mastodon Api::BaseController and Doorkeeper en.yml invalid_token.unknown',
      },
    },
  };
}

// ---- the record ---------------------------------------------------------------------------------

const builders: Record<OAuthPlatform, () => PlatformErrors> = {
  x: xErrors,
  linkedin: linkedinErrors,
  facebook: () => graphErrors('facebook'),
  instagram: () => graphErrors('instagram'),
  threads: threadsErrors,
  tiktok: tiktokErrors,
  youtube: youtubeErrors,
  pinterest: pinterestErrors,
  mastodon: mastodonErrors,
};

/**
 * Every OAuth platform's documented error answers. Each read builds them afresh, so reset times are
 * relative to now and trace ids are new: `documentedErrors.x.throttled`.
 */
export const documentedErrors: Readonly<Record<OAuthPlatform, PlatformErrors>> = Object.defineProperties(
  {},
  Object.fromEntries(OAUTH_PLATFORMS.map((p) => [p, { get: builders[p], enumerable: true }])),
) as Record<OAuthPlatform, PlatformErrors>;

/** One documented answer by platform and kind (or variant name); undefined when there is none. */
export function documentedError(platform: string, kind: string): DocumentedError | undefined {
  if (!(OAUTH_PLATFORMS as readonly string[]).includes(platform)) return undefined;
  const all = documentedErrors[platform as OAuthPlatform];
  if (kind === 'variants') return undefined;
  return (all as unknown as Record<string, DocumentedError | undefined>)[kind] ?? all.variants[kind];
}
