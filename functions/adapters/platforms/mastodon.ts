import { type HttpResponse, request, retryAfterSeconds } from './http.ts';
import { sleep } from './support.ts';
import {
  type Connector,
  type Credentials,
  type Engagement,
  type MediaInput,
  PlatformError,
  type PublishContext,
  type PublishResult,
} from './types.ts';
import { userOriginFetch } from './user-origin.ts';

// Mastodon's REST API on the channel's own instance (credentials `instance` + `access_token`; Mastodon
// tokens do not expire, so there is nothing to refresh: a 401 means the user revoked the app).
//
// Media: POST /api/v2/media answers 200 when the attachment is ready or 202 while the instance still
// transcodes it (url null); we poll GET /api/v1/media/:id (206 while processing) before posting,
// because a status with unprocessed media is refused.
//
// Duplicates: POST /api/v1/statuses takes an Idempotency-Key header; the instance remembers it for an
// hour and answers a repeat with the status it already made. We send ctx.idempotencyKey, so a retry
// or a reconcile inside that hour re-sends and gets the original post back. Older than that,
// reconcile looks the text up among the account's own statuses since the attempt started.

const IDEMPOTENCY_WINDOW_MS = 55 * 60 * 1000; // the server keeps keys 1 h; keep a margin
const POLL_BUDGET_MS = 120_000;

interface Status {
  id: string;
  url: string | null;
  uri: string;
  created_at: string;
  content: string;
  spoiler_text?: string;
  favourites_count?: number;
  reblogs_count?: number;
  replies_count?: number;
}

interface Attachment {
  id: string;
  type: string;
  url: string | null;
}

