/**
 * Fetching a media file from a URL someone outside the operator chose (importMedia). The webhook
 * address policy applies to every hop: the host is resolved once, every answer checked, the socket
 * pinned to the checked address; a redirect is followed (at most MAX_REDIRECTS) only after its
 * target passed the same checks. The bytes decide the type (the server's Content-Type is ignored),
 * and the size limit of that type is enforced while reading: a Content-Length over it is refused
 * before the body is read, and reading stops at the limit + 1 byte.
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { bareHostname, type CidrList, checkWebhookUrl, isIpLiteral } from '#core/address-policy';
import { sniff } from '#core/media-probe';
import { ALLOWED_MEDIA, type AllowedContentType, HEAD_BYTES, isAllowed } from '#core/media-types';
import { ForbiddenAddressError, pinnedLookup, type Resolver, resolveChecked } from './webhooks/safe-http.ts';

export type ImportRefusalCode =
  | 'invalid_url'
  | 'https_required'
  | 'credentials_not_allowed'
  | 'address_not_allowed'
  | 'unsupported_media_type'
  | 'media_too_large'
  | 'fetch_failed'
  | 'fetch_timeout';

/** Why a URL's content cannot become a media asset; `message` is a sentence for the client. */
export class ImportRefusal extends Error {
  override readonly name = 'ImportRefusal';
  constructor(
    readonly code: ImportRefusalCode,
    message: string,
  ) {
    super(message);
  }
}

export const MAX_REDIRECTS = 5;
/** Enough for the magic numbers of every accepted type (an MP4's ftyp box, an ID3 tag's header). */
const EARLY_SNIFF_BYTES = 4096;
/** The largest file of any accepted type: a Content-Length over it is refused before sniffing. */
export const LARGEST_MEDIA_BYTES = Math.max(...Object.values(ALLOWED_MEDIA).map((m) => m.maxBytes));

export interface FetchOptions {
  policy: { requireHttps: boolean; allow: CidrList };
  /** Per hop: until the TCP connection is up. */
  connectTimeoutMs: number;
  /** Per hop: from the connection to the response's headers. */
  firstByteTimeoutMs: number;
  /** The whole fetch, body included (the caller's budget). */
  signal: AbortSignal;
  resolver?: Resolver;
  /** Tests: a smaller limit than the type's. */
  maxBytes?: (type: AllowedContentType) => number;
  /** The request's Accept header (default any). */
  accept?: string;
}

