import { type HttpResponse, retryAfterSeconds } from '../http.ts';
import { PlatformError } from '../types.ts';

// Errors: XRPC answers `{"error": "<Name>", "message": "…"}`; the name is what tells them apart.

/** An access token the PDS no longer takes: the session is renewed once. */
export const TOKEN_ERRORS = new Set(['ExpiredToken', 'InvalidToken']);
const AUTH_ERRORS = new Set([
  'ExpiredToken',
  'InvalidToken',
  'AuthenticationRequired',
  'AuthFactorTokenRequired',
  'AccountTakedown',
  'AccountDeactivated',
]);

interface XrpcErrorBody {
  error?: string;
  message?: string;
}

export function xrpcError(res: HttpResponse, nsid: string, media = false): PlatformError {
  const body = (typeof res.body === 'object' && res.body ? res.body : {}) as XrpcErrorBody;
  const name = body.error ?? '';
  const msg = `bluesky: ${nsid} ${res.status} ${name}${body.message ? `: ${body.message}` : ''}`.slice(
    0,
    500,
  );
  const status = res.status;
  // Not a dead session: this app password may not do that (direct messages). Reconnecting with one
  // that may is the fix, so it is the platform's refusal, not an expired grant.
  if (scopeRefusal(res)) return new PlatformError('platform_rejected', msg, { status, retryable: false });
  if (status === 429 || name === 'RateLimitExceeded') {
    return new PlatformError('rate_limited', msg, {
      status,
      retryAfterSeconds: retryAfterSeconds(res.headers, 'ratelimit-reset'),
    });
  }
  if (status === 401 || AUTH_ERRORS.has(name))
    return new PlatformError('auth_expired', msg, { status, retryable: false });
  if (name === 'BlobTooLarge' || status === 413)
    return new PlatformError('media_error', msg, { status, retryable: false });
  if (status >= 500)
    return new PlatformError('system', msg, { status, retryAfterSeconds: retryAfterSeconds(res.headers) });
  if (status === 403) return new PlatformError('platform_rejected', msg, { status, retryable: false });
  return new PlatformError(media ? 'media_error' : 'user_content', msg, { status, retryable: false });
}

/**
 * The PDS (or the chat service behind it) refuses the call for the token's kind, not the token: an
 * app password without direct-message access answers 400 InvalidToken "Bad token method" (earlier
 * "Bad token scope").
 */
export function scopeRefusal(res: HttpResponse): boolean {
  const body = (typeof res.body === 'object' && res.body ? res.body : {}) as XrpcErrorBody;
  return body.error === 'InvalidToken' && /bad token (method|scope)/i.test(body.message ?? '');
}

export const errorName = (res: HttpResponse) =>
  (typeof res.body === 'object' && res.body ? (res.body as XrpcErrorBody).error : undefined) ?? '';
