import { ForbiddenOriginError, PlatformError } from './types.ts';

// HTTP for connectors: timeouts, JSON, and the mapping of HTTP failures onto our error taxonomy.

const TIMEOUT_MS = 15_000;

/**
 * The API origin of a platform. `HERALD_PLATFORM_<NAME>_URL` points it at a sandbox or a contract
 * fake, but only in the local stack: a Lambda (AWS_LAMBDA_FUNCTION_NAME set) always uses the real one.
 */
export function platformOrigin(name: string, real: string): string {
  if (process.env.AWS_LAMBDA_FUNCTION_NAME) return real;
  return (process.env[`HERALD_PLATFORM_${name.toUpperCase()}_URL`] || real).replace(/\/+$/, '');
}

/**
 * A URL of a platform on any of its hosts (its web host for the consent page, its OAuth host, its
 * API host): where a sandbox or contract fake stands in, every host maps to its one origin.
 */
export function platformUrl(name: string, real: string): string {
  const url = new URL(real);
  const origin = platformOrigin(name, url.origin);
  return origin === url.origin ? real : `${origin}${url.pathname}${url.search}`;
}

export interface HttpResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

/** Retry-After as seconds (delta or HTTP date), or a reset epoch header. */
export function retryAfterSeconds(headers: Headers, resetHeader?: string): number | undefined {
  const ra = headers.get('retry-after');
  if (ra) {
    const n = Number(ra);
    if (Number.isFinite(n)) return Math.max(0, n);
    const at = Date.parse(ra);
    if (!Number.isNaN(at)) return Math.max(0, Math.ceil((at - Date.now()) / 1000));
  }
  const reset = resetHeader ? headers.get(resetHeader) : null;
  if (reset && Number.isFinite(Number(reset)))
    return Math.max(0, Math.ceil(Number(reset) - Date.now() / 1000));
  return undefined;
}

/** Default mapping of a failed HTTP answer; connectors refine it from the platform's error body. */
export function errorFromStatus(
  platform: string,
  res: HttpResponse,
  detail: string,
  resetHeader?: string,
): PlatformError {
  const msg = `${platform}: ${res.status} ${detail}`.slice(0, 500);
  if (res.status === 401) return new PlatformError('auth_expired', msg, { status: 401, retryable: false });
  if (res.status === 403)
    return new PlatformError('platform_rejected', msg, { status: 403, retryable: false });
  if (res.status === 429) {
    return new PlatformError('rate_limited', msg, {
      status: 429,
      retryAfterSeconds: retryAfterSeconds(res.headers, resetHeader),
    });
  }
  if (res.status === 413 || res.status === 415)
    return new PlatformError('media_error', msg, { status: res.status, retryable: false });
  if (res.status >= 500)
    return new PlatformError('system', msg, {
      status: res.status,
      retryAfterSeconds: retryAfterSeconds(res.headers),
    });
  return new PlatformError('user_content', msg, { status: res.status, retryable: false });
}

/** fetch with a timeout; network failures and timeouts are retryable system errors. */
export async function request<T = unknown>(
  platform: string,
  url: string,
  init: RequestInit & { timeoutMs?: number; fetch?: typeof fetch } = {},
): Promise<HttpResponse<T>> {
  let res: Response;
  try {
    // A platform at an origin a user chose passes the address-checked fetch (adapters/webhooks/safe-http).
    res = await (init.fetch ?? fetch)(url, {
      ...init,
      redirect: 'manual',
      signal: AbortSignal.timeout(init.timeoutMs ?? TIMEOUT_MS),
    });
  } catch (err) {
    if ((err as Error).name === 'ForbiddenAddressError')
      throw new ForbiddenOriginError(platform, (err as { address?: string }).address ?? new URL(url).host);
    throw new PlatformError(
      'system',
      `${platform}: ${(err as Error).name === 'TimeoutError' ? 'timed out' : (err as Error).message}`,
    );
  }
  const text = await res.text();
  let body: unknown = text;
  if (text && (res.headers.get('content-type') ?? '').includes('json')) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return { status: res.status, headers: res.headers, body: body as T };
}

export const json = (value: unknown): RequestInit => ({
  body: JSON.stringify(value),
  headers: { 'content-type': 'application/json' },
});
