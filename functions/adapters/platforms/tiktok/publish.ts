import { uploadError } from '../http.ts';
import { OAuthTokens } from '../oauth.ts';
import { outcomeUnknown, pollWithin, str } from '../support.ts';
import { type MediaInput, PlatformError, type PublishContext, type PublishResult } from '../types.ts';
import { outOfTime, uploadClock } from '../upload.ts';
import { api, putChunk } from './client.ts';
import { failReasonError } from './errors.ts';

// TikTok Content Posting API, in one of two modes (`options.post_mode`; default: direct when the
// operator's platform app is audited, else inbox — TikTok restricts an unaudited app's Direct Posts to
// private viewing, https://developers.tiktok.com/doc/content-posting-api-reference-direct-post):
//
// direct — Video: query the creator (allowed privacy levels, disabled interactions) → POST
// /v2/post/publish/video/init/ (post_info with the disclosure toggles, FILE_UPLOAD) → PUT the bytes to
// upload_url in chunks → poll POST /v2/post/publish/status/fetch/ until PUBLISH_COMPLETE. Photos: POST
// /v2/post/publish/content/init/ (post_mode DIRECT_POST, PULL_FROM_URL: TikTok fetches our public media
// URLs, whose domain must be verified in the TikTok app) → poll the same status endpoint.
// inbox — Video: POST /v2/post/publish/inbox/video/init/ (source_info only, scope video.upload;
// https://developers.tiktok.com/doc/content-posting-api-reference-upload-video) → the same chunked PUT →
// poll until SEND_TO_USER_INBOX: the creator finishes the post in the TikTok app. Photos: content/init
// with post_mode MEDIA_UPLOAD. The delivery is published with the publish_id and no permalink.
//
// Private (SELF_ONLY) posts never get a public id: the publish_id is then the external id and there is no
// permalink.

const P = 'tiktok';

/** Chunk size: TikTok wants 5–64 MB chunks (last one up to 128 MB); anything under one chunk goes whole. */
const CHUNK = 10 * 1024 * 1024;

/**
 * Poll pacing of the status endpoint (30 requests/min per token); tests shrink it. The budget fits the
 * worker's 60 s Lambda after an upload; a post still processing is waited for by the next attempt
 * (the checkpoint's publish_id).
 */
export const polling = { delaysMs: [0, 1000, 2000, 3000, 5000], budgetMs: 20_000 };

/** Most to least public: the default when the variant names no privacy_level. */
const PRIVACY_ORDER = ['PUBLIC_TO_EVERYONE', 'FOLLOWER_OF_CREATOR', 'MUTUAL_FOLLOW_FRIENDS', 'SELF_ONLY'];

interface CreatorInfo {
  privacy_level_options?: string[];
  comment_disabled?: boolean;
  duet_disabled?: boolean;
  stitch_disabled?: boolean;
}

interface PublishStatus {
  status?: string;
  fail_reason?: string;
  publicaly_available_post_id?: string[];
  uploaded_bytes?: number;
}

type MediaKind = 'video' | 'photo';
type Mode = 'direct' | 'inbox';

/** The variant's post_mode, else the platform app's: direct only for an audited app. */
export function postMode(ctx: Pick<PublishContext, 'options' | 'app'>): Mode {
  const asked = str(ctx.options.post_mode);
  if (asked === 'direct' || asked === 'inbox') return asked;
  return ctx.app?.audited === true ? 'direct' : 'inbox';
}

const unaudited = (ctx: PublishContext) => ctx.app?.audited !== true;

/** The disclosure fields of post_info (Direct Post reference: brand_content_toggle, brand_organic_toggle, is_aigc). */
function disclosure(ctx: PublishContext, opts: { aigc: boolean }) {
  return {
    brand_content_toggle: ctx.options.brand_content === true,
    brand_organic_toggle: ctx.options.brand_organic === true,
    ...(opts.aigc && ctx.options.ai_generated === true ? { is_aigc: true } : {}),
  };
}