function originOf(creds: Credentials): string {
  const instance = String(creds.instance ?? '').replace(/\/+$/, '');
  if (!/^https?:\/\//.test(instance))
    throw new PlatformError('auth_expired', 'mastodon: channel has no instance origin', { retryable: false });
  return instance;
}

function tokenOf(creds: Credentials): string {
  const token = String(creds.access_token ?? '');
  if (!token)
    throw new PlatformError('auth_expired', 'mastodon: channel has no access_token', { retryable: false });
  return token;
}

/** X-RateLimit-Reset is an ISO 8601 timestamp on Mastodon (not epoch seconds). */
function resetSeconds(headers: Headers): number | undefined {
  const hint = retryAfterSeconds(headers);
  if (hint !== undefined) return hint;
  const reset = headers.get('x-ratelimit-reset');
  if (!reset) return undefined;
  let at = Date.parse(reset);
  if (Number.isNaN(at)) at = Date.parse(reset.replace(/\.(\d{3})\d+/, '.$1'));
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

function mastodonError(res: HttpResponse, what: string, media = false): PlatformError {
  const body = (typeof res.body === 'object' && res.body ? res.body : {}) as {
    error?: string;
    error_description?: string;
  };
  const detail = body.error ?? (typeof res.body === 'string' ? res.body : '');
  const msg = `mastodon: ${what} ${res.status}${detail ? ` ${detail}` : ''}`.slice(0, 500);
  const status = res.status;
  if (status === 401) return new PlatformError('auth_expired', msg, { status, retryable: false });
  if (status === 429)
    return new PlatformError('rate_limited', msg, { status, retryAfterSeconds: resetSeconds(res.headers) });
  if (status >= 500)
    return new PlatformError('system', msg, { status, retryAfterSeconds: retryAfterSeconds(res.headers) });
  // The instance has not finished transcoding an attachment: a later attempt will succeed.
  if (status === 422 && /finished processing/i.test(detail))
    return new PlatformError('system', msg, { status, retryAfterSeconds: 30 });
  if (status === 403) return new PlatformError('platform_rejected', msg, { status, retryable: false });
  if (media || status === 413 || status === 415)
    return new PlatformError('media_error', msg, { status, retryable: false });
  return new PlatformError('user_content', msg, { status, retryable: false });
}

export class Api {
  constructor(
    private readonly origin: string,
    private readonly token: string,
  ) {}

  static of(creds: Credentials) {
    return new Api(originOf(creds), tokenOf(creds));
  }

  call<T>(
    method: string,
    path: string,
    init: { json?: unknown; form?: FormData; headers?: Record<string, string>; timeoutMs?: number } = {},
  ) {
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, ...init.headers };
    let body: RequestInit['body'];
    if (init.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(init.json);
    } else if (init.form) {
      body = init.form; // fetch sets multipart/form-data with its boundary
    }
    return request<T>('mastodon', `${this.origin}${path}`, {
      method,
      headers,
      body,
      timeoutMs: init.timeoutMs,
      fetch: userOriginFetch(),
    });
  }

  async ok<T>(
    method: string,
    path: string,
    init: Parameters<Api['call']>[2] = {},
    media = false,
  ): Promise<T> {
    const res = await this.call<T>(method, path, init);
    if (res.status < 200 || res.status >= 300)
      throw mastodonError(res, `${method} ${path.split('?')[0]}`, media);
    return res.body;
  }
}

async function upload(api: Api, item: MediaInput): Promise<string> {
  const bytes = await item.read();
  const form = new FormData();
  form.append('file', new Blob([bytes], { type: item.contentType }), item.filename);
  if (item.alt) form.append('description', item.alt);
  const res = await api.call<Attachment>('POST', '/api/v2/media', { form, timeoutMs: 300_000 });
  if (res.status !== 200 && res.status !== 202) throw mastodonError(res, 'POST /api/v2/media', true);
  let attachment = res.body;
  const started = Date.now();
  let wait = 300;
  // 202 (or a null url): still transcoding. GET answers 206 until the file is ready, then 200.
  while (res.status === 202 || !attachment.url) {
    if (Date.now() - started > POLL_BUDGET_MS) {
      throw new PlatformError('system', `mastodon: media ${attachment.id} is still processing`, {
        retryAfterSeconds: 60,
      });
    }
    await sleep(wait);
    wait = Math.min(wait * 2, 5000);
    const poll = await api.call<Attachment>('GET', `/api/v1/media/${encodeURIComponent(attachment.id)}`);
    if (poll.status === 206) continue;
    if (poll.status !== 200) throw mastodonError(poll, 'GET /api/v1/media/:id', true);
    attachment = poll.body;
    if (attachment.url) break;
  }
  return attachment.id;
}

function statusParams(ctx: PublishContext, mediaIds: string[]): Record<string, unknown> {
  const o = ctx.options;
  return {
    status: ctx.text,
    ...(mediaIds.length ? { media_ids: mediaIds } : {}),
    ...(typeof o.visibility === 'string' ? { visibility: o.visibility } : {}),
    ...(typeof o.spoiler_text === 'string' && o.spoiler_text ? { spoiler_text: o.spoiler_text } : {}),
    ...(typeof o.sensitive === 'boolean' ? { sensitive: o.sensitive } : {}),
    ...(typeof o.language === 'string' ? { language: o.language } : {}),
  };
}

const resultOf = (s: Status): PublishResult => ({ externalId: s.id, url: s.url ?? s.uri ?? null });

function postStatus(api: Api, params: Record<string, unknown>, key: string) {
  return api.ok<Status>('POST', '/api/v1/statuses', { json: params, headers: { 'idempotency-key': key } });
}

async function saveQuietly(ctx: PublishContext, checkpoint: Record<string, unknown>) {
  try {
    await ctx.saveCheckpoint(checkpoint);
  } catch {
    // The status exists; failing to note it must not turn a success into a failure.
  }
}

async function publish(ctx: PublishContext): Promise<PublishResult> {
  const api = Api.of(ctx.credentials);
  const mediaIds: string[] = [];
  for (const item of ctx.media) mediaIds.push(await upload(api, item));
  const params = statusParams(ctx, mediaIds);
  await ctx.saveCheckpoint({ stage: 'posting', params, sentAt: new Date().toISOString() });
  const status = await postStatus(api, params, ctx.idempotencyKey);
  const result = resultOf(status);
  await saveQuietly(ctx, { stage: 'published', externalId: result.externalId, url: result.url });
  return result;
}

// --- reconcile: text matching against the HTML Mastodon renders statuses as -------------------

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

export function htmlToText(html: string): string {
  return html
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/p>\s*<p[^>]*>/gi, '\n\n')
    .replace(/<[^>]+>/g, '')
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
      if (e[0] === '#')
        return String.fromCodePoint(
          e[1] === 'x' || e[1] === 'X' ? Number.parseInt(e.slice(2), 16) : Number(e.slice(1)),
        );
      return ENTITIES[e.toLowerCase()] ?? m;
    });
}

