import type { HttpResponse } from '../http.ts';
import { OAuthTokens } from '../oauth.ts';
import { outcomeUnknown, str } from '../support.ts';
import { type MediaInput, PlatformError, type PublishContext, type PublishResult } from '../types.ts';
import { continueLater, uploadClock } from '../upload.ts';
import { api, authed } from './client.ts';
import { youtubeError } from './errors.ts';
import { afterUpload } from './steps.ts';

// YouTube Data API v3, videos.insert through the resumable upload protocol
// (https://developers.google.com/youtube/v3/guides/using_resumable_upload_protocol):
//   1. POST /upload/youtube/v3/videos?uploadType=resumable&part=snippet,status with the video resource and
//      X-Upload-Content-Length/-Type → 200 and the session URI in Location;
//   2. PUT the bytes to the session URI in chunks (Content-Range); 308 Resume Incomplete says how much arrived
//      (Range: bytes=0-N), the final 200/201 carries the video resource and its id.
// The video exists only once the last byte is in, so the session URI is the checkpoint: querying it with
// `Content-Range: bytes */<size>` tells a crashed attempt whether the video was created (200/201) or how far the
// upload got (308), and a later attempt resumes from there instead of uploading twice. Each chunk is one
// ranged read of the media object, so an attempt holds 8 MiB whatever the video's size; one that has
// spent its time budget stops between chunks and the next attempt resumes the session.
//
// After the upload (steps.ts): the thumbnail (thumbnails.set) and the playlist (playlistItems.insert),
// each retried on its own; a step that fails for good leaves the video published with a warning.
// `publish_at` uploads the video private with status.publishAt (videos resource: publishAt "can only
// be set if the video's privacy status is private"); YouTube makes it public then. A Short is an
// ordinary upload: YouTube files a vertical or square video of at most 3 minutes as a Short by its
// shape and length (YouTube Help, "Upload YouTube Shorts"); the Data API has no field for it and
// Herald adds no #Shorts to the text.

const P = 'youtube';

/** Chunk size: all chunks but the last must be multiples of 256 KiB. */
export const CHUNK = 8 * 1024 * 1024;

/** A title YouTube accepts: ≤ 100 characters, no angle brackets, not empty. */
function cleanTitle(raw: string | undefined): string {
  if (!raw) return '';
  const flat = raw.replace(/[<>]/g, '').replace(/\s+/g, ' ').trim();
  return Array.from(flat).slice(0, 100).join('').trim();
}

function videoResource(ctx: PublishContext, video: MediaInput) {
  const o = ctx.options;
  const title =
    cleanTitle(str(o.title) ?? str(ctx.title) ?? ctx.text.split('\n').find((l) => l.trim())) ||
    cleanTitle(video.filename.replace(/\.[^.]+$/, '')) ||
    'Video';
  const tags = Array.isArray(o.tags) ? o.tags.filter((t): t is string => typeof t === 'string') : [];
  const publishAt = str(o.publish_at);
  return {
    snippet: {
      title,
      description: ctx.text,
      ...(tags.length ? { tags } : {}),
      // 22 = People & Blogs, YouTube's own default category.
      categoryId: str(o.category_id) ?? '22',
    },
    status: {
      // A scheduled video is private until publishAt (createPost refuses another privacy with it).
      privacyStatus: publishAt ? 'private' : (str(o.privacy_status) ?? 'public'),
      ...(publishAt ? { publishAt } : {}),
      selfDeclaredMadeForKids: o.made_for_kids === true,
    },
  };
}

/** A Short's page is youtube.com/shorts/<id>; every other video's the watch page. */
export const videoUrl = (id: string, options: Record<string, unknown>) =>
  options.format === 'short'
    ? `https://www.youtube.com/shorts/${id}`
    : `https://www.youtube.com/watch?v=${id}`;

/** The uploaded video, once the steps after the upload are done (or failed for good, with a warning). */
async function uploaded(
  tokens: OAuthTokens,
  ctx: PublishContext,
  id: string,
  checkpoint: Record<string, unknown>,
): Promise<PublishResult> {
  await afterUpload(tokens, ctx, id, checkpoint);
  return { externalId: id, url: videoUrl(id, ctx.options) };
}

function videoIdOf(res: HttpResponse): string {
  const id = str((res.body as { id?: unknown } | undefined)?.id);
  if (!id) throw new PlatformError('system', `${P}: the upload finished without a video id`);
  return id;
}

/** Where the server's `Range: bytes=0-N` says the next byte goes (0 when it has none). */
function nextOffset(headers: Headers): number {
  const m = /bytes=\d+-(\d+)/.exec(headers.get('range') ?? '');
  return m ? Number(m[1]) + 1 : 0;
}

type SessionState =
  | { kind: 'complete'; id: string }
  | { kind: 'incomplete'; offset: number }
  | { kind: 'gone' };

