import { createHash } from 'node:crypto';
import { type HttpResponse, json, request, retryAfterSeconds } from './http.ts';
import {
  type Connector,
  type Credentials,
  type Engagement,
  type MediaInput,
  PlatformError,
  type PublishContext,
  type PublishResult,
} from './types.ts';
import { userOriginFetch } from './user-origin.ts';

// Bluesky through the AT Protocol (XRPC) on the account's PDS, the origin in the channel credentials
// (`service`, default https://bsky.social). The channel holds an app password, not tokens: we open a
// session (com.atproto.server.createSession), keep it in memory for the container's life because
// createSession is tightly rate limited, refresh it (refreshSession) once when the PDS says the access
// token expired, and fall back to a new session when the refresh token is gone too.
//
// Posts are `app.bsky.feed.post` records written with com.atproto.repo.createRecord under a record
// key WE choose (a TID, saved in the checkpoint before the write). A retry or a reconcile therefore
// asks about one exact record (com.atproto.repo.getRecord) instead of guessing from timelines, and a
// second createRecord for the same delivery cannot make a second post: the key is taken.

const COLLECTION = 'app.bsky.feed.post';
const MAX_IMAGE_BYTES = 1_000_000; // app.bsky.embed.images#image maxSize
const MAX_VIDEO_BYTES = 100_000_000; // app.bsky.embed.video maxSize
const TOKEN_ERRORS = new Set(['ExpiredToken', 'InvalidToken']);
const AUTH_ERRORS = new Set([
  'ExpiredToken',
  'InvalidToken',
  'AuthenticationRequired',
  'AuthFactorTokenRequired',
  'AccountTakedown',
  'AccountDeactivated',
]);

interface XrpcErrorBody {
  error?: string;
  message?: string;
}

interface SessionData {
  did: string;
  handle: string;
  accessJwt: string;
  refreshJwt: string;
}

interface BlobRef {
  $type: 'blob';
  ref: { $link: string };
  mimeType: string;
  size: number;
}

interface StoredRecord {
  uri: string;
  cid?: string;
  value?: Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------
// Errors: XRPC answers `{"error": "<Name>", "message": "…"}`; the name is what tells them apart.

export function xrpcError(res: HttpResponse, nsid: string, media = false): PlatformError {
  const body = (typeof res.body === 'object' && res.body ? res.body : {}) as XrpcErrorBody;
  const name = body.error ?? '';
  const msg = `bluesky: ${nsid} ${res.status} ${name}${body.message ? `: ${body.message}` : ''}`.slice(
    0,
    500,
  );
  const status = res.status;
  if (status === 429 || name === 'RateLimitExceeded') {
    return new PlatformError('rate_limited', msg, {
      status,
      retryAfterSeconds: retryAfterSeconds(res.headers, 'ratelimit-reset'),
    });
  }
  if (status === 401 || AUTH_ERRORS.has(name))
    return new PlatformError('auth_expired', msg, { status, retryable: false });
  if (name === 'BlobTooLarge' || status === 413)
    return new PlatformError('media_error', msg, { status, retryable: false });
  if (status >= 500)
    return new PlatformError('system', msg, { status, retryAfterSeconds: retryAfterSeconds(res.headers) });
  if (status === 403) return new PlatformError('platform_rejected', msg, { status, retryable: false });
  return new PlatformError(media ? 'media_error' : 'user_content', msg, { status, retryable: false });
}

const errorName = (res: HttpResponse) =>
  (typeof res.body === 'object' && res.body ? (res.body as XrpcErrorBody).error : undefined) ?? '';

// ---------------------------------------------------------------------------------------------
// Sessions

const sessions = new Map<string, SessionData>();

function credentialsOf(creds: Credentials) {
  const service = String(creds.service ?? 'https://bsky.social').replace(/\/+$/, '');
  const identifier = String(creds.identifier ?? '');
  const password = String(creds.app_password ?? '');
  if (!identifier || !password)
    throw new PlatformError('auth_expired', 'bluesky: channel has no identifier/app_password', {
      retryable: false,
    });
  return { service, identifier, password };
}

export class Client {
  private readonly service: string;
  private readonly identifier: string;
  private readonly password: string;
  private readonly key: string;

  constructor(creds: Credentials) {
    const c = credentialsOf(creds);
    this.service = c.service;
    this.identifier = c.identifier;
    this.password = c.password;
    this.key = `${c.service}|${c.identifier}`;
  }

  async session(): Promise<SessionData> {
    return sessions.get(this.key) ?? this.login();
  }