/** Mastodon reflows whitespace and linkifies; compare the characters that carry meaning. */
const comparable = (s: string) => s.normalize('NFC').replace(/\s+/gu, '');

async function lookup(api: Api, ctx: PublishContext): Promise<PublishResult | null> {
  const me = await api.ok<{ id: string }>('GET', '/api/v1/accounts/verify_credentials');
  const since = ctx.attemptStartedAt.getTime() - 2 * 60_000;
  const want = comparable(ctx.text);
  const spoiler = typeof ctx.options.spoiler_text === 'string' ? ctx.options.spoiler_text : '';
  let maxId: string | undefined;
  for (let page = 0; page < 5; page++) {
    const qs = new URLSearchParams({ limit: '40', exclude_reblogs: 'true' });
    if (maxId) qs.set('max_id', maxId);
    const statuses = await api.ok<Status[]>(
      'GET',
      `/api/v1/accounts/${encodeURIComponent(me.id)}/statuses?${qs}`,
    );
    for (const s of statuses) {
      if (Date.parse(s.created_at) < since) continue;
      if (comparable(htmlToText(s.content)) === want && (s.spoiler_text ?? '') === spoiler)
        return resultOf(s);
    }
    const oldest = statuses.at(-1);
    if (!oldest || Date.parse(oldest.created_at) < since) return null;
    maxId = oldest.id;
  }
  return null;
}

async function reconcile(ctx: PublishContext): Promise<PublishResult | null> {
  const cp = ctx.checkpoint;
  if (cp?.stage === 'published' && typeof cp.externalId === 'string') {
    return { externalId: cp.externalId, url: typeof cp.url === 'string' ? cp.url : null };
  }
  // Nothing saved: the attempt died before POST /api/v1/statuses, so no status exists.
  if (cp?.stage !== 'posting') return null;
  const api = Api.of(ctx.credentials);
  try {
    const sentAt = Date.parse(String(cp.sentAt ?? ''));
    if (
      !Number.isNaN(sentAt) &&
      Date.now() - sentAt < IDEMPOTENCY_WINDOW_MS &&
      cp.params &&
      typeof cp.params === 'object'
    ) {
      // Inside the idempotency window a repeat returns the status the first request made (or makes
      // it now, if the first never arrived): either way exactly one status.
      try {
        return resultOf(await postStatus(api, cp.params as Record<string, unknown>, ctx.idempotencyKey));
      } catch (err) {
        if (!(err instanceof PlatformError) || err.category !== 'user_content') throw err;
        // e.g. the saved media ids are no longer attachable: fall back to looking.
      }
    }
    return await lookup(api, ctx);
  } catch (err) {
    if (err instanceof PlatformError && (err.category === 'auth_expired' || err.category === 'rate_limited'))
      throw err;
    const detail = err instanceof Error ? err.message : String(err);
    throw new PlatformError('system', `mastodon: outcome unknown: ${detail}`, {
      retryable: err instanceof PlatformError ? err.retryable : false,
    });
  }
}

export const connector: Connector = {
  publish,
  reconcile,
  async metrics(ctx) {
    const api = Api.of(ctx.credentials);
    const out: Record<string, Engagement> = {};
    for (const id of ctx.externalIds) {
      const res = await api.call<Status>('GET', `/api/v1/statuses/${encodeURIComponent(id)}`);
      if (res.status === 404) continue; // deleted since
      if (res.status !== 200) throw mastodonError(res, 'GET /api/v1/statuses/:id');
      out[id] = {
        impressions: 0,
        likes: res.body.favourites_count ?? 0,
        comments: res.body.replies_count ?? 0,
        shares: res.body.reblogs_count ?? 0,
        clicks: 0,
      };
    }
    return out;
  },
};
