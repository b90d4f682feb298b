import type { PaceScope } from '#core/pacing';
import { inLambda } from '#shared/config';
import { ForbiddenOriginError, PlatformError } from './types.ts';

// HTTP for connectors: timeouts, JSON, and the mapping of HTTP failures onto our error taxonomy.

const TIMEOUT_MS = 15_000;

/**
 * The API origin of a platform. `HERALD_PLATFORM_<NAME>_URL` points it at a sandbox or a contract
 * fake, but only in the local stack: a Lambda (AWS_LAMBDA_FUNCTION_NAME set) always uses the real one.
 */
export function platformOrigin(name: string, real: string): string {
  if (inLambda()) return real;
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

/**
 * A failed answer's category by its status, the ladder every connector shares: 401 auth, 429 rate
 * limit (after `retryAfter`, for `scope`), 5xx a try-later, 403 a refusal, 413/415 (or any failure of
 * a media call) the media's fault, the rest the request's content. Connectors check their own codes first.
 */
export function statusError(
  res: HttpResponse,
  msg: string,
  opts: { retryAfter?: number | undefined; media?: boolean; scope?: PaceScope } = {},
): PlatformError {
  const status = res.status;
  if (status === 401) return new PlatformError('auth_expired', msg, { status, retryable: false });
  if (status === 429)
    return new PlatformError('rate_limited', msg, {
      status,
      retryAfterSeconds: opts.retryAfter,
      ...(opts.scope ? { scope: opts.scope } : {}),
    });
  if (status >= 500)
    return new PlatformError('system', msg, { status, retryAfterSeconds: retryAfterSeconds(res.headers) });
  if (status === 403) return new PlatformError('platform_rejected', msg, { status, retryable: false });
  if (opts.media || status === 413 || status === 415)
    return new PlatformError('media_error', msg, { status, retryable: false });
  return new PlatformError('user_content', msg, { status, retryable: false });
}

/** Default mapping of a failed HTTP answer; connectors refine it from the platform's error body. */
export function errorFromStatus(
  platform: string,
  res: HttpResponse,
  detail: string,
  resetHeader?: string,
): PlatformError {
  return statusError(res, `${platform}: ${res.status} ${detail}`.slice(0, 500), {
    retryAfter: retryAfterSeconds(res.headers, resetHeader),
  });
}

/** JSON text as a value; undefined when it is not JSON (platforms answer HTML and plain text too). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * A request body sent as a stream of a length known up front (S3's presigned POST and many servers
 * refuse chunked transfer encoding). `open` is called per send, so a request sent again after a 401
 * reads the bytes afresh.
 */
export interface StreamBody {
  length: number;
  contentType: string;
  open(): ReadableStream<Uint8Array>;
}

export type RequestOptions = Omit<RequestInit, 'headers'> & {
  headers?: Record<string, string>;
  /** A JSON body; sets content-type unless `headers` name one. */
  json?: unknown;
  timeoutMs?: number;
  /** The address-checked fetch for a server a user chose (user-origin.ts). */
  fetch?: typeof fetch;
  /** Reads every non-empty body (TikTok's int64 ids); by default JSON content types are parsed. */
  parse?: (text: string) => unknown;
  /** A streamed body (uploads): sent with its Content-Length, never held whole. */
  stream?: StreamBody;
};

/** Network errors that come before a request is sent: the server cannot have acted on it. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH']);

/**
 * fetch with a timeout; network failures and timeouts are retryable system errors, of unknown
 * outcome unless the connection was never made.
 */
export async function request<T = unknown>(
  platform: string,
  url: string,
  init: RequestOptions = {},
): Promise<HttpResponse<T>> {
  const { json: value, timeoutMs, fetch: fetchFn, parse, headers: given, stream, ...rest } = init;
  const headers = { ...given };
  if (value !== undefined) headers['content-type'] ??= 'application/json';
  if (stream) {
    headers['content-type'] ??= stream.contentType;
    headers['content-length'] = String(stream.length);
  }
  let res: Response;
  try {
    // A platform at an origin a user chose passes the address-checked fetch (adapters/webhooks/safe-http).
    res = await (fetchFn ?? fetch)(url, {
      ...rest,
      headers,
      ...(value !== undefined ? { body: JSON.stringify(value) } : {}),
      ...(stream ? { body: stream.open(), duplex: 'half' } : {}),
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs ?? TIMEOUT_MS),
    });
  } catch (err) {
    if ((err as Error).name === 'ForbiddenAddressError')
      throw new ForbiddenOriginError(platform, (err as { address?: string }).address ?? new URL(url).host);
    const code = ((err as { cause?: { code?: unknown } }).cause?.code ?? (err as { code?: unknown }).code) as
      | string
      | undefined;
    throw new PlatformError(
      'system',
      `${platform}: ${(err as Error).name === 'TimeoutError' ? 'timed out' : (err as Error).message}`,
      { unknownOutcome: !(code && NOT_SENT.has(code)) },
    );
  }
  const text = await res.text();
  let body: unknown = text;
  if (text && parse) body = parse(text);
  else if (text && (res.headers.get('content-type') ?? '').includes('json')) body = parseJson(text) ?? text;
  return { status: res.status, headers: res.headers, body: body as T };
}

/** A 2xx answer, else the connector's error for it, named by method and path (without the query). */
export function expectOk<R extends HttpResponse>(
  res: R,
  method: string,
  path: string,
  error: (res: R, what: string) => PlatformError,
): R {
  if (res.status >= 200 && res.status < 300) return res;
  throw error(res, `${method} ${path.split('?')[0]}`);
}

/** A failed upload of the bytes themselves: the platform's outage, else the media's fault. */
export function uploadError(msg: string, status: number): PlatformError {
  if (status >= 500) return new PlatformError('system', msg, { status });
  return new PlatformError('media_error', msg, { status, retryable: false });
}
