import { mastodonReplyText } from '#core/inbox-reply-rules';
import { orOutcomeUnknown } from '../support.ts';
import type {
  InboxConnector,
  InboxFetched,
  InboxPage,
  InboxPollContext,
  InboxReplyContext,
  PublishResult,
} from '../types.ts';
import { Api, type Status } from './client.ts';
import { mastodonError } from './errors.ts';
import { htmlToText } from './publish.ts';

// The inbox on the channel's instance (docs.joinmastodon.org):
// - methods/notifications "Get all notifications" (GET /api/v1/notifications, scope read:notifications):
//   `types[]=mention`; a reply is a mention too, so a mention whose status answers one of the
//   account's own statuses (in_reply_to_account_id) is a comment. Direct statuses also notify as
//   mentions: they are read from the conversations instead, as messages.
// - methods/conversations "View all conversations" (GET /api/v1/conversations, scope read:statuses):
//   each conversation's last_status; earlier messages that arrived since come from
//   methods/statuses#context (the ancestors).
// - Paging (api/guidelines#pagination): newest first; `min_id` reads the page immediately newer than
//   an id, `max_id` the page older; the Link header's rel="prev" carries the newest id (min_id) and
//   rel="next" the oldest (max_id). Conversations page by their last status' id.
// - Replies: POST /api/v1/statuses with in_reply_to_id and the Idempotency-Key header (kept an hour);
//   a message is answered with visibility direct. Both start with the author's mention: a reply
//   without one notifies nobody.
// Rate limits (api/rate-limits): 300 calls per 5 minutes per account; a poll makes a few.

const NOTIFICATION_LIMIT = 40; // the documented default (max 80)
const CONVERSATION_LIMIT = 20; // default 20, max 40

/** What the poller saves between pages, per stream: the newest id seen, or the backfill's walk. */
interface StreamCursor {
  /** Forward: read what is newer than this id (min_id). */
  min?: string;
  /** Backfill in progress: the next page is older than `max`; `top` becomes `min` when done. */
  max?: string;
  top?: string;
}

interface Account {
  id: string;
  username: string;
  acct: string;
  display_name?: string;
  avatar?: string | null;
  url?: string | null;
}

interface InboxStatus extends Status {
  visibility?: string;
  in_reply_to_account_id?: string | null;
  account: Account;
}

interface Notification {
  id: string;
  type: string;
  created_at: string;
  account: Account | null;
  status?: InboxStatus | null;
}

interface Conversation {
  id: string;
  unread?: boolean;
  accounts: Account[];
  last_status: InboxStatus | null;
}

/** rel → the link's query parameters (RFC 8288 Link header, as Mastodon sends it). */
export function parseLink(header: string | null): Record<string, URLSearchParams> {
  const out: Record<string, URLSearchParams> = {};
  for (const part of (header ?? '').split(/,\s*(?=<)/)) {
    const m = /^<([^>]+)>\s*;\s*rel="?([^";]+)"?/.exec(part.trim());
    if (!m?.[1] || !m[2]) continue;
    try {
      out[m[2]] = new URL(m[1]).searchParams;
    } catch {
      // a relative or broken link: ignore it, the ids of the page say the same
    }
  }
  return out;
}

const big = (id: string) => BigInt(/^\d+$/.test(id) ? id : '0');
const maxOf = (ids: string[]) => ids.reduce((a, b) => (big(b) > big(a) ? b : a));
const minOf = (ids: string[]) => ids.reduce((a, b) => (big(b) < big(a) ? b : a));

function hostOf(creds: InboxPollContext['credentials']): string {
  try {
    return new URL(String(creds.instance ?? '')).host;
  } catch {
    return '';
  }
}

/** `@user@host` whatever the account's instance (a local account's acct has no host). */
function handleOf(a: Account, host: string): string {
  return a.acct.includes('@') ? `@${a.acct}` : `@${a.acct}@${host}`;
}

function author(a: Account, host: string): InboxFetched['author'] {
  return {
    handle: handleOf(a, host),
    name: a.display_name || null,
    avatar_url: a.avatar ?? null,
    platform_id: a.id,
  };
}

async function myId(api: Api, ctx: { channel: { accountId: string | null } }): Promise<string> {
  if (ctx.channel.accountId) return ctx.channel.accountId;
  return (await api.ok<{ id: string }>('GET', '/api/v1/accounts/verify_credentials')).id;
}

interface Read<T> {
  page: T[];
  cursor: StreamCursor;
  more: boolean;
}

/**
 * One page of a stream: forward from `min`, or the backfill walking down from the newest until it
 * passes `since`. Ids are compared as numbers (Mastodon's are decimal bigints).
 */