  /** Ends the session (com.atproto.server.deleteSession with the refresh token), if one is open. */
  async logout(): Promise<void> {
    const session = sessions.get(this.key);
    sessions.delete(this.key);
    if (!session) return;
    await request('bluesky', `${this.service}/xrpc/com.atproto.server.deleteSession`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session.refreshJwt}` },
      fetch: userOriginFetch(),
    });
  }

  async login(): Promise<SessionData> {
    sessions.delete(this.key);
    const nsid = 'com.atproto.server.createSession';
    const res = await request<SessionData>('bluesky', `${this.service}/xrpc/${nsid}`, {
      method: 'POST',
      ...json({ identifier: this.identifier, password: this.password }),
      fetch: userOriginFetch(),
    });
    if (res.status !== 200) throw xrpcError(res, nsid);
    sessions.set(this.key, res.body);
    return res.body;
  }

  /** refreshSession once; when the refresh token is dead too, a fresh login with the app password. */
  private async renew(stale: SessionData): Promise<SessionData> {
    const nsid = 'com.atproto.server.refreshSession';
    const res = await request<SessionData>('bluesky', `${this.service}/xrpc/${nsid}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stale.refreshJwt}` },
      fetch: userOriginFetch(),
    });
    if (res.status === 200 && res.body.accessJwt) {
      const next = { ...stale, ...res.body };
      sessions.set(this.key, next);
      return next;
    }
    if (res.status === 429 || res.status >= 500) throw xrpcError(res, nsid);
    return this.login();
  }

  /** One XRPC call with the session's access token; an expired/invalid token is renewed once. */
  async call<T>(
    nsid: string,
    init: {
      method?: 'GET' | 'POST';
      query?: Record<string, string | string[]>;
      body?: unknown;
      raw?: { bytes: Uint8Array; contentType: string };
      media?: boolean;
    },
  ): Promise<HttpResponse<T>> {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(init.query ?? {})) for (const item of [v].flat()) qs.append(k, item);
    const url = `${this.service}/xrpc/${nsid}${qs.size ? `?${qs}` : ''}`;
    let session = await this.session();
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = { authorization: `Bearer ${session.accessJwt}` };
      let body: RequestInit['body'];
      if (init.raw) {
        headers['content-type'] = init.raw.contentType;
        body = init.raw.bytes;
      } else if (init.body !== undefined) {
        headers['content-type'] = 'application/json';
        body = JSON.stringify(init.body);
      }
      const res = await request<T>('bluesky', url, {
        method: init.method ?? 'GET',
        headers,
        body,
        timeoutMs: init.raw ? 120_000 : undefined,
        fetch: userOriginFetch(),
      });
      if (attempt === 0 && TOKEN_ERRORS.has(errorName(res))) {
        session = await this.renew(session);
        continue;
      }
      return res;
    }
  }

  async ok<T>(nsid: string, init: Parameters<Client['call']>[1]): Promise<T> {
    const res = await this.call<T>(nsid, init);
    if (res.status !== 200) throw xrpcError(res, nsid, init.media);
    return res.body;
  }
}

// ---------------------------------------------------------------------------------------------
// Record keys: TIDs (13 chars, base32-sortable; 53 bits of microseconds then a 10-bit clock id).
// The timestamp is the moment the delivery first needed a key; the clock id comes from the
// idempotency key, so two deliveries created in the same microsecond still get different keys.

const S32 = '234567abcdefghijklmnopqrstuvwxyz';

export function tid(micros: number, clockId: number): string {
  let v = (BigInt(Math.floor(micros)) << 10n) | BigInt(clockId & 1023);
  let out = '';
  for (let i = 0; i < 13; i++) {
    out = S32[Number(v & 31n)] + out;
    v >>= 5n;
  }
  return out;
}

function rkeyFor(idempotencyKey: string, now = Date.now()): string {
  const clock = createHash('sha256').update(idempotencyKey).digest().readUInt16BE(0) & 1023;
  return tid(now * 1000, clock);
}

// ---------------------------------------------------------------------------------------------
// Rich text: links, mentions and hashtags as facets with UTF-8 byte offsets (docs.bsky.app,
// "Links, mentions, and rich text"). Mentions whose handle does not resolve are left as plain text.

interface Facet {
  index: { byteStart: number; byteEnd: number };
  features: Array<Record<string, string>>;
}

const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');
const TRAILING = /[.,;:!?'"]+$/u;

function span(text: string, start: number, match: string) {
  return { byteStart: utf8(text.slice(0, start)), byteEnd: utf8(text.slice(0, start + match.length)) };
}

function trimUrl(url: string): string {
  let u = url.replace(TRAILING, '');
  // A closing parenthesis belongs to the URL only when it opened one: "(see https://x.y/a)".
  while (u.endsWith(')') && (u.match(/\(/g)?.length ?? 0) < (u.match(/\)/g)?.length ?? 0))
    u = u.slice(0, -1).replace(TRAILING, '');
  return u;
}

async function facetsFor(
  text: string,
  resolve: (handle: string) => Promise<string | null>,
): Promise<Facet[]> {
  const facets: Facet[] = [];
  for (const m of text.matchAll(/(^|[\s(])(https?:\/\/[^\s<>"]+)/gu)) {
    const url = trimUrl(m[2] ?? '');
    const start = (m.index ?? 0) + (m[1] ?? '').length;
    facets.push({
      index: span(text, start, url),
      features: [{ $type: 'app.bsky.richtext.facet#link', uri: url }],
    });
  }
  const handleRe =
    /(^|[\s(])@([a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+)/gu;
  for (const m of text.matchAll(handleRe)) {
    const handle = (m[2] ?? '').replace(/\.+$/, '');
    if (!/\.[a-zA-Z][a-zA-Z0-9-]*$/.test(handle)) continue;
    const did = await resolve(handle.toLowerCase());
    if (!did) continue;
    const start = (m.index ?? 0) + (m[1] ?? '').length;
    facets.push({
      index: span(text, start, `@${handle}`),
      features: [{ $type: 'app.bsky.richtext.facet#mention', did }],
    });
  }
  for (const m of text.matchAll(/(^|\s)[#＃]([^\s#＃]+)/gu)) {
    const tag = (m[2] ?? '').replace(/[\p{P}]+$/u, '');
    if (!tag || /^\d+$/.test(tag) || [...tag].length > 64) continue;
    const start = (m.index ?? 0) + (m[1] ?? '').length;
    facets.push({
      index: span(text, start, `#${tag}`),
      features: [{ $type: 'app.bsky.richtext.facet#tag', tag }],
    });
  }
  return facets.sort((a, b) => a.index.byteStart - b.index.byteStart);
}

