import { parseJson, platformUrl, request } from '../http.ts';
import { channelAuth, GRAPH_VERSION, type GraphClient, listEdge } from '../meta/client.ts';
import { graphError } from '../meta/errors.ts';
import { bestEffort, found, singleItem } from '../meta/publish.ts';
import { type Backoff, backoff, pollWithin } from '../support.ts';
import { type MediaInput, PlatformError, type PublishContext, type PublishResult } from '../types.ts';
import { UPLOAD_REQUEST_MS } from '../upload.ts';

// Facebook Page reels and stories (`options.format`), each in the platform's upload phases.
// Reels (Video API, "Reels Publishing": developers.facebook.com/docs/video-api/guides/reels-publishing):
//   1. POST /{page-id}/video_reels upload_phase=start → {video_id, upload_url}
//   2. POST https://rupload.facebook.com/video-upload/<version>/<video_id> with the headers
//      `Authorization: OAuth <page token>` and `file_url: <public url>` (Meta fetches the file) →
//      {"success": true}
//   3. GET /{video_id}?fields=status until status.uploading_phase is complete
//   4. POST /{page-id}/video_reels upload_phase=finish, video_id, video_state=PUBLISHED, description
//      → {"success": true}; the reel is https://www.facebook.com/reel/<video_id>.
// Stories (Pages API, "Facebook Stories API": developers.facebook.com/docs/page-stories-api):
//   photo: POST /{page-id}/photos url, published=false → {id}; POST /{page-id}/photo_stories
//          photo_id → {"success": true, "post_id"}
//   video: POST /{page-id}/video_stories upload_phase=start → {video_id, upload_url}; the same
//          rupload transfer; POST /{page-id}/video_stories upload_phase=finish, video_id →
//          {"success": true, "post_id"}
//   GET /{page-id}/stories lists the Page's stories (post_id, status, creation_time, media_id, url).
// The ids are checkpointed as they come (a retry resumes the same upload session instead of
// starting another), and once more right before the irreversible step (finish, photo_stories), so
// a retry first asks whether that step already happened: the video's publishing phase (reels) or
// the story listed with the checkpointed media id (stories).

const PLATFORM = 'facebook';
const WEB = 'https://www.facebook.com';
/**
 * How long an attempt waits for the transfer to be complete before finishing (tests shorten it);
 * with the transfer's own UPLOAD_REQUEST_MS it stays within the worker's 60 s. Past it, the next
 * attempt resumes the same session.
 */
export const uploadPolling: Backoff = { firstDelayMs: 1000, maxDelayMs: 4000, budgetMs: 10_000 };

/** What a reel or story attempt keeps between attempts. */
export interface PhaseCheckpoint {
  kind: 'reel' | 'video_story' | 'photo_story';
  /** The video's (reels, video stories) or the unpublished photo's (photo stories) id. */
  media_id: string;
  upload_url?: string;
  /** Saved right before finish / photo_stories: that step may have happened. */
  finishing?: boolean;
}

export function readPhaseCheckpoint(cp: Record<string, unknown> | null): PhaseCheckpoint | null {
  if (!cp || (cp.kind !== 'reel' && cp.kind !== 'video_story' && cp.kind !== 'photo_story')) return null;
  if (typeof cp.media_id !== 'string' || !cp.media_id) return null;
  return {
    kind: cp.kind,
    media_id: cp.media_id,
    ...(typeof cp.upload_url === 'string' ? { upload_url: cp.upload_url } : {}),
    finishing: cp.finishing === true,
  };
}

interface Session {
  client: GraphClient;
  pageId: string;
}

// ---- The video's phases --------------------------------------------------------------------

interface VideoStatus {
  video_status?: string;
  uploading_phase?: { status?: string };
  processing_phase?: { status?: string; errors?: Array<{ code?: number; message?: string }> };
  publishing_phase?: { status?: string; publish_status?: string };
}

/** The video's status, or null when the id is no longer readable (the session is gone). */
async function videoStatus(s: Session, videoId: string): Promise<VideoStatus | null> {
  try {
    const body = await s.client.get<{ status?: VideoStatus }>(`/${videoId}`, { fields: 'status' });
    return body.status ?? {};
  } catch (err) {
    if (err instanceof PlatformError && err.category === 'user_content') return null;
    throw err;
  }
}