/** The privacy level: the variant's option when the creator allows it, else the most public one allowed. */
function privacyLevel(ctx: PublishContext, info: CreatorInfo): string {
  const allowed = info.privacy_level_options ?? [];
  const wanted = str(ctx.options.privacy_level);
  if (wanted) {
    if (allowed.length && !allowed.includes(wanted)) {
      throw new PlatformError(
        'user_content',
        `${P}: privacy_level ${wanted} is not available to this creator (allowed: ${allowed.join(', ')})`,
        { retryable: false },
      );
    }
    return wanted;
  }
  // An unaudited app's posts can only be private: ask for that rather than be refused.
  if (unaudited(ctx) && (!allowed.length || allowed.includes('SELF_ONLY'))) return 'SELF_ONLY';
  return PRIVACY_ORDER.find((p) => allowed.includes(p)) ?? allowed[0] ?? 'SELF_ONLY';
}

/** The creator's own interaction settings win: a feature they disabled cannot be enabled per post. */
function interaction(ctx: PublishContext, option: string, creatorDisabled: boolean | undefined): boolean {
  return ctx.options[option] === true || creatorDisabled === true;
}

/** Cut to at most `max` UTF-16 code units (TikTok counts "UTF-16 runes") without splitting a character. */
function cutUtf16(text: string, max: number): string {
  let out = '';
  for (const ch of text) {
    if (out.length + ch.length > max) break;
    out += ch;
  }
  return out;
}

function handleOf(ctx: { channel: { handle: string } }): string {
  return ctx.channel.handle.replace(/^@/, '');
}

function toResult(
  ctx: PublishContext,
  publishId: string,
  media: MediaKind,
  st: PublishStatus,
  mode: Mode,
): PublishResult {
  // Sent to the creator's inbox: the post is theirs to finish; Herald keeps the publish_id.
  if (mode === 'inbox') return { externalId: publishId, url: null };
  const id = st.publicaly_available_post_id?.[0];
  if (!id) return { externalId: publishId, url: null };
  return { externalId: id, url: `https://www.tiktok.com/@${handleOf(ctx)}/${media}/${id}` };
}

async function fetchStatus(tokens: OAuthTokens, publishId: string): Promise<PublishStatus> {
  return api<PublishStatus>(tokens, '/v2/post/publish/status/fetch/', { publish_id: publishId });
}

/** Poll until TikTok has published (or refused) the post; still processing after the budget → retry later. */
async function waitForPost(
  tokens: OAuthTokens,
  ctx: PublishContext,
  publishId: string,
  media: MediaKind,
  mode: Mode,
) {
  const done = await pollWithin(polling, async () => {
    const st = await fetchStatus(tokens, publishId);
    // SEND_TO_USER_INBOX ends an inbox upload (the creator was notified); PUBLISH_COMPLETE a direct
    // post, or an inbox one the creator already finished.
    if (st.status === 'PUBLISH_COMPLETE' || st.status === 'SEND_TO_USER_INBOX')
      return toResult(ctx, publishId, media, st, mode);
    if (st.status === 'FAILED') throw failReasonError(st.fail_reason, publishId);
    return undefined;
  });
  if (done) return done;
  throw new PlatformError('system', `${P}: post ${publishId} is still processing`, { retryAfterSeconds: 60 });
}

type Prior =
  | { kind: 'none' }
  | { kind: 'unknown'; why: string }
  | { kind: 'done'; result: PublishResult }
  | { kind: 'pending'; publishId: string; media: MediaKind; mode: Mode };

/** What an earlier attempt left behind, judged from its checkpoint and TikTok's status of its publish_id. */
async function inspect(tokens: OAuthTokens, ctx: PublishContext): Promise<Prior> {
  const cp = ctx.checkpoint ?? {};
  const media: MediaKind = cp.media === 'photo' ? 'photo' : 'video';
  // Checkpoints from before the inbox mode were all direct posts.
  const mode: Mode = cp.mode === 'inbox' ? 'inbox' : 'direct';
  const publishId = str(cp.publish_id);
  if (!publishId) {
    // A photo init was sent but its answer never recorded: TikTok may have created the post.
    return cp.phase === 'photo_init'
      ? { kind: 'unknown', why: 'a photo post was requested, its publish_id was not recorded' }
      : { kind: 'none' };
  }
  let st: PublishStatus;
  try {
    st = await fetchStatus(tokens, publishId);
  } catch (err) {
    if (err instanceof PlatformError && err.category === 'user_content') {
      return { kind: 'unknown', why: `TikTok no longer knows publish_id ${publishId}` };
    }
    throw err;
  }
  switch (st.status) {
    case 'PUBLISH_COMPLETE':
    case 'SEND_TO_USER_INBOX':
      return { kind: 'done', result: toResult(ctx, publishId, media, st, mode) };
    case 'FAILED':
      return { kind: 'none' };
    case 'PROCESSING_UPLOAD': {
      // Only we hold the upload URL: an upload that stopped short can never turn into a post.
      const size = typeof cp.video_size === 'number' ? cp.video_size : undefined;
      if (
        media === 'video' &&
        size !== undefined &&
        typeof st.uploaded_bytes === 'number' &&
        st.uploaded_bytes < size
      ) {
        return { kind: 'none' };
      }
      return { kind: 'pending', publishId, media, mode };
    }
    default:
      return { kind: 'pending', publishId, media, mode };
  }
}

