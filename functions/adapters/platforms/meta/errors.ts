import { errorFromStatus, type HttpResponse, parseJson, retryAfterSeconds } from '../http.ts';
import { PlatformError } from '../types.ts';

// Graph API errors (Threads, Instagram, Facebook Pages):
// `{"error": {"message", "type", "code", "error_subcode", "is_transient", "fbtrace_id", ...}}`
// (developers.facebook.com/docs/graph-api/guides/error-handling).

export interface GraphErrorBody {
  message?: string;
  type?: string;
  code?: number;
  error_subcode?: number;
  error_user_title?: string;
  error_user_msg?: string;
  is_transient?: boolean;
  fbtrace_id?: string;
}

// Error codes from the Graph API error-handling guide and the Instagram Platform error-code table.
/** Token missing, expired, revoked or invalidated (102 API session, 104 token required, 190, 2500). */
const AUTH_CODES = new Set([102, 104, 190, 2500]);
/** Throttling: app (4), user (17), page (32), per-call (613), app limit (341), BUC limits (80001–80014). */
const THROTTLE_CODES = new Set([4, 17, 32, 341, 613]);
/** The throttles that spend the app's own limit (every channel of the platform waits), not one account's. */
const APP_THROTTLE_CODES = new Set([4, 341]);
const isThrottle = (code: number) => THROTTLE_CODES.has(code) || (code >= 80001 && code <= 80014);
/** Instagram: the account reached the 24-hour Content Publishing limit. */
const PUBLISH_LIMIT_SUBCODES = new Set([2207042]);
/** Permission refusals: 3 (capability), 10 (permission denied), 200–299 (permission per object). */
const isPermission = (code: number) => code === 3 || code === 10 || (code >= 200 && code <= 299);
/** Policy: 368 temporarily blocked for policy violations; Instagram spam restriction and restricted account. */
const POLICY_CODES = new Set([368]);
const POLICY_SUBCODES = new Set([2207050, 2207051]);
/** Media the platform could not fetch or does not accept (size, format, aspect ratio, codec). */
const MEDIA_CODES = new Set([324, 352, 9004, 36000, 36001, 36003]);
const MEDIA_SUBCODES = new Set([2207004, 2207005, 2207009, 2207026, 2207052]);
/**
 * Messenger and Instagram messaging: a reply sent more than 24 hours after the person last wrote
 * (Messenger Platform error codes: 10 / 2018278 "This message is sent outside of allowed window";
 * Instagram 10 / 2534022). Nothing is sent, and sending again cannot help.
 */
const MESSAGING_WINDOW_SUBCODES = new Set([2018278, 2534022]);
/** Server-side hiccups Meta documents as "try again" (unknown, service, Instagram internal -1/-2). */
const TRANSIENT_CODES = new Set([1, 2, -1, -2]);
const TRANSIENT_SUBCODES = new Set([2207001, 2207003, 2207008, 2207020, 2207027, 2207032, 2207053]);

/** Meta's OAuth endpoints: the app is unknown (101) or its secret wrong (1, "Error validating client secret"). */
const CLIENT_CODES = new Set([101]);
/** Code 100's "the authorization code has expired / been used" (36007, 36009) and "invalid verification code" (36008). */
const CODE_SUBCODES = new Set([36007, 36008, 36009]);

/**
 * A Graph error at Meta's token endpoints as the RFC 6749 `error` it amounts to, for the OAuth
 * client's classification: the grant refused (190 and the other token codes, a spent code) →
 * invalid_grant; throttling (4, 17, 32, 613, …, which Meta sends as 400/403, not 429) and its
 * transient codes → temporarily_unavailable; the app refused → invalid_client; the rest →
 * invalid_request (the request, so the operator's to look at).
 */
export function graphTokenError(status: number, error: GraphErrorBody): string {
  const code = typeof error.code === 'number' ? error.code : undefined;
  const sub = typeof error.error_subcode === 'number' ? error.error_subcode : undefined;
  if (code !== undefined && AUTH_CODES.has(code)) return 'invalid_grant';
  if (sub !== undefined && CODE_SUBCODES.has(sub)) return 'invalid_grant';
  if ((code !== undefined && isThrottle(code)) || status === 429) return 'temporarily_unavailable';
  if (code !== undefined && CLIENT_CODES.has(code)) return 'invalid_client';
  if (code === 1 && /client secret|application/i.test(error.message ?? '')) return 'invalid_client';
  if (status >= 500 || error.is_transient === true || (code !== undefined && TRANSIENT_CODES.has(code)))
    return 'temporarily_unavailable';
  return 'invalid_request';
}

/**
 * The Instagram-style OAuth error (`{"error_type", "code", "error_message"}`, which Threads' token
 * endpoints share) as an RFC 6749 `error`; undefined for other bodies.
 */
export function igOAuthError(body: unknown): string | undefined {
  const b = (typeof body === 'string' ? parseJson(body) : body) as Record<string, unknown> | null | undefined;
  if (!b || typeof b !== 'object' || typeof b.error_message !== 'string' || typeof b.error_type !== 'string')
    return undefined;
  const message = b.error_message;
  if (/client secret|platform app|application/i.test(message)) return 'invalid_client';
  if (/code|token|session/i.test(message) && /not found|already used|expired|invalid|revoked/i.test(message))
    return 'invalid_grant';
  return 'invalid_request';
}

