import { sleep, str } from '../support.ts';
import { type MediaInput, PlatformError, type PublishContext } from '../types.ts';
import { continueLater, UPLOAD_REQUEST_MS, type UploadClock, uploadClock } from '../upload.ts';
import type { Auth } from './client.ts';
import { ok } from './client.ts';

// Media through the v2 media endpoints: images in one POST /2/media/upload (base64 JSON, tweet_image);
// video and GIFs in chunks (POST /2/media/upload/initialize, /{id}/append multipart, /{id}/finalize,
// then GET /2/media/upload?command=STATUS until processing_info.state is succeeded). Alt text goes to
// POST /2/media/metadata.
//
// Each segment is one ranged read of the media object (a 500 MB video holds 4 MiB at a time). The
// media id and the segments sent are the delivery's checkpoint (stage `uploading`): an attempt that
// spent its time budget, or failed mid-way, leaves them there and the next one appends from the
// next segment instead of starting over (X keeps an upload session 24 h).

export const SEGMENT_BYTES = 4 * 1024 * 1024; // APPEND accepts ≤ 5 MB per segment
/** tweet_video and tweet_gif take files up to 512 MB (X's media upload limits). */
export const MAX_CHUNKED_BYTES = 512 * 1024 * 1024;
/**
 * How long one attempt waits for X to process a video (tests shorten it): the worker's Lambda stops at 60 s. Past it the
 * attempt ends with the upload finalized in its checkpoint, and the next attempt only asks STATUS.
 */
export const processing = { budgetMs: 15_000 };
/** How often progress is saved while appending (each save is a write of the delivery). */
const SAVE_EVERY_SEGMENTS = 8;

interface MediaData {
  id: string;
  media_key?: string;
  expires_after_secs?: number;
  processing_info?: {
    state: 'pending' | 'in_progress' | 'succeeded' | 'failed';
    check_after_secs?: number;
    error?: { name?: string; message?: string };
  };
}

/** An upload in progress as the checkpoint keeps it. */
interface Progress {
  stage: 'uploading';
  /** Media ids of the items before `item`, uploaded already. */
  uploaded: string[];
  item: number;
  media_id: string;
  size: number;
  segments: number;
  expires_at: string;
  /** FINALIZE was answered: only processing is left. */
  finalized?: boolean;
}

function progressOf(cp: Record<string, unknown> | null): Progress | null {
  if (cp?.stage !== 'uploading' || !Array.isArray(cp.uploaded) || !str(cp.media_id)) return null;
  if (typeof cp.item !== 'number' || typeof cp.size !== 'number' || typeof cp.segments !== 'number')
    return null;
  if (Date.parse(String(cp.expires_at)) <= Date.now() + 60_000) return null;
  return cp as unknown as Progress;
}

