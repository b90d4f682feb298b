import { createHash } from 'node:crypto';
import { orOutcomeUnknown, publishedIn } from '../support.ts';
import { type MediaInput, PlatformError, type PublishContext, type PublishResult } from '../types.ts';
import { fileBody } from '../upload.ts';
import { Client } from './client.ts';
import { errorName, xrpcError } from './errors.ts';

// Posts are `app.bsky.feed.post` records written with com.atproto.repo.createRecord under a record
// key WE choose (a TID, saved in the checkpoint before the write). A retry or a reconcile therefore
// asks about one exact record (com.atproto.repo.getRecord) instead of guessing from timelines, and a
// second createRecord for the same delivery cannot make a second post: the key is taken. Each part
// of a thread has its own key (the idempotency key names the part). A reply carries strong refs to
// the root and the parent, so publish hands back each record's cid (`ref`) for the parts after it.

const COLLECTION = 'app.bsky.feed.post';
const MAX_IMAGE_BYTES = 1_000_000; // app.bsky.embed.images#image maxSize
const MAX_VIDEO_BYTES = 100_000_000; // app.bsky.embed.video maxSize

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

export async function facetsFor(
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
    if (item.sizeBytes > limit) {
      throw new PlatformError(
        'media_error',
        `bluesky: ${item.filename} is ${item.sizeBytes} bytes; Bluesky accepts ${item.type}s up to ${limit}`,
        {
          retryable: false,
        },
      );
    }
    const res = await client.ok<{ blob: BlobRef }>('com.atproto.repo.uploadBlob', {
      method: 'POST',
      raw: fileBody(item),
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

/**
 * A link card (ctx.linkCard, read by the worker): app.bsky.embed.external {external: {uri, title,
 * description, thumb?}}, the thumb a blob of image/* ≤ 1,000,000 bytes (lexicons/app/bsky/embed/
 * external.json). A thumb the PDS will not take leaves a card without one: the card never fails the post.
 */
async function externalEmbed(
  client: Client,
  card: NonNullable<PublishContext['linkCard']>,
): Promise<Record<string, unknown>> {
  let thumb: BlobRef | undefined;
  const image = card.image;
  if (image && image.bytes.length <= MAX_IMAGE_BYTES && image.contentType.startsWith('image/')) {
    const bytes = image.bytes;
    try {
      const res = await client.ok<{ blob: BlobRef }>('com.atproto.repo.uploadBlob', {
        method: 'POST',
        raw: {
          length: bytes.length,
          contentType: image.contentType,
          open: () =>
            new ReadableStream<Uint8Array>({
              start(c) {
                c.enqueue(bytes);
                c.close();
              },
            }),
        },
        media: true,
      });
      thumb = res.blob;
    } catch (err) {
      // A refused image (its size, its type): the card goes without it. A session, a rate limit or
      // a server error is the delivery's to retry (nothing is posted yet).
      if (!(err instanceof PlatformError) || err.category !== 'media_error') throw err;
    }
  }
  return {
    $type: 'app.bsky.embed.external',
    external: {
      uri: card.url,
      title: card.title,
      description: card.description,
      ...(thumb ? { thumb } : {}),
    },
  };
}

/** The record at our key, or null when the PDS says there is none. */
export async function findRecord(client: Client, did: string, rkey: string): Promise<StoredRecord | null> {
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

export async function publish(ctx: PublishContext): Promise<PublishResult> {
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
  const done = (rec: StoredRecord): PublishResult => ({
    externalId: atUri(session.did, rkey),
    url: permalink(handle, rkey),
    ...(rec.cid ? { ref: { cid: rec.cid } } : {}),
  });

  // A previous attempt may already have written the record (it timed out, or the worker retried).
  if (ctx.checkpoint?.rkey) {
    const existing = await findRecord(client, session.did, rkey);
    if (existing) return done(existing);
  }
  const reply = replyRef(ctx);

  const blobs = await uploadBlobs(client, ctx.media);
  const facets = await facetsFor(ctx.text, resolve);
  const langs = Array.isArray(ctx.options.langs) ? (ctx.options.langs as string[]) : undefined;
  // An embed is one thing: media, or else the card (the worker reads none for a post with media).
  const embed = embedFor(blobs) ?? (ctx.linkCard ? await externalEmbed(client, ctx.linkCard) : undefined);
  const record: Record<string, unknown> = {
    $type: COLLECTION,
    text: ctx.text,
    createdAt: new Date().toISOString(),
    ...(langs?.length ? { langs } : {}),
    ...(facets.length ? { facets } : {}),
    ...(embed ? { embed } : {}),
    ...(reply ? { reply } : {}),
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
      if (existing) return done(existing);
    }
    throw err;
  }
  return { externalId: res.body.uri, url: permalink(handle, rkey), ref: { cid: res.body.cid } };
}

/**
 * A thread item's or comment's `reply` (app.bsky.feed.post#replyRef): strong refs `{uri, cid}` to
 * the thread's root and to the part it answers; the cids are those their createRecord returned.
 */
function replyRef(ctx: PublishContext): Record<string, unknown> | undefined {
  if (!ctx.replyTo) return undefined;
  const strong = (p: { externalId: string; ref?: Record<string, unknown> | null }) => {
    const cid = p.ref?.cid;
    if (typeof cid !== 'string' || !cid)
      throw new PlatformError('system', `bluesky: no cid recorded for ${p.externalId} to reply to`, {
        retryable: false,
      });
    return { uri: p.externalId, cid };
  };
  return { root: strong(ctx.replyTo.root), parent: strong(ctx.replyTo.parent) };
}

export async function reconcile(ctx: PublishContext): Promise<PublishResult | null> {
  const cp = ctx.checkpoint;
  const channelHandle = ctx.channel.handle.replace(/^@/, '');
  const done = publishedIn(cp, (id) => permalink(channelHandle, String(cp?.rkey ?? id.split('/').pop())));
  if (done) return done;
  // No key saved: the attempt died before createRecord, so nothing was written.
  if (typeof cp?.rkey !== 'string') return null;
  const rkey = cp.rkey;
  const client = new Client(ctx.credentials);
  return orOutcomeUnknown('bluesky', `record ${rkey} could not be looked up`, async () => {
    const session = await client.session();
    const did = typeof cp.did === 'string' ? cp.did : session.did;
    const found = await findRecord(client, did, rkey);
    if (!found) return null;
    return {
      externalId: found.uri,
      url: permalink(session.handle || channelHandle, rkey),
      ...(found.cid ? { ref: { cid: found.cid } } : {}),
    };
  });
}
