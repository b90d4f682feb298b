import { orOutcomeUnknown, publishedIn, searchFrom, sleep } from '../support.ts';
import { type MediaInput, PlatformError, type PublishContext, type PublishResult } from '../types.ts';
import { Auth, ok, type Tweet } from './client.ts';
import { isDuplicate } from './errors.ts';

// X has no idempotency key for POST /2/tweets. Before posting we save a checkpoint; a reconcile
// after it (the worker's, while an earlier attempt may have made the tweet) looks for the tweet
// among the user's own tweets since the earliest such attempt (GET /2/users/:id/tweets) and
// compares text the way X rewrites it (t.co links, entities).
//
// Media uses the v2 media endpoints: images in one POST /2/media/upload (base64 JSON, tweet_image);
// video and GIFs in chunks (POST /2/media/upload/initialize, /{id}/append multipart, /{id}/finalize,
// then GET /2/media/upload?command=STATUS until processing_info.state is succeeded). Alt text goes to
// POST /2/media/metadata.

const CHUNK_BYTES = 4 * 1024 * 1024; // APPEND accepts ≤ 5 MB per segment
const POLL_BUDGET_MS = 180_000;

interface MediaData {
  id: string;
  media_key?: string;
  processing_info?: {
    state: 'pending' | 'in_progress' | 'succeeded' | 'failed';
    check_after_secs?: number;
    error?: { name?: string; message?: string };
  };
}

async function waitForProcessing(auth: Auth, media: MediaData): Promise<void> {
  let info = media.processing_info;
  const started = Date.now();
  while (info && (info.state === 'pending' || info.state === 'in_progress')) {
    if (Date.now() - started > POLL_BUDGET_MS)
      throw new PlatformError('system', `x: media ${media.id} is still processing`, {
        retryAfterSeconds: 60,
      });
    await sleep(Math.min(10_000, Math.max(200, (info.check_after_secs ?? 1) * 1000)));
    const qs = new URLSearchParams({ command: 'STATUS', media_id: media.id });
    const res = await ok<{ data: MediaData }>(auth, 'GET', `/2/media/upload?${qs}`, { media: true });
    info = res.data.processing_info;
  }
  if (info?.state === 'failed') {
    throw new PlatformError(
      'media_error',
      `x: media processing failed: ${info.error?.name ?? ''} ${info.error?.message ?? ''}`.trim(),
      { retryable: false },
    );
  }
}

async function upload(auth: Auth, item: MediaInput): Promise<string> {
  const bytes = await item.read();
  const gif = item.contentType === 'image/gif';
  let id: string;
  if (item.type === 'image' && !gif) {
    const res = await ok<{ data: MediaData }>(auth, 'POST', '/2/media/upload', {
      json: {
        media: Buffer.from(bytes).toString('base64'),
        media_category: 'tweet_image',
      },
      timeoutMs: 120_000,
      media: true,
    });
    id = res.data.id;
    await waitForProcessing(auth, res.data);
  } else if (item.type === 'video' || gif) {
    const init = await ok<{ data: MediaData }>(auth, 'POST', '/2/media/upload/initialize', {
      json: {
        media_type: item.contentType,
        total_bytes: bytes.byteLength,
        media_category: gif ? 'tweet_gif' : 'tweet_video',
      },
      media: true,
    });
    id = init.data.id;
    for (let i = 0, segment = 0; i < bytes.byteLength; i += CHUNK_BYTES, segment++) {
      const form = new FormData();
      form.append('segment_index', String(segment));
      form.append(
        'media',
        new Blob([bytes.subarray(i, i + CHUNK_BYTES)], { type: 'application/octet-stream' }),
        'chunk',
      );
      await ok(auth, 'POST', `/2/media/upload/${encodeURIComponent(id)}/append`, {
        form,
        timeoutMs: 120_000,
        media: true,
      });
    }
    const fin = await ok<{ data: MediaData }>(
      auth,
      'POST',
      `/2/media/upload/${encodeURIComponent(id)}/finalize`,
      { media: true },
    );
    await waitForProcessing(auth, fin.data);
  } else {
    throw new PlatformError('media_error', `x: ${item.type} attachments are not supported`, {
      retryable: false,
    });
  }
  if (item.alt && item.type === 'image') {
    await ok(auth, 'POST', '/2/media/metadata', {
      json: { id, metadata: { alt_text: { text: item.alt.slice(0, 1000) } } },
      media: true,
    });
  }
  return id;
}

