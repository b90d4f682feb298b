/**
 * Reading a link card's page and image (core/link-cards.ts). The page is someone else's server, so
 * it goes through the same door as a media import (media-fetch.ts openFollowing): the host resolved
 * once, every answer checked, every redirect's target checked, at most MAX_REDIRECTS hops, https only
 * in AWS. Only an HTML page is read, at most PAGE_MAX_BYTES of it (reading stops there: a body of
 * any size costs that much at most) and within PAGE_BUDGET_MS in all. The tags come from
 * htmlparser2's streaming parser, fed as the bytes arrive; it stops at the page's body once a title
 * is known. The image is fetched like an imported file (its bytes decide its type), up to
 * IMAGE_MAX_BYTES.
 */
import type { IncomingMessage } from 'node:http';
import { TextDecoder } from 'node:util';
import type { Parser } from 'htmlparser2';
import type { CidrList } from '#core/address-policy';
import type { AllowedContentType } from '#core/media-types';
import { type FetchOptions, fetchMedia, ImportRefusal, openFollowing } from './media-fetch.ts';
import type { Resolver } from './webhooks/safe-http.ts';

/** How much of a page is read: the head of any page there is to read is far smaller. */
export const PAGE_MAX_BYTES = 1024 * 1024;
/** The whole page read, connection to last byte, redirects included. */
export const PAGE_BUDGET_MS = 5_000;
/** The largest card image fetched (it is fitted to the platform's limit after). */
export const IMAGE_MAX_BYTES = 5 * 1024 * 1024;
/** The whole image fetch. */
export const IMAGE_BUDGET_MS = 5_000;
/** Bluesky and LinkedIn cards show a line or two: longer text only makes the record bigger. */
export const TITLE_MAX_CHARS = 300;
export const DESCRIPTION_MAX_CHARS = 1000;

/** Why a page gives no card; `message` is a sentence for the delivery's warning. */
export class LinkCardUnavailable extends Error {
  override readonly name = 'LinkCardUnavailable';
}

export interface CardReadOptions {
  policy: { requireHttps: boolean; allow: CidrList };
  /** Tests: shorter budgets, a smaller page limit, a resolver. */
  budgetMs?: number;
  maxBytes?: number;
  resolver?: Resolver;
}

/** What a page says about itself, its image URL resolved against where the page came from. */
export interface PageMeta {
  /** The page's URL after redirects. */
  url: string;
  title: string;
  description: string;
  imageUrl: string | null;
  /** Bytes of the body taken (never more than the limit). */
  bytesRead: number;
}

const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml']);
const s = (ms: number) => `${Math.round(ms / 100) / 10} s`;

function fetchOptions(
  o: CardReadOptions,
  budgetMs: number,
  signal: AbortSignal,
  accept: string,
): FetchOptions {
  return {
    policy: o.policy,
    connectTimeoutMs: budgetMs,
    firstByteTimeoutMs: budgetMs,
    signal,
    accept,
    ...(o.resolver ? { resolver: o.resolver } : {}),
  };
}

/** A refusal of the shared fetch, reworded where it speaks of an import. */
function unavailable(err: unknown, what: string, budgetMs: number, signal: AbortSignal): LinkCardUnavailable {
  // The budget ran out (whatever broke first because of it): said as such.
  if (
    signal.aborted ||
    (err instanceof ImportRefusal && err.code === 'fetch_timeout' && /import/.test(err.message))
  )
    return new LinkCardUnavailable(`${what} was not read within ${s(budgetMs)}.`);
  if (err instanceof LinkCardUnavailable) return err;
  if (err instanceof ImportRefusal) return new LinkCardUnavailable(err.message);
  return new LinkCardUnavailable(`${what} could not be read: ${(err as Error).message}.`);
}

/** Reads the page at `raw` for its card tags; throws LinkCardUnavailable with the reason. */
export async function readPageMeta(raw: string, o: CardReadOptions): Promise<PageMeta> {
  const budgetMs = o.budgetMs ?? PAGE_BUDGET_MS;
  const signal = AbortSignal.timeout(budgetMs);
  const accept = 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.1';
  try {
    const { url, response } = await openFollowing(raw, fetchOptions(o, budgetMs, signal, accept));
    return await readHtml(response, url, o.maxBytes ?? PAGE_MAX_BYTES, signal);
  } catch (err) {
    throw unavailable(err, 'The page', budgetMs, signal);
  }
}