/** The Graph error object of a response body, if it has one. */
export function graphErrorOf(body: unknown): GraphErrorBody | undefined {
  const parsed = typeof body === 'string' ? parseJson(body) : body;
  if (parsed && typeof parsed === 'object' && 'error' in parsed) {
    const error = (parsed as { error: unknown }).error;
    if (error && typeof error === 'object') return error as GraphErrorBody;
  }
  return undefined;
}

/**
 * Seconds until a throttled app may call again: the Business Use Case header's
 * `estimated_time_to_regain_access` (minutes), else Retry-After.
 */
export function graphRetryAfter(headers: Headers): number | undefined {
  for (const name of ['x-business-use-case-usage', 'x-ad-account-usage', 'x-app-usage']) {
    const raw = headers.get(name);
    const usage = raw ? parseJson(raw) : undefined;
    const minutes = usage ? maxRegainMinutes(usage) : undefined;
    if (minutes !== undefined) return minutes * 60;
  }
  return retryAfterSeconds(headers);
}

function maxRegainMinutes(usage: unknown): number | undefined {
  let best: number | undefined;
  const visit = (v: unknown) => {
    if (Array.isArray(v)) for (const x of v) visit(x);
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'estimated_time_to_regain_access' && typeof x === 'number' && x > 0)
          best = Math.max(best ?? 0, x);
        else visit(x);
      }
    }
  };
  visit(usage);
  return best;
}

/** Maps a failed Graph response onto our taxonomy from its error body (code, subcode, is_transient). */
export function graphError(platform: string, res: HttpResponse): PlatformError {
  const e = graphErrorOf(res.body);
  if (!e) {
    const text = typeof res.body === 'string' ? res.body.slice(0, 200) : '';
    return errorFromStatus(platform, res, text || 'no error body');
  }
  const code = typeof e.code === 'number' ? e.code : undefined;
  const sub = typeof e.error_subcode === 'number' ? e.error_subcode : undefined;
  const detail = [
    `(#${code ?? '?'}${sub ? `/${sub}` : ''})`,
    e.message ?? 'error',
    e.error_user_msg && e.error_user_msg !== e.message ? `— ${e.error_user_msg}` : '',
    e.fbtrace_id ? `[fbtrace_id ${e.fbtrace_id}]` : '',
  ]
    .filter(Boolean)
    .join(' ');
  const msg = `${platform}: ${res.status} ${detail}`.slice(0, 500);
  const status = res.status;

  if (code !== undefined && AUTH_CODES.has(code))
    return new PlatformError('auth_expired', msg, { status, retryable: false });
  // Subcodes are more specific than codes: Instagram's spam block arrives as code 4 (a throttling code).
  if (sub !== undefined && POLICY_SUBCODES.has(sub))
    return new PlatformError('platform_rejected', msg, { status, retryable: false });
  if (sub !== undefined && MESSAGING_WINDOW_SUBCODES.has(sub))
    return new PlatformError(
      'platform_rejected',
      `${platform}: Meta lets an account answer a message only within 24 hours of the person's last one, and that window has closed ${detail}`.slice(
        0,
        500,
      ),
      { status, retryable: false },
    );
  if (
    (sub !== undefined && PUBLISH_LIMIT_SUBCODES.has(sub)) ||
    (code !== undefined && isThrottle(code)) ||
    status === 429
  ) {
    const appWide =
      code !== undefined &&
      APP_THROTTLE_CODES.has(code) &&
      !(sub !== undefined && PUBLISH_LIMIT_SUBCODES.has(sub));
    return new PlatformError('rate_limited', msg, {
      status,
      retryAfterSeconds: graphRetryAfter(res.headers),
      ...(appWide ? { scope: 'app' as const } : {}),
    });
  }
  if (code !== undefined && (POLICY_CODES.has(code) || isPermission(code))) {
    return new PlatformError('platform_rejected', msg, { status, retryable: false });
  }
  if ((code !== undefined && MEDIA_CODES.has(code)) || (sub !== undefined && MEDIA_SUBCODES.has(sub))) {
    return new PlatformError('media_error', msg, { status, retryable: false });
  }
  if (
    e.is_transient === true ||
    status >= 500 ||
    (code !== undefined && TRANSIENT_CODES.has(code)) ||
    (sub !== undefined && TRANSIENT_SUBCODES.has(sub))
  ) {
    return new PlatformError('system', msg, { status, retryAfterSeconds: retryAfterSeconds(res.headers) });
  }
  if (status === 401) return new PlatformError('auth_expired', msg, { status, retryable: false });
  if (status === 403) return new PlatformError('platform_rejected', msg, { status, retryable: false });
  // 100 invalid parameter, 506 duplicate post, 1609005 link could not be scraped, and the rest: the request.
  return new PlatformError('user_content', msg, { status, retryable: false });
}