async function waitForProcessing(
  auth: Auth,
  media: MediaData,
  onTimeout?: () => Promise<void>,
  budgetMs = processing.budgetMs,
): Promise<void> {
  let info = media.processing_info;
  const started = Date.now();
  while (info && (info.state === 'pending' || info.state === 'in_progress')) {
    if (Date.now() - started > budgetMs) {
      await onTimeout?.();
      throw new PlatformError('system', `x: media ${media.id} is still processing`, {
        retryAfterSeconds: Math.max(30, info.check_after_secs ?? 0),
      });
    }
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

/** X takes images up to 5 MB (its media upload limits): larger ones are refused before they are read. */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

async function uploadImage(auth: Auth, item: MediaInput): Promise<string> {
  if (item.sizeBytes > MAX_IMAGE_BYTES)
    throw new PlatformError(
      'media_error',
      `x: ${item.filename} is ${item.sizeBytes} bytes; X takes images up to ${MAX_IMAGE_BYTES}`,
      {
        retryable: false,
      },
    );
  const res = await ok<{ data: MediaData }>(auth, 'POST', '/2/media/upload', {
    json: { media: Buffer.from(await item.read()).toString('base64'), media_category: 'tweet_image' },
    timeoutMs: UPLOAD_REQUEST_MS,
    media: true,
  });
  await waitForProcessing(auth, res.data);
  return res.data.id;
}

async function uploadChunked(
  auth: Auth,
  ctx: PublishContext,
  item: MediaInput,
  index: number,
  uploaded: string[],
  resume: Progress | null,
  clock: UploadClock,
): Promise<string> {
  const gif = item.contentType === 'image/gif';
  const size = item.sizeBytes;
  if (size > MAX_CHUNKED_BYTES)
    throw new PlatformError(
      'media_error',
      `x: ${item.filename} is ${size} bytes; X takes up to ${MAX_CHUNKED_BYTES}`,
      {
        retryable: false,
      },
    );
  let p: Progress;
  if (resume && resume.item === index && resume.size === size) {
    p = resume;
  } else {
    const init = await ok<{ data: MediaData }>(auth, 'POST', '/2/media/upload/initialize', {
      json: {
        media_type: item.contentType,
        total_bytes: size,
        media_category: gif ? 'tweet_gif' : 'tweet_video',
      },
      media: true,
    });
    const ttl = init.data.expires_after_secs ?? 86_400;
    p = {
      stage: 'uploading',
      uploaded,
      item: index,
      media_id: init.data.id,
      size,
      segments: 0,
      expires_at: new Date(Date.now() + ttl * 1000).toISOString(),
    };
    await ctx.saveCheckpoint({ ...p });
  }
  const id = encodeURIComponent(p.media_id);
  const finalized = async () => {
    await ctx.saveCheckpoint({ ...p, finalized: true });
  };
  if (p.finalized) {
    // An earlier attempt finalized it: only its processing is left to wait for.
    const qs = new URLSearchParams({ command: 'STATUS', media_id: p.media_id });
    const st = await ok<{ data: MediaData }>(auth, 'GET', `/2/media/upload?${qs}`, { media: true });
    await waitForProcessing(auth, { ...st.data, id: p.media_id }, finalized);
    return p.media_id;
  }
  const count = Math.ceil(size / SEGMENT_BYTES);
  const started = p.segments;
  try {
    for (; p.segments < count; p.segments++) {
      if (p.segments > started && clock.spent()) throw continueLater('x', p.segments * SEGMENT_BYTES, size);
      if (p.segments > started && (p.segments - started) % SAVE_EVERY_SEGMENTS === 0)
        await ctx.saveCheckpoint({ ...p });
      const start = p.segments * SEGMENT_BYTES;
      const form = new FormData();
      form.append('segment_index', String(p.segments));
      form.append(
        'media',
        new Blob([await item.readRange(start, Math.min(start + SEGMENT_BYTES, size))], {
          type: 'application/octet-stream',
        }),
        'chunk',
      );
      await ok(auth, 'POST', `/2/media/upload/${id}/append`, {
        form,
        timeoutMs: UPLOAD_REQUEST_MS,
        media: true,
      });
    }
  } catch (err) {
    // The session an earlier attempt left is refused (X forgot it): start this file over.
    if (p === resume && p.segments === started && err instanceof PlatformError && !err.retryable)
      return uploadChunked(auth, ctx, item, index, uploaded, null, clock);
    // Keep what was sent for the next attempt (unless nothing more got through than was saved).
    if (p.segments > started) await ctx.saveCheckpoint({ ...p }).catch(() => undefined);
    throw err;
  }
  const fin = await ok<{ data: MediaData }>(auth, 'POST', `/2/media/upload/${id}/finalize`, { media: true });
  // What the upload left of the attempt's time, at most the processing budget.
  await waitForProcessing(
    auth,
    fin.data,
    finalized,
    Math.min(processing.budgetMs, clock.remainingMs() - 1000),
  );
  return p.media_id;
}

/** The media ids of the post's media, in order, continuing an upload an earlier attempt left. */
export async function uploadMedia(auth: Auth, ctx: PublishContext): Promise<string[]> {
  const resume = progressOf(ctx.checkpoint);
  const ids = resume ? resume.uploaded.slice(0, resume.item) : [];
  const clock = uploadClock();
  for (let i = ids.length; i < ctx.media.length; i++) {
    const item = ctx.media[i] as MediaInput;
    const gif = item.contentType === 'image/gif';
    let id: string;
    if (item.type === 'image' && !gif) id = await uploadImage(auth, item);
    else if (item.type === 'video' || gif)
      id = await uploadChunked(auth, ctx, item, i, [...ids], resume, clock);
    else
      throw new PlatformError('media_error', `x: ${item.type} attachments are not supported`, {
        retryable: false,
      });
    if (item.alt && item.type === 'image') {
      await ok(auth, 'POST', '/2/media/metadata', {
        json: { id, metadata: { alt_text: { text: item.alt.slice(0, 1000) } } },
        media: true,
      });
    }
    ids.push(id);
  }
  return ids;
}