export interface FetchedMedia {
  /** Where the bytes came from after redirects. */
  url: URL;
  type: AllowedContentType;
  /** The server's Content-Length, when it sent one. */
  contentLength: number | null;
  /** Every byte of the body, the sniffed head first; throws ImportRefusal past the limit. */
  chunks: AsyncIterable<Uint8Array>;
  /** Bytes taken from the response so far (never more than the limit + 1). */
  bytesRead: () => number;
  /** Stops reading and closes the connection. */
  close: () => void;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MIB = 1024 * 1024;
const size = (n: number) => (n >= MIB ? `${Math.round((n / MIB) * 10) / 10} MiB` : `${n} bytes`);

/** The syntactic checks of the URL (and of every redirect target), as refusals. */
function checkedUrl(raw: string, opts: FetchOptions, hop: string): URL {
  const checked = checkWebhookUrl(raw, { requireHttps: opts.policy.requireHttps, allow: opts.policy.allow });
  if (checked.ok) return checked.url;
  switch (checked.reason) {
    case 'userinfo_not_allowed':
      throw new ImportRefusal('credentials_not_allowed', `${hop} carries credentials; they are not sent.`);
    case 'https_required':
      throw new ImportRefusal('https_required', `${hop} must use https.`);
    case 'forbidden_address':
      throw new ImportRefusal(
        'address_not_allowed',
        `${hop} points at a private, loopback, link-local or metadata address, which Herald never fetches.`,
      );
    default:
      throw new ImportRefusal('invalid_url', `${hop} is not an http(s) URL with a host.`);
  }
}

/** One GET under the policy, pinned to the checked address; resolves with the response's headers. */
async function get(url: URL, opts: FetchOptions, hop: string): Promise<IncomingMessage> {
  const host = bareHostname(url);
  let pinned: Awaited<ReturnType<typeof resolveChecked>>[number] | undefined;
  try {
    [pinned] = await resolveChecked(host, opts.policy.allow, opts.resolver, opts.connectTimeoutMs);
  } catch (err) {
    if (err instanceof ForbiddenAddressError)
      throw new ImportRefusal(
        'address_not_allowed',
        `${hop} (${host}) resolves to ${err.address}, a private, loopback, link-local or metadata address, which Herald never fetches.`,
      );
    throw new ImportRefusal('fetch_failed', `${hop}: ${(err as Error).message}.`);
  }
  if (opts.signal.aborted) throw timedOut();
  const isHttps = url.protocol === 'https:';
  return new Promise<IncomingMessage>((resolve, reject) => {
    let settled = false;
    const fail = (e: ImportRefusal) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      req.destroy();
      reject(e);
    };
    const req = (isHttps ? https : http).request(
      {
        method: 'GET',
        protocol: url.protocol,
        hostname: host,
        port: url.port === '' ? (isHttps ? 443 : 80) : Number(url.port),
        path: `${url.pathname}${url.search}`,
        // identity: the sizes counted are the file's own, not a compressed transfer's.
        headers: {
          host: url.host,
          accept: opts.accept ?? '*/*',
          'accept-encoding': 'identity',
          'user-agent': 'Herald',
        },
        lookup: pinnedLookup(pinned!),
        agent: false,
        ...(isHttps && !isIpLiteral(host) ? { servername: host } : {}),
      },
      (res) => {
        if (settled) return void res.destroy();
        settled = true;
        clearTimeout(timer);
        opts.signal.removeEventListener('abort', onAbort);
        resolve(res);
      },
    );
    let timer = setTimeout(
      () =>
        fail(
          new ImportRefusal(
            'fetch_timeout',
            `${hop}: no connection within ${opts.connectTimeoutMs / 1000} s.`,
          ),
        ),
      opts.connectTimeoutMs,
    );
    req.on('socket', (socket) => {
      socket.once('connect', () => {
        clearTimeout(timer);
        timer = setTimeout(
          () =>
            fail(
              new ImportRefusal(
                'fetch_timeout',
                `${hop}: the server did not answer within ${opts.firstByteTimeoutMs / 1000} s.`,
              ),
            ),
          opts.firstByteTimeoutMs,
        );
      });
    });
    const onAbort = () => fail(timedOut());
    opts.signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', (error) => fail(new ImportRefusal('fetch_failed', `${hop}: ${error.message}.`)));
    req.end();
  });
}

/** The caller's budget ran out (importMedia's 10 s before the file's head arrived, the worker's 4 min). */
const timedOut = () =>
  new ImportRefusal('fetch_timeout', 'The server did not send the file within the time an import has.');

/**
 * GET `raw` under the policy, following redirects (each target checked the same way, at most
 * MAX_REDIRECTS): the last response, whatever its status, and where it came from. Link cards read
 * pages through the same door.
 */
export async function openFollowing(
  raw: string,
  opts: FetchOptions,
): Promise<{ url: URL; response: IncomingMessage }> {
  let url = checkedUrl(raw, opts, 'The URL');
  let res: IncomingMessage;
  for (let hop = 0; ; hop++) {
    const name = hop === 0 ? 'The URL' : `Redirect ${hop}`;
    if (hop > 0) url = checkedUrl(url.href, opts, name);
    res = await get(url, opts, name);
    const status = res.statusCode ?? 0;
    if (!REDIRECTS.has(status)) break;
    res.destroy();
    const location = res.headers.location;
    if (!location) throw new ImportRefusal('fetch_failed', `${name} answered ${status} without a Location.`);
    if (hop === MAX_REDIRECTS)
      throw new ImportRefusal('fetch_failed', `The URL redirects more than ${MAX_REDIRECTS} times.`);
    try {
      url = new URL(location, url);
    } catch {
      throw new ImportRefusal('invalid_url', `${name} redirects to something that is not a URL.`);
    }
  }
  return { url, response: res };
}

/**
 * Opens `raw`, follows redirects under the policy, reads the first bytes and decides the type by
 * them. The caller reads the rest from `chunks` (or closes it).
 */
