import { orOutcomeUnknown, pollWithMedia, publishedIn, rootPoll, searchFrom, sleep } from '../support.ts';
import { type MediaInput, PlatformError, type PublishContext, type PublishResult } from '../types.ts';
import { multipartBody, UPLOAD_REQUEST_MS } from '../upload.ts';
import { Api, type Status } from './client.ts';
import { mastodonError } from './errors.ts';

// Media: POST /api/v2/media answers 200 when the attachment is ready or 202 while the instance still
// transcodes it (url null); we poll GET /api/v1/media/:id (206 while processing) before posting,
// because a status with unprocessed media is refused.
//
// Duplicates: POST /api/v1/statuses takes an Idempotency-Key header; the instance remembers it for an
// hour and answers a repeat with the status it already made. We send ctx.idempotencyKey, so a
// reconcile inside that hour repeats the request and gets the original status back (or makes the
// only one). Past the hour, counted from the earliest attempt that may have sent it, reconcile looks
// the text up among the account's own statuses since then.

// Polls: the root's `poll: {options, expires_in}` (docs.joinmastodon.org methods/statuses#create:
// poll[options][] and poll[expires_in] in seconds), never with media_ids (PostStatusService refuses
// both). The instance's own limits (configuration.polls of GET /api/v2/instance) are its to apply:
// a refusal is a 422 the delivery reports.

const IDEMPOTENCY_WINDOW_MS = 55 * 60 * 1000; // the server keeps keys 1 h; keep a margin
const POLL_BUDGET_MS = 20_000; // the worker's Lambda stops at 60 s, with the batch's other deliveries

interface Attachment {
  id: string;
  type: string;
  url: string | null;
}

async function upload(api: Api, item: MediaInput): Promise<string> {
  // The file streamed as the form's last part: a video is never held whole.
  const stream = multipartBody(item.alt ? [['description', item.alt]] : [], { field: 'file', item });
  const res = await api.call<Attachment>('POST', '/api/v2/media', { stream, timeoutMs: UPLOAD_REQUEST_MS });
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

/** Absent duration: 1440 minutes, the default getChannelOptions states for Mastodon. */
const pollOf = (ctx: PublishContext) => rootPoll(ctx, 1440);

function statusParams(ctx: PublishContext, mediaIds: string[]): Record<string, unknown> {
  const o = ctx.options;
  const poll = pollOf(ctx);
  return {
    status: ctx.text,
    ...(mediaIds.length ? { media_ids: mediaIds } : {}),
    ...(poll ? { poll: { options: poll.choices, expires_in: poll.minutes * 60 } } : {}),
    ...(typeof o.visibility === 'string' ? { visibility: o.visibility } : {}),
    ...(typeof o.spoiler_text === 'string' && o.spoiler_text ? { spoiler_text: o.spoiler_text } : {}),
    ...(typeof o.sensitive === 'boolean' ? { sensitive: o.sensitive } : {}),
    ...(typeof o.language === 'string' ? { language: o.language } : {}),
    // A thread item or the first comment: a reply to the part before it.
    ...(ctx.replyTo ? { in_reply_to_id: ctx.replyTo.parent.externalId } : {}),
  };
}

const resultOf = (s: Status): PublishResult => ({ externalId: s.id, url: s.url ?? s.uri ?? null });

function postStatus(api: Api, params: Record<string, unknown>, key: string) {
  return api.ok<Status>('POST', '/api/v1/statuses', { json: params, headers: { 'idempotency-key': key } });
}

export async function publish(ctx: PublishContext): Promise<PublishResult> {
  const api = Api.of(ctx.credentials);
  // Refused before any upload: the instance would refuse the status after them.
  if (ctx.media.length && pollOf(ctx)) throw pollWithMedia('mastodon');
  const mediaIds: string[] = [];
  for (const item of ctx.media) mediaIds.push(await upload(api, item));
  const params = statusParams(ctx, mediaIds);
  // A text-only status saves no checkpoint (a write per delivery saved): its request is rebuilt from
  // the variant, and reconcile dates it from ctx.attemptStartedAt, the start of the earliest attempt
  // whose outcome is unknown. With media, the attachment ids are saved so a reconcile repeats the
  // request rather than uploading again.
  if (mediaIds.length)
    await ctx.saveCheckpoint({ stage: 'posting', params, sentAt: new Date().toISOString() });
  const status = await postStatus(api, params, ctx.idempotencyKey);
  return resultOf(status);
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
  const since = searchFrom(ctx, ctx.checkpoint?.sentAt, 2 * 60_000);
  const want = comparable(ctx.text);
  const spoiler = typeof ctx.options.spoiler_text === 'string' ? ctx.options.spoiler_text : '';
  // A part after the root answers the part before it; the root answers nothing.
  const parent = ctx.replyTo?.parent.externalId ?? null;
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
      if (
        comparable(htmlToText(s.content)) === want &&
        (s.spoiler_text ?? '') === spoiler &&
        (s.in_reply_to_id ?? null) === parent
      )
        return resultOf(s);
    }
    const oldest = statuses.at(-1);
    if (!oldest || Date.parse(oldest.created_at) < since) return null;
    maxId = oldest.id;
  }
  return null;
}

export async function reconcile(ctx: PublishContext): Promise<PublishResult | null> {
  const cp = ctx.checkpoint;
  const done = publishedIn(cp, () => null);
  if (done) return done;
  let params: Record<string, unknown> | null = null;
  if (cp?.stage === 'posting') {
    if (cp.params && typeof cp.params === 'object') params = cp.params as Record<string, unknown>;
  } else if (ctx.media.length) {
    // With media the request is saved before it is sent: without it, no status was asked for.
    return null;
  } else {
    params = statusParams(ctx, []);
  }
  const api = Api.of(ctx.credentials);
  return orOutcomeUnknown('mastodon', '', async () => {
    // Inside the key's hour (counted from before the earliest request that may have used it) a
    // repeat returns the status the first request made, or makes it now: either way exactly one.
    if (params && Date.now() - searchFrom(ctx, cp?.sentAt, 0) < IDEMPOTENCY_WINDOW_MS) {
      try {
        return resultOf(await postStatus(api, params, ctx.idempotencyKey));
      } catch (err) {
        if (!(err instanceof PlatformError) || err.category !== 'user_content') throw err;
        // e.g. the saved media ids are no longer attachable: fall back to looking.
      }
    }
    return lookup(api, ctx);
  });
}