const failed = (st: VideoStatus) =>
  st.video_status === 'error' ||
  st.uploading_phase?.status === 'error' ||
  st.processing_phase?.status === 'error';

/** Finish went through: the video is published, or publishing has begun. */
const finished = (st: VideoStatus) =>
  st.publishing_phase?.publish_status === 'published' ||
  (st.publishing_phase?.status !== undefined && st.publishing_phase.status !== 'not_started');

function mediaFailure(videoId: string, st: VideoStatus): PlatformError {
  const why = st.processing_phase?.errors?.map((e) => e.message).join('; ') || st.video_status || 'error';
  return new PlatformError('media_error', `${PLATFORM}: video ${videoId} failed: ${why}`, {
    retryable: false,
  });
}

/** rupload: the file by URL, the Page token in an `OAuth` Authorization header. */
async function transfer(ctx: PublishContext, cp: PhaseCheckpoint, video: MediaInput) {
  const { token } = channelAuth(PLATFORM, ctx.credentials);
  const res = await request(PLATFORM, platformUrl(PLATFORM, cp.upload_url as string), {
    method: 'POST',
    headers: { authorization: `OAuth ${token}`, file_url: video.url },
    timeoutMs: UPLOAD_REQUEST_MS,
  });
  if (res.status >= 200 && res.status < 300) return;
  const body = typeof res.body === 'string' ? parseJson(res.body) : res.body;
  // rupload answers {"debug_info": {"retriable", "type", "message"}} rather than a Graph error.
  const info = (body as { debug_info?: { retriable?: boolean; message?: string } } | undefined)?.debug_info;
  if (info) {
    throw new PlatformError(
      res.status >= 500 ? 'system' : 'media_error',
      `${PLATFORM}: ${res.status} upload of video ${cp.media_id} failed: ${info.message ?? 'error'}`,
      { status: res.status, retryable: info.retriable === true || res.status >= 500 },
    );
  }
  throw graphError(PLATFORM, { ...res, body });
}

/** Waits for the transfer to be complete (processing may go on after finish). */
async function awaitUpload(s: Session, videoId: string): Promise<void> {
  const done = await pollWithin(backoff(uploadPolling), async () => {
    const st = await videoStatus(s, videoId);
    if (!st) throw new PlatformError('system', `${PLATFORM}: video ${videoId} can no longer be read`);
    if (failed(st)) throw mediaFailure(videoId, st);
    return st.uploading_phase?.status === 'complete' || st.video_status === 'upload_complete' || undefined;
  });
  if (done) return;
  throw new PlatformError('system', `${PLATFORM}: video ${videoId} still uploading; resuming next attempt`, {
    retryAfterSeconds: 30,
  });
}

/** Start (or resume) a video's upload session on `edge`, transfer the file, and wait for it. */
async function uploadVideo(
  s: Session,
  ctx: PublishContext,
  kind: 'reel' | 'video_story',
  edge: 'video_reels' | 'video_stories',
  video: MediaInput,
  prior: PhaseCheckpoint | null,
): Promise<PhaseCheckpoint> {
  let cp = prior?.kind === kind ? prior : null;
  let st = cp ? await videoStatus(s, cp.media_id) : null;
  if (cp && (!st || failed(st))) cp = null; // the session is gone or failed: a new one
  if (!cp) {
    const started = await s.client.post<{ video_id: string; upload_url: string }>(`/${s.pageId}/${edge}`, {
      upload_phase: 'start',
    });
    cp = { kind, media_id: String(started.video_id), upload_url: started.upload_url };
    st = null;
    await ctx.saveCheckpoint({ ...cp });
  }
  // Complete, or still being fetched by Meta after an earlier attempt's transfer: no second one.
  const done =
    st?.uploading_phase?.status === 'complete' ||
    st?.uploading_phase?.status === 'in_progress' ||
    st?.video_status === 'upload_complete';
  if (!done && !cp.upload_url) cp = { ...cp, upload_url: ruploadUrl(cp.media_id) };
  // Not recorded: a retry asks the video's status whether the transfer happened.
  if (!done) await transfer(ctx, cp, video);
  await awaitUpload(s, cp.media_id);
  return cp;
}