export async function fetchMedia(raw: string, opts: FetchOptions): Promise<FetchedMedia> {
  const { url, response } = await openFollowing(raw, opts);
  const status = response.statusCode ?? 0;
  if (status < 200 || status > 299) {
    response.destroy();
    throw new ImportRefusal('fetch_failed', `The server answered ${status} for the file.`);
  }
  const declared = Number(response.headers['content-length']);
  const contentLength = Number.isSafeInteger(declared) && declared >= 0 ? declared : null;
  if (contentLength !== null && contentLength > LARGEST_MEDIA_BYTES) {
    response.destroy();
    throw new ImportRefusal(
      'media_too_large',
      `The file is ${size(contentLength)}; no media type Herald accepts is larger than ${size(LARGEST_MEDIA_BYTES)}.`,
    );
  }
  return readBody(response, url, contentLength, opts);
}

async function readBody(
  response: IncomingMessage,
  url: URL,
  contentLength: number | null,
  opts: FetchOptions,
): Promise<FetchedMedia> {
  let read = 0;
  let limit = LARGEST_MEDIA_BYTES;
  const close = () => {
    opts.signal.removeEventListener('abort', onAbort);
    response.destroy();
  };
  const onAbort = () => response.destroy(timedOut());
  opts.signal.addEventListener('abort', onAbort, { once: true });
  const iterator = response[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  /** The next chunk, cut at limit + 1: a byte over the limit refuses, and nothing past it is taken. */
  const next = async (): Promise<Uint8Array | null> => {
    let step: IteratorResult<Buffer>;
    try {
      step = await iterator.next();
    } catch (err) {
      close();
      if (err instanceof ImportRefusal) throw err;
      if (opts.signal.aborted) throw timedOut();
      throw new ImportRefusal('fetch_failed', `The download broke off: ${(err as Error).message}.`);
    }
    if (step.done) {
      close();
      return null;
    }
    const chunk = step.value.subarray(0, Math.max(0, limit + 1 - read));
    read += chunk.length;
    if (read > limit) {
      close();
      throw tooLarge(limit);
    }
    return chunk;
  };
  const tooLarge = (max: number) =>
    new ImportRefusal('media_too_large', `The file is larger than ${size(max)}, the limit for its type.`);

  // The head: enough bytes for every magic number (or the whole file, when shorter). A slow server
  // need not send 64 KiB first: once 4 KiB prove an accepted type, reading the head stops.
  const parts: Uint8Array[] = [];
  let headBytes = 0;
  while (headBytes < HEAD_BYTES) {
    const chunk = await next();
    if (!chunk) break;
    parts.push(chunk);
    headBytes += chunk.length;
    if (headBytes >= EARLY_SNIFF_BYTES) {
      const early = sniff(Buffer.concat(parts));
      if (early && isAllowed(early)) break;
    }
  }
  const head = Buffer.concat(parts);
  const sniffed = sniff(head.subarray(0, HEAD_BYTES));
  if (!sniffed || !isAllowed(sniffed)) {
    close();
    const looksHtml = /^\s*(<!doctype html|<html|<head|<body|<\?xml)/i.test(
      head.subarray(0, 512).toString('latin1'),
    );
    throw new ImportRefusal(
      'unsupported_media_type',
      looksHtml
        ? 'The URL answers a web page, not a media file: link the image, video or audio file itself.'
        : sniffed
          ? `The file is ${sniffed}, which Herald does not accept. Allowed: ${Object.keys(ALLOWED_MEDIA).join(', ')}.`
          : `The file is not a media type Herald accepts (${Object.keys(ALLOWED_MEDIA).join(', ')}).`,
    );
  }
  limit = opts.maxBytes?.(sniffed) ?? ALLOWED_MEDIA[sniffed].maxBytes;
  if (contentLength !== null && contentLength > limit) {
    close();
    throw new ImportRefusal(
      'media_too_large',
      `The file is ${size(contentLength)}; ${sniffed} files are limited to ${size(limit)}.`,
    );
  }
  if (read > limit) {
    close();
    throw tooLarge(limit);
  }
  async function* chunks(): AsyncGenerator<Uint8Array> {
    if (head.length) yield head;
    for (;;) {
      const chunk = await next();
      if (!chunk) return;
      yield chunk;
    }
  }
  return { url, type: sniffed, contentLength, chunks: chunks(), bytesRead: () => read, close };
}
