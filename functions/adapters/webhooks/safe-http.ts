/**
 * SSRF-safe webhook POST (docs/api/webhooks.md, "Address checks"). The host is resolved exactly once,
 * every answer is checked against the address policy (one forbidden answer refuses the request), and
 * the socket is pinned to the first checked address through a custom `lookup`, so no second
 * resolution (DNS rebinding) can redirect the connection. Host header and TLS SNI keep the original
 * name. Redirects are never followed, the whole exchange is bounded by a timeout and the response
 * body read is capped.
 */
import { promises as dns, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import {
  bareHostname,
  type CidrList,
  checkWebhookUrl,
  isForbiddenAddress,
  isIpLiteral,
} from '#core/address-policy';

export type Resolver = (host: string) => Promise<Array<{ address: string; family: number }>>;

export interface SafePostOptions {
  allow: CidrList;
  requireHttps: boolean;
  /** Total budget for connect, request and response (default 15 s). */
  timeoutMs?: number;
  /** How much of the response body is read at most (default 64 KiB). */
  maxResponseBytes?: number;
  /** Injected resolver (tests); defaults to one `dns.lookup(host, { all: true, verbatim: true })`. */
  resolver?: Resolver;
}

export interface SafePostResult {
  status: number;
  durationMs: number;
  bodyExcerpt: string;
  /** True when the body was longer than maxResponseBytes and reading stopped. */
  truncated: boolean;
}

export const DEFAULT_TIMEOUT_MS = 15_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

export class ForbiddenAddressError extends Error {
  override readonly name = 'ForbiddenAddressError';
  readonly code = 'forbidden_address';
  constructor(readonly address: string) {
    super(`webhook address is forbidden: ${address}`);
  }
}

export class WebhookRequestError extends Error {
  override readonly name = 'WebhookRequestError';
  constructor(
    readonly reason: string,
    message?: string,
  ) {
    super(message ?? reason);
  }
}

const systemResolver: Resolver = async (host) => dns.lookup(host, { all: true, verbatim: true });

/**
 * Resolves `host` once (IP literals are not resolved) and checks every answer. Returns the answers,
 * first one first; throws ForbiddenAddressError if any answer is forbidden, WebhookRequestError when
 * resolution fails. Also usable at endpoint create/update.
 */
export async function resolveChecked(
  host: string,
  allow: CidrList,
  resolver: Resolver = systemResolver,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<LookupAddress[]> {
  let answers: LookupAddress[];
  if (isIpLiteral(host)) {
    answers = [{ address: host, family: host.includes(':') ? 6 : 4 }];
  } else {
    let timer: NodeJS.Timeout | undefined;
    try {
      // A slow resolver must not outlast the caller's budget (an API request, a 15 s delivery).
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      });
      answers = (await Promise.race([resolver(host), timeout])).map((a) => ({
        address: a.address,
        family: a.family,
      }));
    } catch (error) {
      throw new WebhookRequestError('dns_failed', `cannot resolve ${host}: ${(error as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }
  if (answers.length === 0) throw new WebhookRequestError('dns_failed', `no address for ${host}`);
  for (const answer of answers) {
    if (isForbiddenAddress(answer.address, allow)) throw new ForbiddenAddressError(answer.address);
  }
  return answers;
}

/** A `lookup` that ignores the name and always answers the one checked address. */
export function pinnedLookup(pinned: LookupAddress): LookupFunction {
  return (_hostname, options, callback) => {
    if (typeof options === 'object' && options !== null && options.all === true) {
      (callback as (err: null, addresses: LookupAddress[]) => void)(null, [
        { address: pinned.address, family: pinned.family },
      ]);
    } else {
      callback(null, pinned.address, pinned.family);
    }
  };
}

/** POSTs `body` to `rawUrl` under the address policy. Never follows a redirect: a 3xx is a result. */
export async function safePost(
  rawUrl: string | URL,
  body: string,
  headers: Record<string, string>,
  opts: SafePostOptions,
): Promise<SafePostResult> {
  const res = await safeRequest(rawUrl, { method: 'POST', headers, body }, opts);
  return {
    status: res.status,
    durationMs: res.durationMs,
    bodyExcerpt: res.body.toString('utf8'),
    truncated: res.truncated,
  };
}

export interface SafeResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  durationMs: number;
  truncated: boolean;
}

/**
 * One HTTP request to a URL someone outside the operator chose (a webhook receiver, a Mastodon
 * instance, a Bluesky PDS), under the address policy: resolved once, every answer checked, the
 * socket pinned to the checked address, no redirects followed, bounded in time and response size.
 */
export async function safeRequest(
  rawUrl: string | URL,
  init: {
    method: string;
    headers?: Record<string, string>;
    /** A stream goes as it comes (uploads), with the caller's Content-Length. */
    body?: string | Uint8Array | ReadableStream<Uint8Array>;
    signal?: AbortSignal;
  },
  opts: SafePostOptions,
): Promise<SafeResponse> {
  const started = performance.now();
  const checked = checkWebhookUrl(String(rawUrl), { requireHttps: opts.requireHttps, allow: opts.allow });
  if (!checked.ok) {
    if (checked.reason === 'forbidden_address')
      throw new ForbiddenAddressError(new URL(String(rawUrl)).hostname);
    throw new WebhookRequestError(checked.reason);
  }
  const url = checked.url;
  const host = bareHostname(url);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const [pinned] = await resolveChecked(host, opts.allow, opts.resolver, timeoutMs);
  const maxBytes = opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const isHttps = url.protocol === 'https:';
  const elapsed = performance.now() - started;
  const remaining = Math.max(1, timeoutMs - elapsed);
  const streamed = init.body instanceof ReadableStream ? init.body : undefined;
  const body =
    init.body === undefined || streamed ? undefined : Buffer.from(init.body as string | Uint8Array);

  return new Promise<SafeResponse>((resolve, reject) => {
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };
    const options: https.RequestOptions = {
      method: init.method,
      protocol: url.protocol,
      hostname: host,
      port: url.port === '' ? (isHttps ? 443 : 80) : Number(url.port),
      path: `${url.pathname}${url.search}`,
      headers: {
        ...init.headers,
        host: url.host,
        ...(body ? { 'content-length': String(body.length) } : {}),
      },
      lookup: pinnedLookup(pinned!),
      agent: false,
      ...(isHttps && !isIpLiteral(host) ? { servername: host } : {}),
    };
    const req = (isHttps ? https : http).request(options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      const done = () =>
        finish(() =>
          resolve({
            status: res.statusCode ?? 0,
            headers: Object.fromEntries(
              Object.entries(res.headers).map(([k, v]) => [
                k,
                Array.isArray(v) ? v.join(', ') : String(v ?? ''),
              ]),
            ),
            body: Buffer.concat(chunks),
            durationMs: Math.round(performance.now() - started),
            truncated,
          }),
        );
      res.on('data', (chunk: Buffer) => {
        if (settled) return;
        const room = maxBytes - size;
        if (chunk.length >= room) {
          chunks.push(chunk.subarray(0, room));
          size = maxBytes;
          truncated = chunk.length > room || truncated;
          if (truncated) {
            done();
            res.destroy();
            req.destroy();
          }
          return;
        }
        chunks.push(chunk);
        size += chunk.length;
      });
      res.on('end', done);
      res.on('error', (error) =>
        finish(() => reject(new WebhookRequestError('response_error', error.message))),
      );
    });
    const timer = setTimeout(() => {
      finish(() => reject(new WebhookRequestError('timeout', `no complete response within ${timeoutMs} ms`)));
      req.destroy();
    }, remaining);
    req.on('error', (error) =>
      finish(() => reject(new WebhookRequestError('connection_error', error.message))),
    );
    // The caller's own deadline (fetch's AbortSignal.timeout), when it is shorter.
    init.signal?.addEventListener('abort', () => {
      finish(() => reject(new WebhookRequestError('timeout', 'aborted by the caller')));
      req.destroy();
    });
    if (!streamed) return req.end(body);
    const source = Readable.fromWeb(streamed as WebReadableStream<Uint8Array>);
    source.on('error', (error) => {
      finish(() => reject(new WebhookRequestError('connection_error', `request body: ${error.message}`)));
      req.destroy();
    });
    source.pipe(req);
  });
}

/**
 * `fetch` over safeRequest, for libraries that take a fetch (the OAuth client) and connectors of
 * platforms whose origin the user chose. Bodies are read whole (responses up to 1 MiB).
 */
export function safeFetch(opts: SafePostOptions): typeof fetch {
  return async (input, init) => {
    if (init?.signal?.aborted) throw new WebhookRequestError('timeout', 'aborted by the caller');
    // An upload's stream is passed on as it is; other bodies are read whole (they are small).
    const streamed = init?.body instanceof ReadableStream ? init.body : undefined;
    const request = new Request(input, streamed ? { ...init, body: null } : init);
    const body =
      streamed || ['GET', 'HEAD'].includes(request.method)
        ? undefined
        : new Uint8Array(await request.arrayBuffer());
    const headers: Record<string, string> = {};
    request.headers.forEach((v, k) => {
      headers[k] = v;
    });
    const res = await safeRequest(
      request.url,
      {
        method: request.method,
        headers,
        ...(streamed ? { body: streamed } : body?.length ? { body } : {}),
        ...(init?.signal ? { signal: init.signal } : {}),
      },
      // The caller's signal bounds it (uploads take longer than API calls).
      { maxResponseBytes: 1024 * 1024, timeoutMs: 300_000, ...opts },
    );
    return new Response(res.status === 204 || res.status === 304 ? null : new Uint8Array(res.body), {
      status: res.status,
      headers: res.headers,
    });
  };
}