// Upload status of a session: an empty PUT with `Content-Range: bytes */<size>`.
async function querySession(tokens: OAuthTokens, uri: string, size: number): Promise<SessionState> {
  const res = await authed(tokens, uri, {
    method: 'PUT',
    headers: { 'content-range': `bytes */${size}` },
    body: new Uint8Array(0),
  });
  if (res.status === 200 || res.status === 201) return { kind: 'complete', id: videoIdOf(res) };
  if (res.status === 308) return { kind: 'incomplete', offset: nextOffset(res.headers) };
  // Sessions expire (about a week); an expired one no longer says whether it finished.
  if (res.status === 404 || res.status === 410) return { kind: 'gone' };
  throw youtubeError(res, 'upload status');
}

async function startSession(
  tokens: OAuthTokens,
  ctx: PublishContext,
  video: MediaInput,
  size: number,
): Promise<string> {
  const res = await authed(
    tokens,
    api('/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status'),
    {
      method: 'POST',
      headers: {
        'content-type': 'application/json; charset=UTF-8',
        'x-upload-content-length': String(size),
        'x-upload-content-type': video.contentType,
      },
      body: JSON.stringify(videoResource(ctx, video)),
    },
  );
  const location = res.headers.get('location');
  if (res.status !== 200 || !location) {
    if (res.status === 200)
      throw new PlatformError('system', `${P}: resumable session answered without a Location`);
    throw youtubeError(res, 'videos.insert');
  }
  return location;
}

/** Sends the video's bytes [from…] to the session; the final answer carries the video resource. */
async function upload(
  tokens: OAuthTokens,
  ctx: PublishContext,
  uri: string,
  video: MediaInput,
  from: number,
  size: number,
) {
  const clock = uploadClock();
  let offset = from;
  let stalls = 0;
  while (offset < size) {
    if (offset > from && clock.spent()) throw continueLater(P, offset, size);
    const end = Math.min(offset + CHUNK, size);
    const res = await authed(tokens, uri, {
      method: 'PUT',
      headers: { 'content-type': video.contentType, 'content-range': `bytes ${offset}-${end - 1}/${size}` },
      body: await video.readRange(offset, end),
      timeoutMs: clock.remainingMs(),
    });
    if (res.status === 200 || res.status === 201) return videoIdOf(res);
    if (res.status === 308) {
      const next = nextOffset(res.headers);
      stalls = next > offset ? 0 : stalls + 1;
      if (stalls >= 3)
        throw new PlatformError('system', `${P}: the upload makes no progress at byte ${offset}`);
      offset = next;
      continue;
    }
    if (res.status === 404 || res.status === 410) {
      // The session expired while we were still sending (it answered 308 so far): no video was created.
      await ctx.saveCheckpoint({});
      throw new PlatformError('system', `${P}: the upload session expired; the next attempt starts over`, {
        status: res.status,
      });
    }
    throw youtubeError(res, 'upload');
  }
  // Every byte is in but no final answer yet: ask the session.
  const st = await querySession(tokens, uri, size);
  if (st.kind === 'complete') return st.id;
  throw new PlatformError('system', `${P}: the upload is complete but YouTube has not confirmed the video`);
}

export async function publish(ctx: PublishContext): Promise<PublishResult> {
  const video = ctx.media.find((m) => m.type === 'video');
  if (!video) throw new PlatformError('user_content', `${P}: a post needs a video`, { retryable: false });
  const tokens = await OAuthTokens.open(ctx);
  const cp = ctx.checkpoint ?? {};
  const size = video.sizeBytes;
  if (size === 0) throw new PlatformError('media_error', `${P}: the video is empty`, { retryable: false });

  let session = str(cp.session_uri);
  let offset = 0;
  if (session) {
    // An earlier attempt opened a session: finish it rather than upload a second video.
    const st = await querySession(tokens, session, typeof cp.size === 'number' ? cp.size : size);
    if (st.kind === 'complete') return uploaded(tokens, ctx, st.id, cp);
    if (st.kind === 'gone') throw outcomeUnknown(P, 'the upload session of an earlier attempt has expired');
    offset = st.offset;
  } else {
    session = await startSession(tokens, ctx, video, size);
    await ctx.saveCheckpoint({ session_uri: session, size });
  }
  const id = await upload(tokens, ctx, session, video, offset, size);
  return uploaded(tokens, ctx, id, { ...cp, session_uri: session, size });
}

export async function reconcile(ctx: PublishContext): Promise<PublishResult | null> {
  const cp = ctx.checkpoint ?? {};
  const session = str(cp.session_uri);
  // No session: no byte was sent, so no video exists.
  if (!session || typeof cp.size !== 'number') return null;
  const tokens = await OAuthTokens.open(ctx);
  const st = await querySession(tokens, session, cp.size);
  // The video exists: what is left of its steps is done now (the worker publishes nothing more).
  if (st.kind === 'complete') return uploaded(tokens, ctx, st.id, cp);
  // Incomplete: the video is not created until the last byte; publish resumes the same session.
  if (st.kind === 'incomplete') return null;
  throw outcomeUnknown(P, 'the upload session has expired');
}