// ---------------------------------------------------------------------------------------------

function permalink(handle: string, rkey: string) {
  return `https://bsky.app/profile/${handle}/post/${rkey}`;
}

const atUri = (did: string, rkey: string) => `at://${did}/${COLLECTION}/${rkey}`;

async function uploadBlobs(
  client: Client,
  media: MediaInput[],
): Promise<Array<{ blob: BlobRef; item: MediaInput }>> {
  const out: Array<{ blob: BlobRef; item: MediaInput }> = [];
  for (const item of media) {
    const limit = item.type === 'video' ? MAX_VIDEO_BYTES : MAX_IMAGE_BYTES;
    if (item.type === 'audio')
      throw new PlatformError('media_error', 'bluesky: audio attachments are not supported', {
        retryable: false,
      });
    const bytes = await item.read();
    if (bytes.byteLength > limit) {
      throw new PlatformError(
        'media_error',
        `bluesky: ${item.filename} is ${bytes.byteLength} bytes; Bluesky accepts ${item.type}s up to ${limit}`,
        {
          retryable: false,
        },
      );
    }
    const res = await client.ok<{ blob: BlobRef }>('com.atproto.repo.uploadBlob', {
      method: 'POST',
      raw: { bytes, contentType: item.contentType },
      media: true,
    });
    out.push({ blob: res.blob, item });
  }
  return out;
}

function embedFor(blobs: Array<{ blob: BlobRef; item: MediaInput }>): Record<string, unknown> | undefined {
  if (blobs.length === 0) return undefined;
  const video = blobs.find((b) => b.item.type === 'video');
  if (video) {
    return {
      $type: 'app.bsky.embed.video',
      video: video.blob,
      ...(video.item.alt ? { alt: video.item.alt } : {}),
    };
  }
  return {
    $type: 'app.bsky.embed.images',
    images: blobs.map((b) => ({ alt: b.item.alt ?? '', image: b.blob })),
  };
}

/** The record at our key, or null when the PDS says there is none. */
async function findRecord(client: Client, did: string, rkey: string): Promise<StoredRecord | null> {
  const nsid = 'com.atproto.repo.getRecord';
  const res = await client.call<StoredRecord>(nsid, { query: { repo: did, collection: COLLECTION, rkey } });
  if (res.status === 200) return res.body;
  const name = errorName(res);
  if (
    res.status === 404 ||
    name === 'RecordNotFound' ||
    (res.status === 400 && /could not locate record/i.test(JSON.stringify(res.body)))
  ) {
    return null;
  }
  throw xrpcError(res, nsid);
}

async function saveQuietly(ctx: PublishContext, checkpoint: Record<string, unknown>) {
  try {
    await ctx.saveCheckpoint(checkpoint);
  } catch {
    // The post exists; failing to note it must not turn a success into a failure.
  }
}

