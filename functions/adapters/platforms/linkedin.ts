import { type HttpResponse, platformOrigin, request, retryAfterSeconds } from './http.ts';
import { OAuthTokens } from './oauth.ts';
import { sleep } from './support.ts';
import {
  type Connector,
  type Engagement,
  type MediaInput,
  PlatformError,
  type PublishContext,
  type PublishResult,
  type TokenSource,
} from './types.ts';

// LinkedIn's versioned REST API (https://api.linkedin.com/rest, Posts / Images / Videos /
// socialMetadata). Every call sends `LinkedIn-Version` and `X-Restli-Protocol-Version: 2.0.0`.
// Credentials: access_token (+ refresh_token/expires_at for apps LinkedIn granted programmatic
// refresh), account_id = the author URN (urn:li:person:… or urn:li:organization:…).
//
// Tokens: the channel's token source renews them (usecases/channel-tokens.ts, through the one OAuth client).
//
// `commentary` is "little text": ( ) [ ] { } < > @ # * _ ~ | \ are markup, and LinkedIn silently
// drops text after an unescaped one. We backslash-escape them so the text arrives as written.
//
// No idempotency key on POST /rest/posts. We checkpoint before it; reconcile (and a retry after an
// unanswered create) looks the post up among the author's recent posts by its commentary, and a
// repeat that LinkedIn refuses as DUPLICATE_POST names the earlier post's URN, which we then report.

const API = 'https://api.linkedin.com';
export const LINKEDIN_VERSION = '202605';
const POLL_BUDGET_MS = 180_000;

const apiOrigin = () => platformOrigin('linkedin', API);

interface LiError {
  status?: number;
  message?: string;
  code?: string;
  serviceErrorCode?: number;
  errorDetails?: { inputErrors?: Array<{ code?: string; description?: string }> };
  error?: string;
  error_description?: string;
}

interface LiPost {
  id: string;
  author: string;
  commentary?: string;
  createdAt?: number;
  publishedAt?: number;
  lifecycleState?: string;
}

function describe(res: HttpResponse): string {
  if (typeof res.body !== 'object' || !res.body) return typeof res.body === 'string' ? res.body : '';
  const b = res.body as LiError;
  const inputs = b.errorDetails?.inputErrors
    ?.map((e) => e.code ?? e.description)
    .filter(Boolean)
    .join(', ');
  return [b.code, b.message, inputs, b.error, b.error_description].filter(Boolean).join(': ');
}

/** Seconds until LinkedIn's daily quota window resets (midnight UTC), for "DAY limit" throttles. */
function untilUtcMidnight(): number {
  const now = new Date();
  return Math.ceil(
    (Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) - now.getTime()) / 1000,
  );
}

function linkedinError(res: HttpResponse, what: string, media = false): PlatformError {
  const detail = describe(res);
  const msg = `linkedin: ${what} ${res.status}${detail ? ` ${detail}` : ''}`.slice(0, 500);
  const status = res.status;
  if (status === 401) return new PlatformError('auth_expired', msg, { status, retryable: false });
  if (status === 429) {
    const hint = retryAfterSeconds(res.headers) ?? (/\bDAY\b/.test(detail) ? untilUtcMidnight() : undefined);
    return new PlatformError('rate_limited', msg, { status, retryAfterSeconds: hint });
  }
  if (status >= 500)
    return new PlatformError('system', msg, { status, retryAfterSeconds: retryAfterSeconds(res.headers) });
  if (status === 403) return new PlatformError('platform_rejected', msg, { status, retryable: false });
  if (media || status === 413 || status === 415)
    return new PlatformError('media_error', msg, { status, retryable: false });
  return new PlatformError('user_content', msg, { status, retryable: false });
}

// ---------------------------------------------------------------------------------------------
// Tokens

class Auth extends OAuthTokens {
  constructor(ctx: { tokens: TokenSource }) {
    super(ctx.tokens);
  }

