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

// X (API v2, https://api.x.com) with an OAuth 2.0 user token (credentials access_token, refresh_token,
// expires_at, account_id = the user id). Access tokens live two hours; the channel's token source renews them (usecases/channel-tokens.ts, through the one OAuth client)
// when they expire or X refuses one.
//
// Media uses the v2 media endpoints: images in one POST /2/media/upload (base64 JSON, tweet_image);
// video and GIFs in chunks (POST /2/media/upload/initialize, /{id}/append multipart, /{id}/finalize,
// then GET /2/media/upload?command=STATUS until processing_info.state is succeeded). Alt text goes to
// POST /2/media/metadata.
//
// X has no idempotency key for POST /2/tweets. Before posting we save a checkpoint; a retry or
// reconcile after it looks for the tweet among the user's own tweets since the attempt started
// (GET /2/users/:id/tweets) and compares text the way X rewrites it (t.co links, entities).

const API = 'https://api.x.com';
const CHUNK_BYTES = 4 * 1024 * 1024; // APPEND accepts ≤ 5 MB per segment
const POLL_BUDGET_MS = 180_000;

interface Problem {
  title?: string;
  detail?: string;
  type?: string;
  status?: number;
  errors?: Array<{ message?: string; code?: number; parameters?: unknown }>;
  error?: string;
  error_description?: string;
}

interface MediaData {
  id: string;
  media_key?: string;
  processing_info?: {
    state: 'pending' | 'in_progress' | 'succeeded' | 'failed';
    check_after_secs?: number;
    error?: { name?: string; message?: string };
  };
}

interface Tweet {
  id: string;
  text: string;
  created_at?: string;
  public_metrics?: {
    retweet_count?: number;
    reply_count?: number;
    like_count?: number;
    quote_count?: number;
    impression_count?: number;
  };
}

const origin = () => platformOrigin('x', API);

function describe(res: HttpResponse): string {
  if (typeof res.body !== 'object' || !res.body) return typeof res.body === 'string' ? res.body : '';
  const p = res.body as Problem;
  const inner = p.errors
    ?.map((e) => e.message)
    .filter(Boolean)
    .join('; ');
  return [p.title, p.detail, inner, p.error, p.error_description].filter(Boolean).join(': ');
}

function xError(res: HttpResponse, what: string, media = false): PlatformError {
  const detail = describe(res);
  const msg = `x: ${what} ${res.status}${detail ? ` ${detail}` : ''}`.slice(0, 500);
  const status = res.status;
  if (status === 401) return new PlatformError('auth_expired', msg, { status, retryable: false });
  if (status === 429)
    return new PlatformError('rate_limited', msg, {
      status,
      retryAfterSeconds: retryAfterSeconds(res.headers, 'x-rate-limit-reset'),
    });
  if (status >= 500)
    return new PlatformError('system', msg, { status, retryAfterSeconds: retryAfterSeconds(res.headers) });
  // "You are not allowed to create a Tweet with duplicate content." is about the text, not a policy.
  if (status === 403 && /duplicate content/i.test(detail))
    return new PlatformError('user_content', msg, { status, retryable: false });
  if (status === 403) return new PlatformError('platform_rejected', msg, { status, retryable: false });
  if (media || status === 413 || status === 415)
    return new PlatformError('media_error', msg, { status, retryable: false });
  return new PlatformError('user_content', msg, { status, retryable: false });
}

const isDuplicate = (err: unknown) =>
  err instanceof PlatformError && err.opts.status === 403 && err.category === 'user_content';

// ---------------------------------------------------------------------------------------------
// Tokens

class Auth extends OAuthTokens {
  constructor(ctx: { tokens: TokenSource }) {
    super(ctx.tokens);
  }

  get userId(): string {
    return String(this.credentials.account_id ?? '');
  }
}

async function call<T>(
  auth: Auth,
  method: string,
  path: string,
  init: { json?: unknown; form?: FormData; timeoutMs?: number } = {},
): Promise<HttpResponse<T>> {
  return auth.retrying401(async () => {
    const headers: Record<string, string> = { authorization: `Bearer ${await auth.token()}` };
    let body: RequestInit['body'];
    if (init.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(init.json);
    } else if (init.form) {
      body = init.form;
    }
    return request<T>('x', `${origin()}${path}`, { method, headers, body, timeoutMs: init.timeoutMs });
  });
}

async function ok<T>(
  auth: Auth,
  method: string,
  path: string,
  init: Parameters<typeof call>[3] = {},
  media = false,
): Promise<T> {
  const res = await call<T>(auth, method, path, init);
  if (res.status < 200 || res.status >= 300) throw xError(res, `${method} ${path.split('?')[0]}`, media);
  return res.body;
}