/** Where the transfer goes when a checkpoint lacks the answered upload_url. */
const ruploadUrl = (videoId: string) =>
  `https://rupload.facebook.com/video-upload/${GRAPH_VERSION}/${videoId}`;

// ---- Reels ---------------------------------------------------------------------------------

const reelUrl = (videoId: string) => `${WEB}/reel/${videoId}`;

export async function publishReel(
  s: Session,
  ctx: PublishContext,
  prior: PhaseCheckpoint | null,
): Promise<PublishResult> {
  const video = singleItem(PLATFORM, ctx, 'reel');
  if (prior?.kind === 'reel' && prior.finishing) {
    const st = await videoStatus(s, prior.media_id);
    if (st && finished(st)) return found(prior.media_id, reelUrl(prior.media_id));
  }
  const cp = await uploadVideo(s, ctx, 'reel', 'video_reels', video, prior);
  await ctx.saveCheckpoint({ ...cp, finishing: true });
  await s.client.post(`/${s.pageId}/video_reels`, {
    upload_phase: 'finish',
    video_id: cp.media_id,
    video_state: 'PUBLISHED',
    description: ctx.text || undefined,
  });
  return found(cp.media_id, reelUrl(cp.media_id));
}

// ---- Stories -------------------------------------------------------------------------------

interface StoryRow {
  post_id?: string;
  media_id?: string;
  url?: string;
  status?: string;
}

/** The Page's story made of this photo or video, if there is one. */
async function storyOf(s: Session, mediaId: string): Promise<PublishResult | null> {
  const rows = await listEdge<StoryRow>(s.client, `/${s.pageId}/stories`, { limit: 50 });
  const hit = rows.find((r) => r.media_id === mediaId && r.post_id);
  return hit?.post_id ? found(hit.post_id, hit.url) : null;
}

async function storyResult(s: Session, postId: string, mediaId: string): Promise<PublishResult> {
  const listed = await bestEffort(() => storyOf(s, mediaId));
  return found(postId, listed?.url ?? null);
}

export async function publishStory(
  s: Session,
  ctx: PublishContext,
  prior: PhaseCheckpoint | null,
): Promise<PublishResult> {
  const m = singleItem(PLATFORM, ctx, 'story');
  const kind = m.type === 'video' ? 'video_story' : 'photo_story';
  if (prior?.kind === kind && prior.finishing) {
    const earlier = await storyOf(s, prior.media_id);
    if (earlier) return earlier;
  }
  if (kind === 'video_story') {
    const cp = await uploadVideo(s, ctx, kind, 'video_stories', m, prior);
    await ctx.saveCheckpoint({ ...cp, finishing: true });
    const res = await s.client.post<{ post_id?: string }>(`/${s.pageId}/video_stories`, {
      upload_phase: 'finish',
      video_id: cp.media_id,
    });
    return storyResult(s, String(res.post_id ?? cp.media_id), cp.media_id);
  }
  // An unpublished photo uploaded by an earlier attempt can still become the story.
  let photoId = prior?.kind === 'photo_story' ? prior.media_id : undefined;
  if (!photoId) {
    const photo = await s.client.post<{ id: string }>(`/${s.pageId}/photos`, {
      url: m.url,
      published: false,
    });
    photoId = photo.id;
  }
  await ctx.saveCheckpoint({ kind, media_id: photoId, finishing: true } satisfies PhaseCheckpoint);
  const res = await s.client.post<{ post_id?: string }>(`/${s.pageId}/photo_stories`, { photo_id: photoId });
  return storyResult(s, String(res.post_id ?? photoId), photoId);
}

/** The reel or story an earlier attempt made, from its checkpoint; null: it never finished. */
export async function reconcilePhases(s: Session, cp: PhaseCheckpoint): Promise<PublishResult | null> {
  if (!cp.finishing) return null;
  if (cp.kind === 'reel') {
    const st = await videoStatus(s, cp.media_id);
    return st && finished(st) ? found(cp.media_id, reelUrl(cp.media_id)) : null;
  }
  return storyOf(s, cp.media_id);
}