  get author(): string {
    const urn = String(this.credentials.account_id ?? '');
    if (!/^urn:li:(person|organization):/.test(urn)) {
      throw new PlatformError('auth_expired', 'linkedin: channel has no author URN (account_id)', {
        retryable: false,
      });
    }
    return urn;
  }
}

interface CallInit {
  json?: unknown;
  bytes?: Uint8Array;
  timeoutMs?: number;
}

/** A call to the REST API (path) or to an upload URL LinkedIn handed out (absolute). */
async function call<T>(
  auth: Auth,
  method: string,
  pathOrUrl: string,
  init: CallInit = {},
): Promise<HttpResponse<T>> {
  const url = /^https?:\/\//.test(pathOrUrl) ? pathOrUrl : `${apiOrigin()}${pathOrUrl}`;
  return auth.retrying401(async () => {
    const headers: Record<string, string> = { authorization: `Bearer ${await auth.token()}` };
    let body: RequestInit['body'];
    if (!/^https?:\/\//.test(pathOrUrl)) {
      headers['linkedin-version'] = LINKEDIN_VERSION;
      headers['x-restli-protocol-version'] = '2.0.0';
    }
    if (init.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(init.json);
    } else if (init.bytes) {
      headers['content-type'] = 'application/octet-stream';
      body = init.bytes;
    }
    return request<T>('linkedin', url, { method, headers, body, timeoutMs: init.timeoutMs });
  });
}

async function ok<T>(
  auth: Auth,
  method: string,
  path: string,
  init: CallInit = {},
  media = false,
): Promise<HttpResponse<T>> {
  const res = await call<T>(auth, method, path, init);
  if (res.status < 200 || res.status >= 300)
    throw linkedinError(res, `${method} ${path.split('?')[0]}`, media);
  return res;
}

// ---------------------------------------------------------------------------------------------
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
      {},
      true,
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
  const bytes = await item.read();
  const init = await ok<{ value: { uploadUrl: string; image: string } }>(
    auth,
    'POST',
    '/rest/images?action=initializeUpload',
    { json: { initializeUploadRequest: { owner: auth.author } } },
    true,
  );
  const put = await call(auth, 'PUT', init.body.value.uploadUrl, { bytes, timeoutMs: 120_000 });
  if (put.status < 200 || put.status >= 300) throw linkedinError(put, 'PUT image upload', true);
  await waitAvailable(auth, 'images', init.body.value.image);
  return init.body.value.image;
}