async function creatorInfo(tokens: OAuthTokens): Promise<CreatorInfo> {
  return api<CreatorInfo>(tokens, '/v2/post/publish/creator_info/query/');
}

/** TikTok's refusal of an unaudited app's public post, with what the operator or the author can do. */
function explainRefusal(err: unknown): unknown {
  if (
    err instanceof PlatformError &&
    err.message.includes('unaudited_client_can_only_post_to_private_accounts')
  ) {
    return new PlatformError(
      err.category,
      `${err.message} — the platform app is not audited by TikTok: post with post_mode inbox or privacy_level SELF_ONLY (or, once TikTok has audited the app, herald platform-app set --platform tiktok --audited yes)`,
      err.opts,
    );
  }
  return err;
}

async function postVideo(
  tokens: OAuthTokens,
  ctx: PublishContext,
  video: MediaInput,
  mode: Mode,
): Promise<PublishResult> {
  const size = video.sizeBytes;
  if (size === 0) throw new PlatformError('media_error', `${P}: the video is empty`, { retryable: false });
  // One ranged read per chunk: an attempt holds a chunk (the last one < 2 × CHUNK), not the video.
  // total_chunk_count = floor(size / chunk_size); the last chunk carries the remainder.
  const chunkSize = size < CHUNK ? size : CHUNK;
  const count = Math.floor(size / chunkSize);
  const source_info = {
    source: 'FILE_UPLOAD',
    video_size: size,
    chunk_size: chunkSize,
    total_chunk_count: count,
  };

  let init: { publish_id?: string; upload_url?: string };
  if (mode === 'inbox') {
    // The upload endpoint takes source_info only: caption, privacy and disclosure are set by the
    // creator in TikTok's editing flow.
    init = await api(tokens, '/v2/post/publish/inbox/video/init/', { source_info });
  } else {
    const info = await creatorInfo(tokens);
    const cover = ctx.options.cover_timestamp_ms;
    init = await api<{ publish_id?: string; upload_url?: string }>(tokens, '/v2/post/publish/video/init/', {
      post_info: {
        title: ctx.text,
        privacy_level: privacyLevel(ctx, info),
        disable_comment: interaction(ctx, 'disable_comment', info.comment_disabled),
        disable_duet: interaction(ctx, 'disable_duet', info.duet_disabled),
        disable_stitch: interaction(ctx, 'disable_stitch', info.stitch_disabled),
        ...(typeof cover === 'number' ? { video_cover_timestamp_ms: cover } : {}),
        ...disclosure(ctx, { aigc: true }),
      },
      source_info,
    }).catch((err: unknown) => {
      throw explainRefusal(err);
    });
  }
  const publishId = str(init.publish_id);
  const uploadUrl = str(init.upload_url);
  if (!publishId || !uploadUrl)
    throw new PlatformError('system', `${P}: video init answered without publish_id/upload_url`);
  // The complete upload publishes the post: record the publish_id first so a crash can be reconciled.
  await ctx.saveCheckpoint({ publish_id: publishId, media: 'video', video_size: size, mode });

  const clock = uploadClock();
  for (let i = 0; i < count; i++) {
    const start = i * chunkSize;
    // TikTok's upload cannot resume: out of time, this attempt gives it up (inspect sees it short).
    if (i > 0 && clock.spent()) throw outOfTime(P, start, size);
    const end = i === count - 1 ? size : start + chunkSize;
    const res = await putChunk(uploadUrl, {
      method: 'PUT',
      timeoutMs: clock.remainingMs(),
      headers: { 'content-type': video.contentType, 'content-range': `bytes ${start}-${end - 1}/${size}` },
      body: await video.readRange(start, end),
    });
    // 206 Partial Content after a chunk, 201 Created after the last one.
    if (res.status !== 206 && res.status !== 201 && res.status !== 200) {
      throw uploadError(`${P}: video upload chunk ${i + 1}/${count}: ${res.status}`, res.status);
    }
  }
  return waitForPost(tokens, ctx, publishId, 'video', mode);
}

