import { type HttpResponse, retryAfterSeconds, statusError } from '../http.ts';
import type { PlatformError } from '../types.ts';

interface LiError {
  status?: number;
  message?: string;
  code?: string;
  serviceErrorCode?: number;
  errorDetails?: { inputErrors?: Array<{ code?: string; description?: string }> };
  error?: string;
  error_description?: string;
}

export function describe(res: HttpResponse): string {
  if (typeof res.body !== 'object' || !res.body) return typeof res.body === 'string' ? res.body : '';
  const b = res.body as LiError;
  const inputs = b.errorDetails?.inputErrors
    ?.map((e) => e.code ?? e.description)
    .filter(Boolean)
    .join(', ');
  return [b.code, b.message, inputs, b.error, b.error_description].filter(Boolean).join(': ');
}

/** Seconds until LinkedIn's daily quota window resets (midnight UTC), for "DAY limit" throttles. */
function untilUtcMidnight(): number {
  const now = new Date();
  return Math.ceil(
    (Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) - now.getTime()) / 1000,
  );
}

export function linkedinError(res: HttpResponse, what: string, media = false): PlatformError {
  const detail = describe(res);
  const msg = `linkedin: ${what} ${res.status}${detail ? ` ${detail}` : ''}`.slice(0, 500);
  const hint = retryAfterSeconds(res.headers) ?? (/\bDAY\b/.test(detail) ? untilUtcMidnight() : undefined);
  // "Resource level throttle APPLICATION DAY limit …": the app's daily limit, not the member's.
  const scope = /\bAPPLICATION\b/.test(detail) ? ('app' as const) : undefined;
  return statusError(res, msg, { retryAfter: hint, media, ...(scope ? { scope } : {}) });
}