// Finding a tweet an earlier attempt made

const URL_RE = /https?:\/\/[^\s]+/gu;

/** X returns text with every link as t.co, a media link appended, and &, <, > escaped. */
export function comparableText(text: string): string {
  return text
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(URL_RE, '\uFFFC')
    .replace(/[\s\uFFFC]+$/u, '')
    .replace(/\s+/gu, ' ')
    .trim();
}

function permalink(ctx: { channel: { handle: string } }, id: string) {
  const handle = ctx.channel.handle.replace(/^@/, '');
  return handle ? `https://x.com/${handle}/status/${id}` : `https://x.com/i/web/status/${id}`;
}

async function lookup(auth: Auth, ctx: PublishContext): Promise<PublishResult | null> {
  if (!auth.userId)
    throw new PlatformError('system', 'x: channel has no account_id to look tweets up', { retryable: false });
  const start = new Date(searchFrom(ctx, ctx.checkpoint?.sentAt, 60_000))
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z');
  const want = comparableText(ctx.text);
  let token: string | undefined;
  for (let page = 0; page < 5; page++) {
    const qs = new URLSearchParams({
      start_time: start,
      max_results: '100',
      exclude: 'retweets,replies',
      'post.fields': 'created_at',
    });
    if (token) qs.set('pagination_token', token);
    const res = await ok<{ data?: Tweet[]; meta?: { next_token?: string } }>(
      auth,
      'GET',
      `/2/users/${encodeURIComponent(auth.userId)}/tweets?${qs}`,
    );
    const hit = (res.data ?? []).find((t) => comparableText(t.text) === want);
    if (hit) return { externalId: hit.id, url: permalink(ctx, hit.id) };
    token = res.meta?.next_token;
    if (!token) return null;
  }
  return null;
}

export async function publish(ctx: PublishContext): Promise<PublishResult> {
  const auth = new Auth(ctx);
  // An earlier attempt that may have made the tweet was reconciled (looked up) before this one.
  const sentBefore = ctx.checkpoint?.stage === 'posting';
  const mediaIds: string[] = [];
  for (const item of ctx.media) mediaIds.push(await upload(auth, item));
  const body: Record<string, unknown> = {
    text: ctx.text,
    ...(mediaIds.length ? { media: { media_ids: mediaIds } } : {}),
    ...(typeof ctx.options.reply_settings === 'string' ? { reply_settings: ctx.options.reply_settings } : {}),
  };
  await ctx.saveCheckpoint({ stage: 'posting', mediaIds, sentAt: new Date().toISOString() });
  let tweet: { data: { id: string } };
  try {
    tweet = await ok<{ data: { id: string } }>(auth, 'POST', '/2/tweets', { json: body });
  } catch (err) {
    if (sentBefore && isDuplicate(err)) {
      // X refused it as a duplicate of… most likely our own earlier tweet. Try once more to find it.
      const found = await orOutcomeUnknown('x', 'refused as a duplicate', () => lookup(auth, ctx));
      if (found) return found;
      throw new PlatformError(
        'system',
        'x: outcome unknown: refused as duplicate of a tweet an earlier attempt may have made',
        { retryable: false },
      );
    }
    throw err;
  }
  return { externalId: tweet.data.id, url: permalink(ctx, tweet.data.id) };
}

export async function reconcile(ctx: PublishContext): Promise<PublishResult | null> {
  const done = publishedIn(ctx.checkpoint, (id) => permalink(ctx, id));
  if (done) return done;
  // Nothing saved before POST /2/tweets: the attempt died before it, no tweet exists.
  if (ctx.checkpoint?.stage !== 'posting') return null;
  const auth = new Auth(ctx);
  return orOutcomeUnknown('x', "the user's tweets could not be searched", () => lookup(auth, ctx));
}