// ---------------------------------------------------------------------------------------------
// Media

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
    const res = await ok<{ data: MediaData }>(auth, 'GET', `/2/media/upload?${qs}`, {}, true);
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
    const res = await ok<{ data: MediaData }>(
      auth,
      'POST',
      '/2/media/upload',
      {
        json: {
          media: Buffer.from(bytes).toString('base64'),
          media_category: 'tweet_image',
        },
        timeoutMs: 120_000,
      },
      true,
    );
    id = res.data.id;
    await waitForProcessing(auth, res.data);
  } else if (item.type === 'video' || gif) {
    const init = await ok<{ data: MediaData }>(
      auth,
      'POST',
      '/2/media/upload/initialize',
      {
        json: {
          media_type: item.contentType,
          total_bytes: bytes.byteLength,
          media_category: gif ? 'tweet_gif' : 'tweet_video',
        },
      },
      true,
    );
    id = init.data.id;
    for (let i = 0, segment = 0; i < bytes.byteLength; i += CHUNK_BYTES, segment++) {
      const form = new FormData();
      form.append('segment_index', String(segment));
      form.append(
        'media',
        new Blob([bytes.subarray(i, i + CHUNK_BYTES)], { type: 'application/octet-stream' }),
        'chunk',
      );
      await ok(
        auth,
        'POST',
        `/2/media/upload/${encodeURIComponent(id)}/append`,
        { form, timeoutMs: 120_000 },
        true,
      );
    }
    const fin = await ok<{ data: MediaData }>(
      auth,
      'POST',
      `/2/media/upload/${encodeURIComponent(id)}/finalize`,
      {},
      true,
    );
    await waitForProcessing(auth, fin.data);
  } else {
    throw new PlatformError('media_error', `x: ${item.type} attachments are not supported`, {
      retryable: false,
    });
  }
  if (item.alt && item.type === 'image') {
    await ok(
      auth,
      'POST',
      '/2/media/metadata',
      { json: { id, metadata: { alt_text: { text: item.alt.slice(0, 1000) } } } },
      true,
    );
  }
  return id;
}

// ---------------------------------------------------------------------------------------------
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
  const start = new Date(ctx.attemptStartedAt.getTime() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
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

async function saveQuietly(ctx: PublishContext, checkpoint: Record<string, unknown>) {
  try {
    await ctx.saveCheckpoint(checkpoint);
  } catch {
    // The tweet exists; failing to note it must not turn a success into a failure.
  }
}

async function publish(ctx: PublishContext): Promise<PublishResult> {
  const auth = new Auth(ctx);
  const sentBefore = ctx.checkpoint?.stage === 'posting';
  if (sentBefore) {
    // An earlier attempt sent POST /2/tweets and never learned the answer: look before posting again.
    const found = await lookup(auth, ctx).catch(() => null);
    if (found) {
      await saveQuietly(ctx, { stage: 'published', externalId: found.externalId, url: found.url });
      return found;
    }
  }
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
      const found = await lookup(auth, ctx).catch(() => null);
      if (found) return found;
      throw new PlatformError(
        'system',
        'x: outcome unknown: refused as duplicate of a tweet an earlier attempt may have made',
        { retryable: false },
      );
    }
    throw err;
  }
  const result = { externalId: tweet.data.id, url: permalink(ctx, tweet.data.id) };
  await saveQuietly(ctx, { stage: 'published', externalId: result.externalId, url: result.url });
  return result;
}

async function reconcile(ctx: PublishContext): Promise<PublishResult | null> {
  const cp = ctx.checkpoint;
  if (cp?.stage === 'published' && typeof cp.externalId === 'string') {
    return {
      externalId: cp.externalId,
      url: typeof cp.url === 'string' ? cp.url : permalink(ctx, cp.externalId),
    };
  }
  // Nothing saved before POST /2/tweets: the attempt died before it, no tweet exists.
  if (cp?.stage !== 'posting') return null;
  const auth = new Auth(ctx);
  try {
    return await lookup(auth, ctx);
  } catch (err) {
    if (err instanceof PlatformError && (err.category === 'auth_expired' || err.category === 'rate_limited'))
      throw err;
    const detail = err instanceof Error ? err.message : String(err);
    throw new PlatformError(
      'system',
      `x: outcome unknown, the user's tweets could not be searched: ${detail}`,
      {
        retryable: err instanceof PlatformError ? err.retryable : false,
      },
    );
  }
}

export const connector: Connector = {
  publish,
  reconcile,
  async metrics(ctx) {
    const auth = new Auth(ctx);
    const out: Record<string, Engagement> = {};
    for (let i = 0; i < ctx.externalIds.length; i += 100) {
      const qs = new URLSearchParams({
        ids: ctx.externalIds.slice(i, i + 100).join(','),
        'post.fields': 'public_metrics',
      });
      const res = await ok<{ data?: Tweet[] }>(auth, 'GET', `/2/tweets?${qs}`);
      for (const t of res.data ?? []) {
        const m = t.public_metrics ?? {};
        out[t.id] = {
          impressions: m.impression_count ?? 0,
          likes: m.like_count ?? 0,
          comments: m.reply_count ?? 0,
          shares: (m.retweet_count ?? 0) + (m.quote_count ?? 0),
          clicks: 0,
        };
      }
    }
    return out;
  },
};
