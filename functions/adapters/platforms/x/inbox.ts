import { orOutcomeUnknown } from '../support.ts';
import {
  type InboxConnector,
  type InboxFetched,
  type InboxPage,
  type InboxPollContext,
  type InboxReplyContext,
  PlatformError,
  type PublishResult,
} from '../types.ts';
import { Auth, ok, type Tweet } from './client.ts';
import { isDuplicate } from './errors.ts';
import { comparableText } from './publish.ts';

// The inbox through X API v2 (docs.x.com; request names as X's OpenAPI document 2.167 declares them,
// which the contract fake checks):
// - Mentions: GET /2/users/:id/mentions (tweet.read, users.read), newest first, `since_id` the newest
//   read, `start_time` for the 7-day backfill, `pagination_token` for the pages of one read;
//   expansions=author_id for the authors. A mention that replies to one of the account's own posts
//   (in_reply_to_user_id) is a comment; conversation_id is its thread's root post.
// - Direct messages: GET /2/dm_events (dm.read; events of the last 30 days, newest first, no since_id:
//   the walk stops at the newest event read before), event_types=MessageCreate, expansions=sender_id.
// - Replies: POST /2/tweets with reply.in_reply_to_tweet_id; a message is answered in its
//   conversation, POST /2/dm_conversations/:id/messages (dm.write). Neither takes an idempotency key:
//   findReply looks for the reply among the account's posts since the attempt (GET /2/users/:id/tweets
//   with start_time) or in the conversation's latest events.
// Cost and limits (docs.x.com "Pricing", "Rate limits", "Direct Messages lookup"): X bills $0.005 per post
// and $0.010 per DM event a read returns (ctx.billedReads counts them); mentions 300 requests per 15
// minutes per user (450 per app), DM lookups 300 per 15 minutes per user, posts 100 per 15 minutes per
// user, DM sends 200 per 15 minutes per user.

const MENTIONS_PAGE = 100;
const DM_PAGE = 100;
const POST_FIELDS = 'created_at,conversation_id,in_reply_to_user_id,referenced_tweets,author_id';
const USER_FIELDS = 'name,username,profile_image_url';

interface User {
  id: string;
  username: string;
  name?: string;
  profile_image_url?: string;
}

interface Mention extends Tweet {
  author_id?: string;
  conversation_id?: string;
  in_reply_to_user_id?: string;
}

interface DmEvent {
  id: string;
  event_type?: string;
  text?: string;
  sender_id?: string;
  dm_conversation_id?: string;
  created_at?: string;
}

interface Page<T> {
  data?: T[];
  includes?: { users?: User[] };
  meta?: { next_token?: string; newest_id?: string; result_count?: number };
}

/** Per stream: the newest id read, and a read of several pages in progress (its token and newest id). */
interface StreamCursor {
  since?: string;
  walk?: { token: string; newest: string };
}

const big = (id: string | undefined) => BigInt(id && /^\d+$/.test(id) ? id : '0');
const maxId = (a: string | undefined, b: string | undefined) => (big(a) >= big(b) ? a : b);
/**
 * A page's items and the stream's cursor after it: while X has a next page, the walk goes on (its
 * token, and the newest id it began with); at its end the newest id becomes what was read.
 */
function step(
  items: InboxFetched[],
  cursor: StreamCursor | undefined,
  next: string | undefined,
  newest: string | undefined,
): { items: InboxFetched[]; cursor: StreamCursor; more: boolean } {
  if (next && newest)
    return {
      items,
      cursor: { ...(cursor?.since ? { since: cursor.since } : {}), walk: { token: next, newest } },
      more: true,
    };
  const since = maxId(cursor?.since, newest);
  return { items, cursor: since ? { since } : {}, more: false };
}

/** X's times are RFC 3339 without milliseconds. */
const rfc3339 = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

function me(auth: Auth): string {
  if (!auth.userId)
    throw new PlatformError('auth_expired', 'x: channel has no account_id to read its inbox', {
      retryable: false,
    });
  return auth.userId;
}

function author(users: Map<string, User>, id: string | undefined): InboxFetched['author'] {
  const u = id ? users.get(id) : undefined;
  return {
    handle: u?.username ?? id ?? '',
    name: u?.name ?? null,
    avatar_url: u?.profile_image_url ?? null,
    platform_id: id ?? '',
  };
}

const usersOf = (page: Page<unknown>) => new Map((page.includes?.users ?? []).map((u) => [u.id, u]));

