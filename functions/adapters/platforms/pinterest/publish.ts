import { uploadError } from '../http.ts';
import { OAuthTokens } from '../oauth.ts';
import { outcomeUnknown, pollWithin, searchFrom, str } from '../support.ts';
import { type MediaInput, PlatformError, type PublishContext, type PublishResult } from '../types.ts';
import { multipartBody } from '../upload.ts';
import { call, uploadForm } from './client.ts';
import { pinterestError } from './errors.ts';

// Pinterest API v5 (https://developers.pinterest.com/docs/api/v5/): one Pin per post, on the variant's
// `board_id` or else the channel's default board (credentials `account_id`).
//   Image: POST /v5/pins with media_source image_base64 (JPEG/PNG up to 4 MiB, the bytes themselves) or image_url (other
//   types and larger ones; Pinterest fetches our public URL).
//   Video: POST /v5/media {media_type: video} → multipart POST of upload_parameters + file to upload_url →
//   poll GET /v5/media/{media_id} until succeeded → POST /v5/pins with source_type video_id.
// Pin creation has no idempotency key, so the checkpoint marks the attempt before POST /v5/pins, and reconcile
// lists the board's Pins for one with our description created since that attempt began.

const P = 'pinterest';

/** Clock skew allowed between us and Pinterest's created_at when matching a Pin to an attempt. */
const MATCH_SKEW_MS = 120_000;
/** Board pages read while looking for a Pin (boards may be custom-sorted, so the whole board is read). */
const LOOKUP_PAGES = 10;

/** Poll pacing of video processing; tests shrink it. */
// The budget fits the worker's 60 s Lambda; a video still processing is waited for by the next
// attempt (the checkpoint's media_id).
/** The largest image sent as bytes (image_base64). */
const BASE64_MAX_BYTES = 4 * 1024 * 1024;

export const polling = { delaysMs: [0, 1000, 2000, 3000, 5000], budgetMs: 20_000 };

interface Pin {
  id?: string;
  created_at?: string;
  description?: string | null;
  board_id?: string;
}

interface MediaUpload {
  media_id?: string;
  upload_url?: string;
  upload_parameters?: Record<string, string>;
  status?: string;
}

const result = (id: string): PublishResult => ({
  externalId: id,
  url: `https://www.pinterest.com/pin/${id}/`,
});

function cut(text: string, max: number): string {
  return Array.from(text).slice(0, max).join('');
}

/** Poll a registered video until Pinterest has processed it. */
async function waitForMedia(tokens: OAuthTokens, mediaId: string): Promise<void> {
  const done = await pollWithin(polling, async () => {
    const res = await call<MediaUpload>(tokens, 'GET', `/v5/media/${encodeURIComponent(mediaId)}`);
    if (res.status !== 200) throw pinterestError(res, 'media status');
    if (res.body.status === 'succeeded') return true;
    if (res.body.status === 'failed') {
      throw new PlatformError(
        'media_error',
        `${P}: Pinterest could not process the video (media ${mediaId})`,
        { retryable: false },
      );
    }
    return undefined;
  });
  if (done) return;
  throw new PlatformError('system', `${P}: video ${mediaId} is still processing`, { retryAfterSeconds: 60 });
}

async function videoMediaId(tokens: OAuthTokens, ctx: PublishContext, item: MediaInput): Promise<string> {
  const earlier = str(ctx.checkpoint?.media_id);
  if (earlier) {
    const res = await call<MediaUpload>(tokens, 'GET', `/v5/media/${encodeURIComponent(earlier)}`);
    if (res.status === 200 && res.body.status !== 'failed' && res.body.status !== 'registered') {
      await waitForMedia(tokens, earlier);
      return earlier;
    }
  }
  const reg = await call<MediaUpload>(tokens, 'POST', '/v5/media', { media_type: 'video' });
  if (reg.status !== 201 && reg.status !== 200) throw pinterestError(reg, 'register media');
  const mediaId = str(reg.body.media_id);
  const uploadUrl = str(reg.body.upload_url);
  if (!mediaId || !uploadUrl)
    throw new PlatformError('system', `${P}: media registration answered without media_id/upload_url`);

  // S3's presigned POST: the parameters, then the file streamed with the form's exact length.
  const form = multipartBody(Object.entries(reg.body.upload_parameters ?? {}), { field: 'file', item });
  const up = await uploadForm(uploadUrl, form);
  if (up.status < 200 || up.status >= 300) {
    const detail = typeof up.body === 'string' ? up.body.slice(0, 200) : '';
    throw uploadError(`${P}: video upload: ${up.status} ${detail}`, up.status);
  }
  // An uploaded video is not a Pin yet; keeping its id lets a retry skip the upload.
  await ctx.saveCheckpoint({ media_id: mediaId });
  await waitForMedia(tokens, mediaId);
  return mediaId;
}

