import { errorFromStatus, type HttpResponse, retryAfterSeconds } from '../http.ts';
import { PlatformError } from '../types.ts';

const P = 'tiktok';

/** Our category for one of TikTok's error codes (api error codes, direct-post error table). */
export function tiktokError(res: HttpResponse, what: string): PlatformError {
  const err = (res.body as Envelope<unknown> | undefined)?.error;
  const code = err?.code ?? '';
  const detail = `${code}${err?.message ? ` ${err.message}` : ''}`.trim() || String(res.body ?? '');
  const msg = `${P}: ${what}: ${res.status} ${detail}`.slice(0, 500);
  const status = res.status;
  switch (code) {
    case 'access_token_invalid':
    case 'scope_not_authorized':
    case 'scope_permission_missed':
      return new PlatformError('auth_expired', msg, { status, retryable: false });
    case 'rate_limit_exceeded':
    // Posting caps (per creator per day, pending shares, the app's daily active creators): wait and retry.
    case 'spam_risk_too_many_posts':
    case 'spam_risk_too_many_pending_share':
    case 'reached_active_user_cap':
      return new PlatformError('rate_limited', msg, {
        status,
        retryAfterSeconds: retryAfterSeconds(res.headers),
        // The client's daily quota of posting users is the app's, not the creator's.
        ...(code === 'reached_active_user_cap' ? { scope: 'app' as const } : {}),
      });
    case 'spam_risk_user_banned_from_posting':
    case 'unaudited_client_can_only_post_to_private_accounts':
    case 'url_ownership_unverified':
      return new PlatformError('platform_rejected', msg, { status, retryable: false });
    case 'privacy_level_option_mismatch':
    case 'invalid_params':
    case 'spam_risk_text':
      return new PlatformError('user_content', msg, { status, retryable: false });
    case 'invalid_file_upload':
      return new PlatformError('media_error', msg, { status, retryable: false });
    case 'internal_error':
      return new PlatformError('system', msg, { status });
  }
  return errorFromStatus(P, res, detail);
}

/** A FAILED post's fail_reason (status fetch reference) as our category. */
export function failReasonError(reason: string | undefined, publishId: string): PlatformError {
  const msg = `${P}: post ${publishId} failed: ${reason ?? 'unknown reason'}`;
  const r = reason ?? '';
  if (r === 'auth_removed') return new PlatformError('auth_expired', msg, { retryable: false });
  if (r === 'spam_risk_too_many_posts') return new PlatformError('rate_limited', msg);
  if (r === 'spam_risk_text') return new PlatformError('user_content', msg, { retryable: false });
  if (r.endsWith('_check_failed') || r === 'video_pull_failed' || r === 'photo_pull_failed') {
    return new PlatformError('media_error', msg, { retryable: false });
  }
  if (r === 'internal') return new PlatformError('system', msg);
  return new PlatformError('platform_rejected', msg, { retryable: false });
}

/** Token refresh with the channel's client key and secret; refresh tokens rotate, so the new one is kept. */

export interface Envelope<T> {
  data?: T;
  error?: { code?: string; message?: string; log_id?: string };
}
