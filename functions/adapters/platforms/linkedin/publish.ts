import { orOutcomeUnknown, publishedIn, searchFrom, sleep } from '../support.ts';
import { type MediaInput, PlatformError, type PublishContext, type PublishResult } from '../types.ts';
import { fileBody, outOfTime, UPLOAD_REQUEST_MS, uploadClock } from '../upload.ts';
import { Auth, call, ok } from './client.ts';
import { describe, linkedinError } from './errors.ts';

// Posts, Images and Videos of LinkedIn's REST API.
//
// `commentary` is "little text": ( ) [ ] { } < > @ # * _ ~ | \ are markup, and LinkedIn silently
// drops text after an unescaped one. We backslash-escape them so the text arrives as written.
//
// No idempotency key on POST /rest/posts. We checkpoint before it; reconcile (the worker's, while an
// earlier attempt may have made the post) looks the post up among the author's recent posts by its
// commentary, and a repeat that LinkedIn refuses as DUPLICATE_POST names the earlier post's URN,
// which we then report.

const POLL_BUDGET_MS = 20_000; // the worker's Lambda stops at 60 s, with the batch's other deliveries

interface LiPost {
  id: string;
  author: string;
  commentary?: string;
  createdAt?: number;
  publishedAt?: number;
  lifecycleState?: string;
}

// Media

/** Images and videos are usable in a post once their status is AVAILABLE. */
async function waitAvailable(auth: Auth, kind: 'images' | 'videos', urn: string): Promise<void> {
  const started = Date.now();
  let wait = 250;
  for (;;) {
    const res = await ok<{ status?: string; processingFailureReason?: string }>(
      auth,
      'GET',
      `/rest/${kind}/${encodeURIComponent(urn)}`,
      { media: true },
    );
    const status = res.body.status;
    if (status === 'AVAILABLE') return;
    if (status === 'PROCESSING_FAILED') {
      throw new PlatformError(
        'media_error',
        `linkedin: ${urn} processing failed${res.body.processingFailureReason ? `: ${res.body.processingFailureReason}` : ''}`,
        {
          retryable: false,
        },
      );
    }
    if (Date.now() - started > POLL_BUDGET_MS)
      throw new PlatformError('system', `linkedin: ${urn} is still ${status ?? 'processing'}`, {
        retryAfterSeconds: 60,
      });
    await sleep(wait);
    wait = Math.min(wait * 2, 5000);
  }
}

async function uploadImage(auth: Auth, item: MediaInput): Promise<string> {
  const init = await ok<{ value: { uploadUrl: string; image: string } }>(
    auth,
    'POST',
    '/rest/images?action=initializeUpload',
    { json: { initializeUploadRequest: { owner: auth.author } }, media: true },
  );
  const put = await call(auth, 'PUT', init.body.value.uploadUrl, {
    stream: { ...fileBody(item), contentType: 'application/octet-stream' },
    timeoutMs: UPLOAD_REQUEST_MS,
  });
  if (put.status < 200 || put.status >= 300) throw linkedinError(put, 'PUT image upload', true);
  await waitAvailable(auth, 'images', init.body.value.image);
  return init.body.value.image;
}

// Each part LinkedIn's instructions name is one ranged read (parts are 4 MiB): a part in memory at a time.
async function uploadVideo(auth: Auth, item: MediaInput): Promise<string> {
  const init = await ok<{
    value: {
      video: string;
      uploadToken?: string;
      uploadInstructions: Array<{ uploadUrl: string; firstByte: number; lastByte: number }>;
    };
  }>(auth, 'POST', '/rest/videos?action=initializeUpload', {
    json: {
      initializeUploadRequest: {
        owner: auth.author,
        fileSizeBytes: item.sizeBytes,
        uploadCaptions: false,
        uploadThumbnail: false,
      },
    },
    media: true,
  });
  const { video, uploadToken = '', uploadInstructions } = init.body.value;
  const etags: string[] = [];
  const clock = uploadClock();
  for (const part of uploadInstructions) {
    if (etags.length && clock.spent()) throw outOfTime('linkedin', part.firstByte, item.sizeBytes);
    const put = await call(auth, 'PUT', part.uploadUrl, {
      bytes: await item.readRange(part.firstByte, part.lastByte + 1),
      timeoutMs: clock.remainingMs(),
    });
    if (put.status < 200 || put.status >= 300) throw linkedinError(put, 'PUT video part', true);
    const etag = put.headers.get('etag');
    if (!etag) throw new PlatformError('system', 'linkedin: video part upload answered without an ETag');
    etags.push(etag);
  }
  await ok(auth, 'POST', '/rest/videos?action=finalizeUpload', {
    json: { finalizeUploadRequest: { video, uploadToken, uploadedPartIds: etags } },
    media: true,
  });
  await waitAvailable(auth, 'videos', video);
  return video;
}