async function mediaSource(
  tokens: OAuthTokens,
  ctx: PublishContext,
  item: MediaInput,
): Promise<Record<string, unknown>> {
  if (item.type === 'video') {
    // No poster frame is known here: the cover is the video's first frame.
    return {
      source_type: 'video_id',
      media_id: await videoMediaId(tokens, ctx, item),
      cover_image_key_frame_time: 0,
    };
  }
  if (item.type !== 'image')
    throw new PlatformError('media_error', `${P}: Pins take an image or a video`, { retryable: false });
  // Base64 in the Pin's JSON holds the image about four times over while it is sent; past a few MiB
  // Pinterest fetches it from the URL instead, as it does the other types.
  if (
    (item.contentType === 'image/jpeg' || item.contentType === 'image/png') &&
    item.sizeBytes <= BASE64_MAX_BYTES
  ) {
    const data = Buffer.from(await item.read()).toString('base64');
    return { source_type: 'image_base64', content_type: item.contentType, data };
  }
  return { source_type: 'image_url', url: item.url };
}

/**
 * A Pin on the board with our description created since `since`: the Pin, null when the whole board was read
 * without one, and an unknown outcome when the board is too large to read to the end.
 */
async function findPin(
  tokens: OAuthTokens,
  boardId: string,
  text: string,
  since: number,
): Promise<Pin | null> {
  let bookmark: string | undefined;
  for (let page = 0; page < LOOKUP_PAGES; page++) {
    const q = new URLSearchParams({ page_size: '100', ...(bookmark ? { bookmark } : {}) });
    const res = await call<{ items?: Pin[]; bookmark?: string | null }>(
      tokens,
      'GET',
      `/v5/boards/${encodeURIComponent(boardId)}/pins?${q}`,
    );
    if (res.status !== 200) throw pinterestError(res, 'list board pins');
    const hit = (res.body.items ?? []).find(
      (p) => (p.description ?? '').trim() === text.trim() && Date.parse(p.created_at ?? '') >= since,
    );
    if (hit?.id) return hit;
    bookmark = str(res.body.bookmark);
    if (!bookmark) return null;
  }
  throw outcomeUnknown(P, `board ${boardId} has more Pins than the lookup reads`);
}

/** When the attempt that may have created the Pin began (its checkpoint mark, or the attempt's start). */
function attemptSince(ctx: PublishContext): number {
  return searchFrom(ctx, ctx.checkpoint?.creating_since, MATCH_SKEW_MS);
}

function boardOf(ctx: PublishContext): string | undefined {
  return str(ctx.checkpoint?.board_id) ?? str(ctx.options.board_id) ?? str(ctx.credentials.account_id);
}

export async function publish(ctx: PublishContext): Promise<PublishResult> {
  const item = ctx.media[0];
  if (!item)
    throw new PlatformError('user_content', `${P}: a Pin needs an image or a video`, { retryable: false });
  const boardId = str(ctx.options.board_id) ?? str(ctx.credentials.account_id);
  if (!boardId)
    throw new PlatformError('user_content', `${P}: no board_id option and no default board`, {
      retryable: false,
    });
  const tokens = await OAuthTokens.open(ctx);

  // An earlier attempt may have created the Pin before dying: look before creating another.
  if (ctx.checkpoint?.creating_since) {
    const found = await findPin(tokens, str(ctx.checkpoint.board_id) ?? boardId, ctx.text, attemptSince(ctx));
    if (found?.id) return result(found.id);
  }

  const source = await mediaSource(tokens, ctx, item);
  const title = str(ctx.options.title) ?? str(ctx.title);
  const link = str(ctx.options.link);
  const body = {
    board_id: boardId,
    ...(title ? { title: cut(title, 100) } : {}),
    description: ctx.text,
    ...(link ? { link } : {}),
    ...(item.type === 'image' && item.alt ? { alt_text: cut(item.alt, 500) } : {}),
    media_source: source,
  };
  // POST /v5/pins cannot be repeated safely: mark the attempt so a crash is reconciled by lookup.
  await ctx.saveCheckpoint({
    ...(source.media_id ? { media_id: source.media_id } : {}),
    board_id: boardId,
    creating_since: new Date().toISOString(),
  });
  const res = await call<Pin>(tokens, 'POST', '/v5/pins', body);
  if ((res.status === 201 || res.status === 200) && res.body.id) return result(res.body.id);
  throw pinterestError(res, 'create pin');
}

export async function reconcile(ctx: PublishContext): Promise<PublishResult | null> {
  // Nothing marked: POST /v5/pins was never sent.
  if (!ctx.checkpoint?.creating_since) return null;
  const boardId = boardOf(ctx);
  if (!boardId) throw outcomeUnknown(P, 'the board of the earlier attempt is not known');
  const tokens = await OAuthTokens.open(ctx);
  const found = await findPin(tokens, boardId, ctx.text, attemptSince(ctx));
  return found?.id ? result(found.id) : null;
}