async function readStream<T>(
  api: Api,
  path: string,
  params: URLSearchParams,
  cursor: StreamCursor | undefined,
  limit: number,
  idOf: (t: T) => string,
  createdAt: (t: T) => string | undefined,
  since: Date,
  what: string,
): Promise<Read<T>> {
  const qs = new URLSearchParams(params);
  qs.set('limit', String(limit));
  const forward = cursor?.min !== undefined && cursor.max === undefined;
  if (forward) qs.set('min_id', cursor.min as string);
  else if (cursor?.max) qs.set('max_id', cursor.max);
  const res = await api.call<T[]>('GET', `${path}?${qs}`);
  if (res.status !== 200 || !Array.isArray(res.body)) throw mastodonError(res, `GET ${what}`);
  const page = res.body;
  const links = parseLink(res.headers.get('link'));
  const ids = page.map(idOf);
  const old = (t: T) => Date.parse(createdAt(t) ?? '') < since.getTime();
  if (forward) {
    // min_id answers the page just above the cursor; a full page means there is more above it.
    const newest = links.prev?.get('min_id') ?? (ids.length ? maxOf(ids) : undefined);
    const min = newest && big(newest) > big(cursor?.min ?? '0') ? newest : (cursor?.min as string);
    return { page: page.filter((t) => !old(t)), cursor: { min }, more: page.length >= limit };
  }
  // Backfill: newest first, down to `since`.
  const top = cursor?.top ?? (ids.length ? maxOf(ids) : undefined);
  const oldest = ids.length ? minOf(ids) : undefined;
  const pastSince = page.some(old);
  const next = links.next?.get('max_id') ?? (page.length >= limit ? oldest : undefined);
  const kept = page.filter((t) => !old(t));
  if (!next || pastSince || !page.length) return { page: kept, cursor: { min: top ?? '0' }, more: false };
  return { page: kept, cursor: { max: next, ...(top ? { top } : {}) }, more: true };
}

function fromMention(n: Notification, me: string, host: string): InboxFetched | null {
  const s = n.status;
  if (!s || n.type !== 'mention' || s.visibility === 'direct') return null;
  if (s.account.id === me) return null;
  const onOwn = !!s.in_reply_to_id && s.in_reply_to_account_id === me;
  return {
    kind: onOwn ? 'comment' : 'mention',
    platformId: s.id,
    text: htmlToText(s.content),
    url: s.url ?? s.uri ?? null,
    author: author(s.account, host),
    inReplyTo: s.in_reply_to_id ?? null,
    // A comment answers one of the account's statuses: Herald's post is found by it.
    conversationId: onOwn ? (s.in_reply_to_id ?? null) : (s.in_reply_to_id ?? s.id),
    rootId: onOwn ? (s.in_reply_to_id ?? null) : null,
    createdAt: new Date(s.created_at).toISOString(),
  };
}

function fromMessage(s: InboxStatus, conversationId: string, host: string): InboxFetched {
  return {
    kind: 'message',
    platformId: s.id,
    text: htmlToText(s.content),
    url: s.url ?? s.uri ?? null,
    author: author(s.account, host),
    inReplyTo: s.in_reply_to_id ?? null,
    conversationId,
    rootId: null,
    createdAt: new Date(s.created_at).toISOString(),
  };
}

async function pollMentions(api: Api, ctx: InboxPollContext, me: string, cursor: StreamCursor | undefined) {
  const params = new URLSearchParams([['types[]', 'mention']]);
  const r = await readStream<Notification>(
    api,
    '/api/v1/notifications',
    params,
    cursor,
    NOTIFICATION_LIMIT,
    (n) => n.id,
    (n) => n.status?.created_at ?? n.created_at,
    ctx.since,
    '/api/v1/notifications',
  );
  const host = hostOf(ctx.credentials);
  const items = r.page
    .map((n) => fromMention(n, me, host))
    .filter((i): i is InboxFetched => !!i && ctx.kinds.includes(i.kind));
  return { items, cursor: r.cursor, more: r.more };
}