function fromMention(t: Mention, users: Map<string, User>, myId: string): InboxFetched {
  const parent = (t.referenced_tweets ?? []).find((r) => r.type === 'replied_to')?.id ?? null;
  const onOwn = parent !== null && t.in_reply_to_user_id === myId;
  const handle = users.get(t.author_id ?? '')?.username;
  return {
    kind: onOwn ? 'comment' : 'mention',
    platformId: t.id,
    // X escapes &, < and > in post text.
    text: t.text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&'),
    url: handle ? `https://x.com/${handle}/status/${t.id}` : `https://x.com/i/web/status/${t.id}`,
    author: author(users, t.author_id),
    inReplyTo: parent,
    conversationId: t.conversation_id ?? t.id,
    // The thread's root: Herald's own post, when it is one.
    rootId: parent ? (t.conversation_id ?? null) : null,
    createdAt: new Date(t.created_at ?? Date.now()).toISOString(),
  };
}

async function pollMentions(auth: Auth, ctx: InboxPollContext, cursor: StreamCursor | undefined) {
  const myId = me(auth);
  const qs = new URLSearchParams({
    max_results: String(MENTIONS_PAGE),
    expansions: 'author_id',
    'post.fields': POST_FIELDS,
    'user.fields': USER_FIELDS,
  });
  // The same window on every page of one read: since_id after the first poll, else the backfill's start.
  if (cursor?.since) qs.set('since_id', cursor.since);
  else qs.set('start_time', rfc3339(ctx.since));
  if (cursor?.walk) qs.set('pagination_token', cursor.walk.token);
  const page = await ok<Page<Mention>>(auth, 'GET', `/2/users/${encodeURIComponent(myId)}/mentions?${qs}`);
  const data = page.data ?? [];
  ctx.billedReads(data.length);
  const users = usersOf(page);
  const since = ctx.since.getTime();
  const items = data
    .filter((t) => t.author_id !== myId && !(Date.parse(t.created_at ?? '') < since))
    .map((t) => fromMention(t, users, myId))
    .filter((i) => ctx.kinds.includes(i.kind));
  const newest = maxId(cursor?.walk?.newest, page.meta?.newest_id ?? data[0]?.id);
  return step(items, cursor, page.meta?.next_token, newest);
}

async function pollMessages(auth: Auth, ctx: InboxPollContext, cursor: StreamCursor | undefined) {
  const myId = me(auth);
  const qs = new URLSearchParams({
    max_results: String(DM_PAGE),
    event_types: 'MessageCreate',
    'dm_event.fields': 'id,text,created_at,dm_conversation_id,event_type',
    expansions: 'sender_id',
    'user.fields': USER_FIELDS,
  });
  if (cursor?.walk) qs.set('pagination_token', cursor.walk.token);
  const page = await ok<Page<DmEvent>>(auth, 'GET', `/2/dm_events?${qs}`);
  const data = page.data ?? [];
  ctx.billedReads(data.length);
  const users = usersOf(page);
  const since = ctx.since.getTime();
  // Newest first, no since_id: what is not newer than the last read's newest was read then.
  const fresh = data.filter(
    (e) => big(e.id) > big(cursor?.since) && !(Date.parse(e.created_at ?? '') < since),
  );
  const items: InboxFetched[] = fresh
    .filter((e) => e.sender_id !== myId && (e.event_type ?? 'MessageCreate') === 'MessageCreate')
    .map((e) => ({
      kind: 'message',
      platformId: e.id,
      text: e.text ?? '',
      url: null,
      author: author(users, e.sender_id),
      inReplyTo: null,
      conversationId: e.dm_conversation_id ?? null,
      rootId: null,
      createdAt: new Date(e.created_at ?? Date.now()).toISOString(),
    }));
  const newest = maxId(cursor?.walk?.newest, data[0]?.id);
  // A page reaching what the last read saw ends the walk: the pages after it were read then.
  return step(items, cursor, fresh.length === data.length ? page.meta?.next_token : undefined, newest);
}

async function poll(ctx: InboxPollContext): Promise<InboxPage> {
  const auth = new Auth(ctx);
  const saved = (ctx.cursor ?? {}) as { mentions?: StreamCursor; messages?: StreamCursor };
  const cursor = { ...saved };
  const items: InboxFetched[] = [];
  let more = false;
  if (ctx.kinds.includes('comment') || ctx.kinds.includes('mention')) {
    const r = await pollMentions(auth, ctx, saved.mentions);
    items.push(...r.items);
    cursor.mentions = r.cursor;
    more ||= r.more;
  }
  if (ctx.kinds.includes('message')) {
    const r = await pollMessages(auth, ctx, saved.messages);
    items.push(...r.items);
    cursor.messages = r.cursor;
    more ||= r.more;
  }
  return { items, cursor, more };
}