async function uploadAll(auth: Auth, media: MediaInput[]): Promise<Array<{ urn: string; item: MediaInput }>> {
  const out: Array<{ urn: string; item: MediaInput }> = [];
  for (const item of media) {
    if (item.type === 'image') out.push({ urn: await uploadImage(auth, item), item });
    else if (item.type === 'video') out.push({ urn: await uploadVideo(auth, item), item });
    else
      throw new PlatformError('media_error', `linkedin: ${item.type} attachments are not supported`, {
        retryable: false,
      });
  }
  return out;
}

function contentFor(uploaded: Array<{ urn: string; item: MediaInput }>): Record<string, unknown> | undefined {
  if (uploaded.length === 0) return undefined;
  const first = uploaded[0];
  if (uploaded.length === 1 && first) {
    return {
      media: {
        id: first.urn,
        ...(first.item.type === 'image' && first.item.alt ? { altText: first.item.alt } : {}),
      },
    };
  }
  return {
    multiImage: {
      images: uploaded.map((u) => ({ id: u.urn, ...(u.item.alt ? { altText: u.item.alt } : {}) })),
    },
  };
}

// Little text

const RESERVED = /[\\|{}@[\]()<>#*_~]/g;
export const escapeLittleText = (text: string) => text.replace(RESERVED, (c) => `\\${c}`);
export const unescapeLittleText = (text: string) => text.replace(/\\([\\|{}@[\]()<>#*_~])/g, '$1');

const permalink = (urn: string) => `https://www.linkedin.com/feed/update/${urn}`;

async function lookup(auth: Auth, ctx: PublishContext): Promise<PublishResult | null> {
  const since = searchFrom(ctx, ctx.checkpoint?.sentAt, 2 * 60_000);
  const qs = `q=author&author=${encodeURIComponent(auth.author)}&count=10&sortBy=LAST_MODIFIED`;
  const res = await ok<{ elements?: LiPost[] }>(auth, 'GET', `/rest/posts?${qs}`);
  const want = ctx.text.trim();
  const hit = (res.body.elements ?? []).find(
    (p) =>
      unescapeLittleText(p.commentary ?? '').trim() === want &&
      (p.createdAt ?? p.publishedAt ?? Date.now()) >= since,
  );
  return hit ? { externalId: hit.id, url: permalink(hit.id) } : null;
}

export async function publish(ctx: PublishContext): Promise<PublishResult> {
  const auth = new Auth(ctx);
  // An earlier attempt that may have made the post was reconciled (looked up) before this one.
  const sentBefore = ctx.checkpoint?.stage === 'posting';
  const uploaded = await uploadAll(auth, ctx.media);
  const content = contentFor(uploaded);
  const body: Record<string, unknown> = {
    author: auth.author,
    commentary: escapeLittleText(ctx.text),
    visibility: typeof ctx.options.visibility === 'string' ? ctx.options.visibility : 'PUBLIC',
    distribution: { feedDistribution: 'MAIN_FEED', targetEntities: [], thirdPartyDistributionChannels: [] },
    lifecycleState: 'PUBLISHED',
    isReshareDisabledByAuthor: false,
    ...(content ? { content } : {}),
  };
  await ctx.saveCheckpoint({
    stage: 'posting',
    media: uploaded.map((u) => u.urn),
    sentAt: new Date().toISOString(),
  });
  const res = await call(auth, 'POST', '/rest/posts', { json: body });
  if (res.status !== 201 && res.status !== 200) {
    const err = linkedinError(res, 'POST /rest/posts');
    const duplicateOf = /duplicate of (urn:li:(?:share|ugcPost):\d+)/i.exec(describe(res))?.[1];
    // Our own earlier, unanswered attempt is the most likely original: report it instead of failing.
    if (sentBefore && duplicateOf) return { externalId: duplicateOf, url: permalink(duplicateOf) };
    throw err;
  }
  const urn = res.headers.get('x-restli-id') ?? res.headers.get('x-linkedin-id');
  if (!urn)
    throw new PlatformError('system', 'linkedin: post created without an x-restli-id header', {
      retryable: false,
    });
  return { externalId: urn, url: permalink(urn) };
}

export async function reconcile(ctx: PublishContext): Promise<PublishResult | null> {
  const done = publishedIn(ctx.checkpoint, permalink);
  if (done) return done;
  // No checkpoint before POST /rest/posts: the attempt died before it, so there is no post.
  if (ctx.checkpoint?.stage !== 'posting') return null;
  const auth = new Auth(ctx);
  // Typically 403: reading a member's posts needs r_member_social, which most apps do not have.
  return orOutcomeUnknown('linkedin', "the author's posts could not be read", () => lookup(auth, ctx));
}