async function pollMessages(api: Api, ctx: InboxPollContext, me: string, cursor: StreamCursor | undefined) {
  const r = await readStream<Conversation>(
    api,
    '/api/v1/conversations',
    new URLSearchParams(),
    cursor,
    CONVERSATION_LIMIT,
    (c) => c.last_status?.id ?? '0',
    (c) => c.last_status?.created_at,
    ctx.since,
    '/api/v1/conversations',
  );
  const host = hostOf(ctx.credentials);
  // Messages newer than what the previous page saw (forward) or than `since` (backfill).
  const floor = cursor?.min && cursor.max === undefined ? big(cursor.min) : 0n;
  const sinceMs = ctx.since.getTime();
  const fresh = (s: InboxStatus) =>
    s.account.id !== me &&
    s.visibility === 'direct' &&
    big(s.id) > floor &&
    !(Date.parse(s.created_at) < sinceMs);
  const items: InboxFetched[] = [];
  for (const c of r.page) {
    const last = c.last_status;
    if (!last) continue;
    if (fresh(last)) items.push(fromMessage(last, c.id, host));
    // Several messages may have come since the last poll: the earlier ones are the last's ancestors.
    if (last.in_reply_to_id) {
      const thread = await api.call<{ ancestors: InboxStatus[] }>(
        'GET',
        `/api/v1/statuses/${encodeURIComponent(last.id)}/context`,
      );
      if (thread.status === 404) continue; // deleted since
      if (thread.status !== 200) throw mastodonError(thread, 'GET /api/v1/statuses/:id/context');
      for (const s of thread.body.ancestors ?? []) if (fresh(s)) items.push(fromMessage(s, c.id, host));
    }
  }
  return { items, cursor: r.cursor, more: r.more };
}

async function poll(ctx: InboxPollContext): Promise<InboxPage> {
  const api = Api.of(ctx.credentials);
  const me = await myId(api, ctx);
  const saved = (ctx.cursor ?? {}) as { mentions?: StreamCursor; messages?: StreamCursor };
  const cursor: { mentions?: StreamCursor; messages?: StreamCursor } = { ...saved };
  const items: InboxFetched[] = [];
  let more = false;
  // One page of each stream per call: a stream with more asks for another call.
  if (ctx.kinds.includes('comment') || ctx.kinds.includes('mention')) {
    const r = await pollMentions(api, ctx, me, saved.mentions);
    items.push(...r.items);
    cursor.mentions = r.cursor;
    more ||= r.more;
  }
  if (ctx.kinds.includes('message')) {
    const r = await pollMessages(api, ctx, me, saved.messages);
    items.push(...r.items);
    cursor.messages = r.cursor;
    more ||= r.more;
  }
  return { items, cursor: cursor as Record<string, unknown>, more };
}

// --- replies --------------------------------------------------------------------------------

/** The status text: the author's mention first, unless the reply already names them. */
const replyText = (ctx: InboxReplyContext): string => mastodonReplyText(ctx.item.author.handle, ctx.text);

function replyParams(ctx: InboxReplyContext): Record<string, unknown> {
  return {
    status: replyText(ctx),
    in_reply_to_id: ctx.item.platformId,
    ...(ctx.item.kind === 'message' ? { visibility: 'direct' } : {}),
  };
}

const resultOf = (s: Status): PublishResult => ({ externalId: s.id, url: s.url ?? s.uri ?? null });

async function reply(ctx: InboxReplyContext): Promise<PublishResult> {
  const api = Api.of(ctx.credentials);
  const status = await api.ok<Status>('POST', '/api/v1/statuses', {
    json: replyParams(ctx),
    headers: { 'idempotency-key': ctx.idempotencyKey },
  });
  return resultOf(status);
}

/**
 * Compares texts as rendered: leading mentions, whitespace and Mastodon's HTML do not count, and a
 * mention is shown by its username only (`@dave@other.example` renders as `@dave`).
 */
const comparable = (s: string) =>
  s
    .normalize('NFC')
    .replace(/^(\s*@[\w.-]+(@[\w.-]+)?)+/u, '')
    .replace(/@([\w.]+)@[\w-]+(\.[\w-]+)+/gu, '@$1')
    .replace(/\s+/gu, '');

async function findReply(ctx: InboxReplyContext): Promise<PublishResult | null> {
  const api = Api.of(ctx.credentials);
  return orOutcomeUnknown('mastodon', 'looking for the reply', async () => {
    const me = await myId(api, ctx);
    const res = await api.call<{ descendants: InboxStatus[] }>(
      'GET',
      `/api/v1/statuses/${encodeURIComponent(ctx.item.platformId)}/context`,
    );
    // The item is gone: a reply to it cannot have been made after it was.
    if (res.status === 404) return null;
    if (res.status !== 200) throw mastodonError(res, 'GET /api/v1/statuses/:id/context');
    const from = ctx.attemptStartedAt.getTime() - 2 * 60_000;
    const want = comparable(ctx.text);
    const found = (res.body.descendants ?? []).find(
      (s) =>
        s.account?.id === me &&
        s.in_reply_to_id === ctx.item.platformId &&
        Date.parse(s.created_at) >= from &&
        comparable(htmlToText(s.content)) === want,
    );
    return found ? resultOf(found) : null;
  });
}

export const inbox: InboxConnector = { poll, reply, findReply };
