import { type HttpResponse, retryAfterSeconds, statusError } from '../http.ts';
import type { PlatformError } from '../types.ts';

// Pinterest errors are {"code", "message"}; 401 auth, 429 rate limit (Retry-After or X-RateLimit-Reset),
// 400 content.

const P = 'pinterest';

interface PinterestErrorBody {
  code?: number;
  message?: string;
}

/** Retry-After when sent, else X-RateLimit-Reset (seconds until the window resets, or an epoch). */
function rateHint(headers: Headers): number | undefined {
  const ra = retryAfterSeconds(headers);
  if (ra !== undefined) return ra;
  const reset = Number(headers.get('x-ratelimit-reset') ?? '');
  if (!Number.isFinite(reset) || reset <= 0) return undefined;
  return reset > 1e9 ? Math.max(0, Math.ceil(reset - Date.now() / 1000)) : Math.ceil(reset);
}

export function pinterestError(res: HttpResponse, what: string): PlatformError {
  const b = (typeof res.body === 'object' && res.body ? res.body : {}) as PinterestErrorBody;
  const message = b.message ?? (typeof res.body === 'string' ? res.body : '');
  const msg = `${P}: ${what}: ${res.status}${b.code !== undefined ? ` code ${b.code}` : ''} ${message}`.slice(
    0,
    500,
  );
  // A 400 about the image/video (unreachable URL, unsupported format, not processed) is the media's fault;
  // other 400s (invalid fields, a blocked link), 404 board not found and 409 are the variant's.
  return statusError(res, msg, {
    retryAfter: rateHint(res.headers),
    media: res.status === 400 && /\b(image|video|media|cover)\b/i.test(message),
  });
}