async function readHtml(
  res: IncomingMessage,
  url: URL,
  maxBytes: number,
  signal: AbortSignal,
): Promise<PageMeta> {
  const onAbort = () => res.destroy(new Error('the time a card has ran out'));
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const status = res.statusCode ?? 0;
    if (status < 200 || status > 299) throw new LinkCardUnavailable(`The page answered HTTP ${status}.`);
    const declared = String(res.headers['content-type'] ?? '');
    const mediaType = declared.split(';')[0]?.trim().toLowerCase() ?? '';
    if (mediaType && !HTML_TYPES.has(mediaType))
      throw new LinkCardUnavailable(`The page is ${mediaType}, not an HTML page.`);
    const reader = await CardTagReader.open(url);
    let decoder: TextDecoder | null = null;
    let pending: Buffer[] = [];
    let read = 0;
    for await (const chunk of res as AsyncIterable<Buffer>) {
      const part = chunk.subarray(0, maxBytes - read);
      read += part.length;
      if (!decoder) {
        // The charset is decided on the first 1024 bytes (the HTML spec's prescan), then kept.
        pending.push(part);
        const head = Buffer.concat(pending);
        if (head.length < 1024 && read < maxBytes) continue;
        if (!mediaType && !looksHtml(head)) throw new LinkCardUnavailable('The page is not an HTML page.');
        decoder = decoderFor(charsetOf(declared, head));
        reader.write(decoder.decode(head, { stream: true }));
        pending = [];
      } else reader.write(decoder.decode(part, { stream: true }));
      if (reader.done || read >= maxBytes) break;
    }
    if (!decoder) {
      const head = Buffer.concat(pending);
      if (!mediaType && !looksHtml(head)) throw new LinkCardUnavailable('The page is not an HTML page.');
      decoder = decoderFor(charsetOf(declared, head));
      reader.write(decoder.decode(head, { stream: true }));
    }
    reader.write(decoder.decode());
    const meta = reader.end();
    if (!meta.title && !meta.description)
      throw new LinkCardUnavailable(
        read >= maxBytes
          ? `The page has no Open Graph, Twitter or <title> tags in its first ${Math.round(maxBytes / 1024)} KiB.`
          : 'The page has no Open Graph, Twitter or <title> tags.',
      );
    return { url: url.href, ...meta, bytesRead: read };
  } finally {
    signal.removeEventListener('abort', onAbort);
    res.destroy();
  }
}

const looksHtml = (head: Buffer) =>
  /^(\uFEFF)?\s*(<!--[\s\S]*?-->\s*)*<(!doctype html|html|head|meta|title|body)/i.test(
    head.subarray(0, 1024).toString('latin1'),
  );

/**
 * The page's encoding: a byte order mark, else the Content-Type's charset, else a <meta> in the
 * first 1024 bytes (the HTML spec's order), else UTF-8 (what pages without a label are nowadays).
 */