// --- replies --------------------------------------------------------------------------------

const permalink = (ctx: InboxReplyContext, id: string) => {
  const handle = ctx.channel.handle.replace(/^@/, '');
  return handle ? `https://x.com/${handle}/status/${id}` : `https://x.com/i/web/status/${id}`;
};

async function sendReply(auth: Auth, ctx: InboxReplyContext): Promise<PublishResult> {
  if (ctx.item.kind === 'message') {
    const conv = ctx.item.conversationId;
    if (!conv)
      throw new PlatformError('system', `x: message ${ctx.item.platformId} has no conversation`, {
        retryable: false,
      });
    const res = await ok<{ data: { dm_event_id: string } }>(
      auth,
      'POST',
      `/2/dm_conversations/${encodeURIComponent(conv)}/messages`,
      { json: { text: ctx.text } },
    );
    return { externalId: res.data.dm_event_id, url: null };
  }
  const res = await ok<{ data: { id: string } }>(auth, 'POST', '/2/tweets', {
    json: { text: ctx.text, reply: { in_reply_to_tweet_id: ctx.item.platformId } },
  });
  return { externalId: res.data.id, url: permalink(ctx, res.data.id) };
}

async function reply(ctx: InboxReplyContext): Promise<PublishResult> {
  const auth = new Auth(ctx);
  try {
    return await sendReply(auth, ctx);
  } catch (err) {
    // Refused as a duplicate of the account's own post: most likely an earlier attempt's reply.
    if (ctx.item.kind !== 'message' && isDuplicate(err)) {
      const found = await orOutcomeUnknown('x', 'refused as a duplicate', () => findPost(auth, ctx));
      if (found) return found;
    }
    throw err;
  }
}

async function findPost(auth: Auth, ctx: InboxReplyContext): Promise<PublishResult | null> {
  const myId = me(auth);
  const want = comparableText(ctx.text);
  const start = rfc3339(new Date(ctx.attemptStartedAt.getTime() - 60_000));
  let token: string | undefined;
  for (let page = 0; page < 5; page++) {
    const qs = new URLSearchParams({
      start_time: start,
      max_results: '100',
      exclude: 'retweets',
      'post.fields': 'created_at,referenced_tweets',
    });
    if (token) qs.set('pagination_token', token);
    const res = await ok<{ data?: Tweet[]; meta?: { next_token?: string } }>(
      auth,
      'GET',
      `/2/users/${encodeURIComponent(myId)}/tweets?${qs}`,
    );
    const hit = (res.data ?? []).find(
      (t) =>
        comparableText(t.text) === want &&
        (t.referenced_tweets ?? []).some((r) => r.type === 'replied_to' && r.id === ctx.item.platformId),
    );
    if (hit) return { externalId: hit.id, url: permalink(ctx, hit.id) };
    token = res.meta?.next_token;
    if (!token) return null;
  }
  return null;
}

async function findMessage(auth: Auth, ctx: InboxReplyContext): Promise<PublishResult | null> {
  const myId = me(auth);
  const conv = String(ctx.item.conversationId ?? '');
  const qs = new URLSearchParams({
    max_results: '50',
    event_types: 'MessageCreate',
    'dm_event.fields': 'id,text,created_at,dm_conversation_id',
    expansions: 'sender_id',
  });
  const res = await ok<Page<DmEvent>>(
    auth,
    'GET',
    `/2/dm_conversations/${encodeURIComponent(conv)}/dm_events?${qs}`,
  );
  const from = ctx.attemptStartedAt.getTime() - 2 * 60_000;
  const want = ctx.text.normalize('NFC').trim();
  const hit = (res.data ?? []).find(
    (e) =>
      e.sender_id === myId &&
      Date.parse(e.created_at ?? '') >= from &&
      (e.text ?? '').normalize('NFC').trim() === want,
  );
  return hit ? { externalId: hit.id, url: null } : null;
}

async function findReply(ctx: InboxReplyContext): Promise<PublishResult | null> {
  const auth = new Auth(ctx);
  return orOutcomeUnknown('x', 'looking for the reply', () =>
    ctx.item.kind === 'message' ? findMessage(auth, ctx) : findPost(auth, ctx),
  );
}

export const inbox: InboxConnector = { poll, reply, findReply };
