import { type HttpResponse, retryAfterSeconds, statusError } from '../http.ts';
import { PlatformError } from '../types.ts';

// X answers errors as RFC 7807 problems (title, detail, errors[]) or OAuth errors.

interface Problem {
  title?: string;
  detail?: string;
  type?: string;
  status?: number;
  errors?: Array<{ message?: string; code?: number; parameters?: unknown }>;
  error?: string;
  error_description?: string;
}

function describe(res: HttpResponse): string {
  if (typeof res.body !== 'object' || !res.body) return typeof res.body === 'string' ? res.body : '';
  const p = res.body as Problem;
  const inner = p.errors
    ?.map((e) => e.message)
    .filter(Boolean)
    .join('; ');
  return [p.title, p.detail, inner, p.error, p.error_description].filter(Boolean).join(': ');
}

export function xError(res: HttpResponse, what: string, media = false): PlatformError {
  const detail = describe(res);
  const msg = `x: ${what} ${res.status}${detail ? ` ${detail}` : ''}`.slice(0, 500);
  // "You are not allowed to create a Tweet with duplicate content." and "Your Tweet text is too long."
  // are about the text, not a policy.
  if (res.status === 403 && /duplicate content|text is too long/i.test(detail))
    return new PlatformError('user_content', msg, { status: res.status, retryable: false });
  return statusError(res, msg, { ...rateLimit(res.headers), media });
}

/**
 * Which of X's limits a 429 spent: the app's 24-hour cap (every channel waits for its reset), the
 * user's 24-hour cap, or the endpoint's 15-minute window (x-rate-limit-reset); the `*-remaining`
 * header at 0 names the cap (docs.x.com, "Rate limits").
 */
function rateLimit(headers: Headers): { retryAfter: number | undefined; scope?: 'app' | 'channel' } {
  const spent = (name: string) => headers.get(`${name}-remaining`)?.trim() === '0';
  if (spent('x-app-limit-24hour'))
    return { retryAfter: retryAfterSeconds(headers, 'x-app-limit-24hour-reset'), scope: 'app' };
  if (spent('x-user-limit-24hour'))
    return { retryAfter: retryAfterSeconds(headers, 'x-user-limit-24hour-reset'), scope: 'channel' };
  return { retryAfter: retryAfterSeconds(headers, 'x-rate-limit-reset') };
}

export const isDuplicate = (err: unknown) =>
  err instanceof PlatformError &&
  err.opts.status === 403 &&
  err.category === 'user_content' &&
  /duplicate content/i.test(err.message);