export function charsetOf(contentType: string, head: Uint8Array): string {
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return 'utf-8';
  if (head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
  if (head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
  const fromHeader = /charset\s*=\s*["']?([\w.:-]+)/i.exec(contentType)?.[1];
  if (fromHeader && known(fromHeader)) return fromHeader.toLowerCase();
  const ascii = Buffer.from(head.subarray(0, 1024)).toString('latin1');
  for (const m of ascii.matchAll(/<meta\b[^>]*>/gi)) {
    const tag = m[0];
    const direct = /\bcharset\s*=\s*["']?([\w.:-]+)/i.exec(tag)?.[1];
    if (direct && known(direct)) return utf16AsUtf8(direct);
  }
  return 'utf-8';
}

const known = (label: string) => {
  try {
    new TextDecoder(label);
    return true;
  } catch {
    return false;
  }
};
/** A <meta> cannot really say UTF-16 (it would not be readable as ASCII): the spec reads UTF-8. */
const utf16AsUtf8 = (label: string) => (/^utf-16/i.test(label) ? 'utf-8' : label.toLowerCase());
const decoderFor = (label: string) => new TextDecoder(label);

/**
 * The card tags of a page, fed as text arrives: og:* first, then twitter:*, then <title> and
 * <meta name="description">. The first value of each wins (og:image may repeat: the first is the
 * page's main image). `done` once the body opens with a title known: the tags are in the head.
 */
export class CardTagReader {
  private readonly meta = new Map<string, string>();
  private title = '';
  private inTitle = false;
  private titleSeen = false;
  private depthInSvg = 0;
  private readonly parser: Parser;
  done = false;

  /** A reader for the page at `base`; the parser is loaded on the first card (not at the worker's init). */
  static async open(base: URL): Promise<CardTagReader> {
    const { Parser } = await import('./html-parser.ts');
    return new CardTagReader(base, Parser);
  }

  private constructor(
    private readonly base: URL,
    ParserClass: typeof Parser,
  ) {
    this.parser = new ParserClass(
      {
        onopentag: (name, attrs) => {
          if (name === 'svg') this.depthInSvg++;
          if (name === 'title' && !this.titleSeen && this.depthInSvg === 0) this.inTitle = true;
          if (name === 'meta') {
            const key = (attrs.property ?? attrs.name ?? '').trim().toLowerCase();
            const value = attrs.content;
            if (key && value !== undefined && !this.meta.has(key)) this.meta.set(key, value);
          }
          if (
            name === 'body' &&
            (this.meta.has('og:title') || this.meta.has('twitter:title') || this.titleSeen)
          )
            this.done = true;
        },
        ontext: (text) => {
          if (this.inTitle) this.title += text;
        },
        onclosetag: (name) => {
          if (name === 'svg' && this.depthInSvg > 0) this.depthInSvg--;
          if (name === 'title' && this.inTitle) {
            this.inTitle = false;
            this.titleSeen = true;
          }
        },
      },
      { decodeEntities: true },
    );
  }

  write(text: string): void {
    if (text && !this.done) this.parser.write(text);
  }

  end(): { title: string; description: string; imageUrl: string | null } {
    this.parser.end();
    const pick = (...keys: string[]) => {
      for (const k of keys) {
        const v = clean(this.meta.get(k) ?? '');
        if (v) return v;
      }
      return '';
    };
    const title = pick('og:title', 'twitter:title') || clean(this.title);
    const description = pick('og:description', 'twitter:description', 'description');
    let imageUrl: string | null = null;
    for (const k of [
      'og:image:secure_url',
      'og:image',
      'og:image:url',
      'twitter:image',
      'twitter:image:src',
    ]) {
      const v = this.meta.get(k)?.trim();
      if (!v) continue;
      try {
        const u = new URL(v, this.base);
        if (u.protocol === 'https:' || u.protocol === 'http:') {
          imageUrl = u.href;
          break;
        }
      } catch {
        // not a URL: the next candidate
      }
    }
    return {
      title: clamp(title, TITLE_MAX_CHARS),
      description: clamp(description, DESCRIPTION_MAX_CHARS),
      imageUrl,
    };
  }
}

const clean = (v: string) => v.replace(/\s+/gu, ' ').trim();

/** At most `max` characters (code points), cut at a word where one is near, with an ellipsis. */
export function clamp(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  const cut = chars.slice(0, max - 1).join('');
  const space = cut.lastIndexOf(' ');
  return `${(space > max * 0.8 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/** The card's image: fetched under the policy, typed by its bytes; throws LinkCardUnavailable. */
export async function readCardImage(
  raw: string,
  o: CardReadOptions & { maxImageBytes?: number },
): Promise<{ bytes: Uint8Array; contentType: AllowedContentType }> {
  const budgetMs = o.budgetMs ?? IMAGE_BUDGET_MS;
  const signal = AbortSignal.timeout(budgetMs);
  const limit = o.maxImageBytes ?? IMAGE_MAX_BYTES;
  try {
    const fetched = await fetchMedia(raw, {
      ...fetchOptions(o, budgetMs, signal, 'image/*'),
      maxBytes: () => limit,
    });
    if (!fetched.type.startsWith('image/')) {
      fetched.close();
      throw new LinkCardUnavailable(`The card's image is ${fetched.type}, not an image.`);
    }
    const parts: Uint8Array[] = [];
    for await (const c of fetched.chunks) parts.push(c);
    return { bytes: new Uint8Array(Buffer.concat(parts)), contentType: fetched.type };
  } catch (err) {
    throw unavailable(err, "The card's image", budgetMs, signal);
  }
}
