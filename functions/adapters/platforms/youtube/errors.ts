import { localDay, startOfDay } from '#core/pacing';
import { errorFromStatus, type HttpResponse, retryAfterSeconds } from '../http.ts';
import { PlatformError } from '../types.ts';

const P = 'youtube';

interface GoogleError {
  error?: {
    code?: number;
    message?: string;
    status?: string;
    errors?: { reason?: string; message?: string }[];
  };
}

const RATE_REASONS = new Set([
  'quotaExceeded',
  'rateLimitExceeded',
  'userRateLimitExceeded',
  'dailyLimitExceeded',
]);
/** The Cloud project's quota or rate (every channel waits); userRateLimitExceeded is one user's. */
const APP_RATE_REASONS = new Set(['quotaExceeded', 'rateLimitExceeded', 'dailyLimitExceeded']);
const MEDIA_REASONS = new Set(['mediaBodyRequired', 'invalidFilename', 'uploadTooLarge']);

/**
 * Seconds until YouTube's daily quota resets: midnight Pacific Time (YouTube Data API "Quota and
 * compliance"), on the Pacific calendar the pacing counts uploads by (DST included).
 */
export function untilPacificMidnight(now = new Date()): number {
  const next = startOfDay(localDay(now.getTime(), 'America/Los_Angeles') + 1, 'America/Los_Angeles');
  return Math.max(1, Math.ceil((next.getTime() - now.getTime()) / 1000));
}

/** Our category from Google's error body: the first `errors[].reason` decides, the status otherwise. */
export function youtubeError(res: HttpResponse, what: string): PlatformError {
  const e = (res.body as GoogleError | undefined)?.error;
  const reason = e?.errors?.[0]?.reason ?? '';
  const detail = `${reason} ${e?.message ?? (typeof res.body === 'string' ? res.body : '')}`.trim();
  const msg = `${P}: ${what}: ${res.status} ${detail}`.slice(0, 500);
  const status = res.status;
  // 401 youtubeSignupRequired: the Google account has no YouTube channel; new tokens will not help.
  if (status === 401 && reason === 'youtubeSignupRequired')
    return new PlatformError('platform_rejected', msg, { status, retryable: false });
  if (status === 401) return new PlatformError('auth_expired', msg, { status, retryable: false });
  // The daily quota (403 quotaExceeded) and per-user rate limits: try again later.
  if (RATE_REASONS.has(reason) || status === 429) {
    return new PlatformError('rate_limited', msg, {
      status,
      // The daily quota is spent until midnight Pacific: asking again before then only fails again.
      retryAfterSeconds:
        retryAfterSeconds(res.headers) ??
        (reason === 'quotaExceeded' || reason === 'dailyLimitExceeded' ? untilPacificMidnight() : undefined),
      ...(APP_RATE_REASONS.has(reason) ? { scope: 'app' as const } : {}),
    });
  }
  // The channel's own upload cap (400 uploadLimitExceeded): a policy refusal, not a transient limit.
  if (reason === 'uploadLimitExceeded')
    return new PlatformError('platform_rejected', msg, { status, retryable: false });
  if (MEDIA_REASONS.has(reason)) return new PlatformError('media_error', msg, { status, retryable: false });
  // invalidTitle, invalidDescription, invalidTags, invalidCategoryId, invalidVideoMetadata…: the variant's content.
  if (status === 400) return new PlatformError('user_content', msg, { status, retryable: false });
  return errorFromStatus(P, res, detail);
}
