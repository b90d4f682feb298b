import { type HttpResponse, retryAfterSeconds, statusError } from '../http.ts';
import { PlatformError } from '../types.ts';

/** X-RateLimit-Reset is an ISO 8601 timestamp on Mastodon (not epoch seconds). */
function resetSeconds(headers: Headers): number | undefined {
  const hint = retryAfterSeconds(headers);
  if (hint !== undefined) return hint;
  const reset = headers.get('x-ratelimit-reset');
  if (!reset) return undefined;
  let at = Date.parse(reset);
  if (Number.isNaN(at)) at = Date.parse(reset.replace(/\.(\d{3})\d+/, '.$1'));
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

export function mastodonError(res: HttpResponse, what: string, media = false): PlatformError {
  const body = (typeof res.body === 'object' && res.body ? res.body : {}) as {
    error?: string;
    error_description?: string;
  };
  const detail = body.error ?? (typeof res.body === 'string' ? res.body : '');
  const msg = `mastodon: ${what} ${res.status}${detail ? ` ${detail}` : ''}`.slice(0, 500);
  // The instance has not finished transcoding an attachment: a later attempt will succeed.
  if (res.status === 422 && /finished processing/i.test(detail))
    return new PlatformError('system', msg, { status: res.status, retryAfterSeconds: 30 });
  return statusError(res, msg, { retryAfter: resetSeconds(res.headers), media });
}