async function publish(ctx: PublishContext): Promise<PublishResult> {
  const client = new Client(ctx.credentials);
  const session = await client.session();
  const resolved = new Map<string, string | null>();
  const resolve = async (handle: string) => {
    if (!resolved.has(handle)) {
      const res = await client.call<{ did?: string }>('com.atproto.identity.resolveHandle', {
        query: { handle },
      });
      resolved.set(handle, res.status === 200 && res.body.did ? res.body.did : null);
    }
    return resolved.get(handle) ?? null;
  };

  const rkey = typeof ctx.checkpoint?.rkey === 'string' ? ctx.checkpoint.rkey : rkeyFor(ctx.idempotencyKey);
  const handle = session.handle || ctx.channel.handle.replace(/^@/, '');
  const done = (): PublishResult => ({ externalId: atUri(session.did, rkey), url: permalink(handle, rkey) });

  // A previous attempt may already have written the record (it timed out, or the worker retried).
  if (ctx.checkpoint?.rkey && (await findRecord(client, session.did, rkey))) return done();

  const blobs = await uploadBlobs(client, ctx.media);
  const facets = await facetsFor(ctx.text, resolve);
  const langs = Array.isArray(ctx.options.langs) ? (ctx.options.langs as string[]) : undefined;
  const embed = embedFor(blobs);
  const record: Record<string, unknown> = {
    $type: COLLECTION,
    text: ctx.text,
    createdAt: new Date().toISOString(),
    ...(langs?.length ? { langs } : {}),
    ...(facets.length ? { facets } : {}),
    ...(embed ? { embed } : {}),
  };

  await ctx.saveCheckpoint({ stage: 'posting', rkey, did: session.did, sentAt: new Date().toISOString() });
  const nsid = 'com.atproto.repo.createRecord';
  const res = await client.call<{ uri: string; cid: string }>(nsid, {
    method: 'POST',
    body: { repo: session.did, collection: COLLECTION, rkey, record },
  });
  if (res.status !== 200) {
    const err = xrpcError(res, nsid);
    // The key already taken (the reference PDS answers 500 for that today; newer ones a named error)
    // or an answer lost to a server error: the record may be there. Look before failing.
    if (err.category === 'system' || res.status === 409 || /exist/i.test(errorName(res))) {
      const existing = await findRecord(client, session.did, rkey).catch(() => null);
      if (existing) {
        await saveQuietly(ctx, { stage: 'published', rkey, did: session.did, externalId: existing.uri });
        return done();
      }
    }
    throw err;
  }
  const result = { externalId: res.body.uri, url: permalink(handle, rkey) };
  await saveQuietly(ctx, {
    stage: 'published',
    rkey,
    did: session.did,
    externalId: result.externalId,
    url: result.url,
  });
  return result;
}

async function reconcile(ctx: PublishContext): Promise<PublishResult | null> {
  const cp = ctx.checkpoint;
  if (cp?.stage === 'published' && typeof cp.externalId === 'string') {
    const rkey = String(cp.rkey ?? cp.externalId.split('/').pop());
    return {
      externalId: cp.externalId,
      url: typeof cp.url === 'string' ? cp.url : permalink(ctx.channel.handle.replace(/^@/, ''), rkey),
    };
  }
  // No key saved: the attempt died before createRecord, so nothing was written.
  if (typeof cp?.rkey !== 'string') return null;
  const client = new Client(ctx.credentials);
  try {
    const session = await client.session();
    const did = typeof cp.did === 'string' ? cp.did : session.did;
    const found = await findRecord(client, did, cp.rkey);
    if (!found) return null;
    return {
      externalId: found.uri,
      url: permalink(session.handle || ctx.channel.handle.replace(/^@/, ''), cp.rkey),
    };
  } catch (err) {
    if (err instanceof PlatformError && (err.category === 'auth_expired' || err.category === 'rate_limited'))
      throw err;
    const detail = err instanceof Error ? err.message : String(err);
    throw new PlatformError(
      'system',
      `bluesky: outcome unknown, record ${cp.rkey} could not be looked up: ${detail}`,
      {
        retryable: err instanceof PlatformError ? err.retryable : false,
      },
    );
  }
}

interface PostView {
  uri: string;
  likeCount?: number;
  repostCount?: number;
  replyCount?: number;
  quoteCount?: number;
}

export const connector: Connector = {
  publish,
  reconcile,
  async metrics(ctx) {
    const client = new Client(ctx.credentials);
    const out: Record<string, Engagement> = {};
    // app.bsky.feed.getPosts takes at most 25 URIs per call; the PDS proxies it to the AppView.
    for (let i = 0; i < ctx.externalIds.length; i += 25) {
      const uris = ctx.externalIds.slice(i, i + 25);
      const body = await client.ok<{ posts: PostView[] }>('app.bsky.feed.getPosts', { query: { uris } });
      for (const p of body.posts ?? []) {
        out[p.uri] = {
          impressions: 0,
          likes: p.likeCount ?? 0,
          comments: p.replyCount ?? 0,
          shares: (p.repostCount ?? 0) + (p.quoteCount ?? 0),
          clicks: 0,
        };
      }
    }
    return out;
  },
};