async function uploadVideo(auth: Auth, item: MediaInput): Promise<string> {
  const bytes = await item.read();
  const init = await ok<{
    value: {
      video: string;
      uploadToken?: string;
      uploadInstructions: Array<{ uploadUrl: string; firstByte: number; lastByte: number }>;
    };
  }>(
    auth,
    'POST',
    '/rest/videos?action=initializeUpload',
    {
      json: {
        initializeUploadRequest: {
          owner: auth.author,
          fileSizeBytes: bytes.byteLength,
          uploadCaptions: false,
          uploadThumbnail: false,
        },
      },
    },
    true,
  );
  const { video, uploadToken = '', uploadInstructions } = init.body.value;
  const etags: string[] = [];
  for (const part of uploadInstructions) {
    const put = await call(auth, 'PUT', part.uploadUrl, {
      bytes: bytes.subarray(part.firstByte, part.lastByte + 1),
      timeoutMs: 120_000,
    });
    if (put.status < 200 || put.status >= 300) throw linkedinError(put, 'PUT video part', true);
    const etag = put.headers.get('etag');
    if (!etag) throw new PlatformError('system', 'linkedin: video part upload answered without an ETag');
    etags.push(etag);
  }
  await ok(
    auth,
    'POST',
    '/rest/videos?action=finalizeUpload',
    { json: { finalizeUploadRequest: { video, uploadToken, uploadedPartIds: etags } } },
    true,
  );
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

// ---------------------------------------------------------------------------------------------
// Little text

const RESERVED = /[\\|{}@[\]()<>#*_~]/g;
export const escapeLittleText = (text: string) => text.replace(RESERVED, (c) => `\\${c}`);
export const unescapeLittleText = (text: string) => text.replace(/\\([\\|{}@[\]()<>#*_~])/g, '$1');

const permalink = (urn: string) => `https://www.linkedin.com/feed/update/${urn}`;

async function lookup(auth: Auth, ctx: PublishContext): Promise<PublishResult | null> {
  const since = ctx.attemptStartedAt.getTime() - 2 * 60_000;
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

async function saveQuietly(ctx: PublishContext, checkpoint: Record<string, unknown>) {
  try {
    await ctx.saveCheckpoint(checkpoint);
  } catch {
    // The post exists; failing to note it must not turn a success into a failure.
  }
}

async function publish(ctx: PublishContext): Promise<PublishResult> {
  const auth = new Auth(ctx);
  const sentBefore = ctx.checkpoint?.stage === 'posting';
  if (sentBefore) {
    const found = await lookup(auth, ctx).catch(() => null);
    if (found) {
      await saveQuietly(ctx, { stage: 'published', externalId: found.externalId, url: found.url });
      return found;
    }
  }
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
    if (sentBefore && duplicateOf) {
      const result = { externalId: duplicateOf, url: permalink(duplicateOf) };
      await saveQuietly(ctx, { stage: 'published', externalId: result.externalId, url: result.url });
      return result;
    }
    throw err;
  }
  const urn = res.headers.get('x-restli-id') ?? res.headers.get('x-linkedin-id');
  if (!urn)
    throw new PlatformError('system', 'linkedin: post created without an x-restli-id header', {
      retryable: false,
    });
  const result = { externalId: urn, url: permalink(urn) };
  await saveQuietly(ctx, { stage: 'published', externalId: urn, url: result.url });
  return result;
}

async function reconcile(ctx: PublishContext): Promise<PublishResult | null> {
  const cp = ctx.checkpoint;
  if (cp?.stage === 'published' && typeof cp.externalId === 'string') {
    return { externalId: cp.externalId, url: typeof cp.url === 'string' ? cp.url : permalink(cp.externalId) };
  }
  // No checkpoint before POST /rest/posts: the attempt died before it, so there is no post.
  if (cp?.stage !== 'posting') return null;
  const auth = new Auth(ctx);
  try {
    return await lookup(auth, ctx);
  } catch (err) {
    if (err instanceof PlatformError && (err.category === 'auth_expired' || err.category === 'rate_limited'))
      throw err;
    // Typically 403: reading a member's posts needs r_member_social, which most apps do not have.
    const detail = err instanceof Error ? err.message : String(err);
    throw new PlatformError(
      'system',
      `linkedin: outcome unknown, the author's posts could not be read: ${detail}`,
      {
        retryable: err instanceof PlatformError ? err.retryable : false,
      },
    );
  }
}

interface SocialMetadata {
  reactionSummaries?: Record<string, { count?: number }>;
  commentSummary?: { count?: number; topLevelCount?: number };
}

export const connector: Connector = {
  publish,
  reconcile,
  // Reactions and comments per post from the socialMetadata API. Impressions and shares need the
  // organization/member analytics products, which a plain posting app does not have: 0 here.
  async metrics(ctx) {
    const auth = new Auth(ctx);
    const out: Record<string, Engagement> = {};
    for (const urn of ctx.externalIds) {
      const res = await call<SocialMetadata>(auth, 'GET', `/rest/socialMetadata/${encodeURIComponent(urn)}`);
      if (res.status === 404) continue;
      if (res.status !== 200) throw linkedinError(res, 'GET /rest/socialMetadata');
      const reactions = Object.values(res.body.reactionSummaries ?? {}).reduce(
        (n, r) => n + (r.count ?? 0),
        0,
      );
      out[urn] = {
        impressions: 0,
        likes: reactions,
        comments: res.body.commentSummary?.count ?? 0,
        shares: 0,
        clicks: 0,
      };
    }
    return out;
  },
};