const PHOTO_TYPES = ['image/jpeg', 'image/webp'];

async function postPhotos(
  tokens: OAuthTokens,
  ctx: PublishContext,
  photos: MediaInput[],
  mode: Mode,
): Promise<PublishResult> {
  const wrong = photos.find((p) => !PHOTO_TYPES.includes(p.contentType));
  if (wrong) {
    throw new PlatformError(
      'media_error',
      `${P}: photo posts take JPEG or WebP images, not ${wrong.contentType}`,
      {
        retryable: false,
      },
    );
  }
  const title = ctx.title ? cutUtf16(ctx.title, 90) : '';
  let post_info: Record<string, unknown> = { ...(title ? { title } : {}), description: ctx.text };
  if (mode === 'direct') {
    const info = await creatorInfo(tokens);
    post_info = {
      ...post_info,
      privacy_level: privacyLevel(ctx, info),
      disable_comment: interaction(ctx, 'disable_comment', info.comment_disabled),
      auto_add_music: true,
      // The photo reference documents the two brand toggles, not is_aigc.
      ...disclosure(ctx, { aigc: false }),
    };
  }
  const body = {
    media_type: 'PHOTO',
    // Photo reference: DIRECT_POST posts at once; MEDIA_UPLOAD sends it to the creator's inbox.
    post_mode: mode === 'inbox' ? 'MEDIA_UPLOAD' : 'DIRECT_POST',
    post_info,
    source_info: { source: 'PULL_FROM_URL', photo_images: photos.map((p) => p.url), photo_cover_index: 0 },
  };
  // This one request creates the post (TikTok pulls the photos itself): mark it before sending.
  await ctx.saveCheckpoint({ phase: 'photo_init', media: 'photo', mode });
  let data: { publish_id?: string };
  try {
    data = await api<{ publish_id?: string }>(tokens, '/v2/post/publish/content/init/', body);
  } catch (err) {
    // A 4xx answer means TikTok refused the request: nothing was created.
    if (err instanceof PlatformError && err.opts.status !== undefined && err.opts.status < 500)
      await ctx.saveCheckpoint({});
    throw explainRefusal(err);
  }
  const publishId = str(data.publish_id);
  if (!publishId) throw outcomeUnknown(P, 'photo init answered without a publish_id');
  await ctx.saveCheckpoint({ publish_id: publishId, media: 'photo', mode });
  return waitForPost(tokens, ctx, publishId, 'photo', mode);
}

export async function publish(ctx: PublishContext): Promise<PublishResult> {
  const tokens = await OAuthTokens.open(ctx);
  const prior = await inspect(tokens, ctx);
  if (prior.kind === 'done') return prior.result;
  if (prior.kind === 'pending') return waitForPost(tokens, ctx, prior.publishId, prior.media, prior.mode);
  if (prior.kind === 'unknown') throw outcomeUnknown(P, prior.why);

  const mode = postMode(ctx);
  const video = ctx.media.find((m) => m.type === 'video');
  if (video) return postVideo(tokens, ctx, video, mode);
  const photos = ctx.media.filter((m) => m.type === 'image');
  if (photos.length) return postPhotos(tokens, ctx, photos, mode);
  throw new PlatformError('user_content', `${P}: a post needs a video or photos`, { retryable: false });
}

export async function reconcile(ctx: PublishContext): Promise<PublishResult | null> {
  if (!ctx.checkpoint) return null;
  const tokens = await OAuthTokens.open(ctx);
  const prior = await inspect(tokens, ctx);
  switch (prior.kind) {
    case 'none':
      return null;
    case 'done':
      return prior.result;
    case 'unknown':
      throw outcomeUnknown(P, prior.why);
    case 'pending':
      return waitForPost(tokens, ctx, prior.publishId, prior.media, prior.mode);
  }
}
