import { createHash } from 'node:crypto';
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
import { Client, type SessionData, sessionScope } from './client.ts';
import { errorName, xrpcError } from './errors.ts';
import { facetsFor, findRecord, tid } from './publish.ts';

// The inbox through the account's PDS, from the AT Protocol lexicons (github.com/bluesky-social/atproto
// lexicons/; @atproto/api is not used, so the shapes below were checked against the lexicon JSON by hand):
// - app.bsky.notification.listNotifications (reasons, limit ≤ 100, cursor; newest first, independent of
//   seenAt): `reply` (someone answered the account's post: a comment), `mention` and `quote` (mentions).
//   Each notification carries the post's record: its text, createdAt and `reply` {root, parent} strong
//   refs, so no further read is needed for the thread's root.
// - Replies: an app.bsky.feed.post record with `reply: {root, parent}` (com.atproto.repo.strongRef, uri
//   + cid, kept in the item's ref), written with com.atproto.repo.createRecord under a record key derived
//   from the reply's id and its first attempt, so a retry cannot make a second post.
// - findReply: the record at that key, else app.bsky.feed.getPostThread of the parent: a reply by the
//   account with the same text since the attempt.
// - Direct messages (chat.bsky.convo.listConvos, getMessages, sendMessage) go to the chat service through
//   the PDS with `atproto-proxy: did:web:api.bsky.chat#bsky_chat`, and only with an app password created
//   with direct-message access (its session's scope com.atproto.appPassPrivileged; others answer 400
//   InvalidToken "Bad token method"). sendMessage has no idempotency key: findReply reads the
//   conversation's latest messages.
// Rate limits (docs.bsky.app "Rate Limits"): 3,000 requests per 5 minutes per IP on the PDS, and the
// app password's createSession 30 per 5 minutes (sessions are kept, client.ts).

const NOTIFICATION_LIMIT = 50;
const CONVO_LIMIT = 50;
const MESSAGE_LIMIT = 100;
/** Pages of one conversation's messages a poll reads at most (a flood beyond is read on the next polls). */
const MESSAGE_PAGES = 5;
const CHAT = { 'atproto-proxy': 'did:web:api.bsky.chat#bsky_chat' };
const POST = 'app.bsky.feed.post';

interface StrongRef {
  uri: string;
  cid: string;
}

interface Profile {
  did: string;
  handle: string;
  displayName?: string;
  avatar?: string;
}

interface PostRecord {
  text?: string;
  createdAt?: string;
  reply?: { root?: StrongRef; parent?: StrongRef };
}

interface Notification {
  uri: string;
  cid: string;
  author: Profile;
  reason: string;
  reasonSubject?: string;
  record: PostRecord;
  indexedAt: string;
}

interface MessageView {
  $type?: string;
  id: string;
  rev: string;
  text?: string;
  sender: { did: string };
  sentAt: string;
}

interface ConvoView {
  id: string;
  rev: string;
  members: Profile[];
  lastMessage?: MessageView;
}

/** Where a stream stopped: the newest time read and the ids read at that time (a tie is not read twice). */
interface Mark {
  at: string;
  ids: string[];
}

/** Per stream: the mark of what was read, and a walk down from the newest in progress. */
interface StreamCursor {
  stop?: Mark;
  walk?: { cursor: string; top: Mark };
}

const rkeyOf = (uri: string) => uri.split('/').pop() ?? '';
const permalink = (handle: string, uri: string) => `https://bsky.app/profile/${handle}/post/${rkeyOf(uri)}`;

function isoOr(value: string | undefined, fallback: string): string {
  const t = Date.parse(value ?? '');
  return new Date(Number.isFinite(t) ? t : Date.parse(fallback)).toISOString();
}

/** After the mark (newer, or as new and not read yet). */
function after(at: string, id: string, mark: Mark | undefined): boolean {
  if (!mark) return true;
  const t = Date.parse(at);
  const m = Date.parse(mark.at);
  return t > m || (t === m && !mark.ids.includes(id));
}

/** The newest of a mark and a list of (time, id). */
function newest(mark: Mark | undefined, seen: Array<{ at: string; id: string }>): Mark | undefined {
  let out = mark ? { at: mark.at, ids: [...mark.ids] } : undefined;
  for (const s of seen) {
    const t = Date.parse(s.at);
    if (!Number.isFinite(t)) continue;
    const o = out ? Date.parse(out.at) : Number.NEGATIVE_INFINITY;
    if (t > o) out = { at: new Date(t).toISOString(), ids: [s.id] };
    else if (t === o && out && !out.ids.includes(s.id)) out.ids.push(s.id);
  }
  return out;
}

function author(p: Profile): InboxFetched['author'] {
  return {
    handle: p.handle,
    name: p.displayName || null,
    avatar_url: p.avatar ?? null,
    platform_id: p.did,
  };
}

function fromNotification(n: Notification): InboxFetched | null {
  const kind =
    n.reason === 'reply' ? 'comment' : n.reason === 'mention' || n.reason === 'quote' ? 'mention' : null;
  if (!kind) return null;
  const reply = n.record?.reply;
  const root = reply?.root ?? null;
  return {
    kind,
    platformId: n.uri,
    text: String(n.record?.text ?? ''),
    url: permalink(n.author.handle, n.uri),
    author: author(n.author),
    inReplyTo: reply?.parent?.uri ?? null,
    conversationId: root?.uri ?? n.uri,
    rootId: root?.uri ?? null,
    createdAt: isoOr(n.record?.createdAt, n.indexedAt),
    // A reply answers this post (parent) in its thread (root: the thread's, or this post's own).
    ref: { uri: n.uri, cid: n.cid, root: root ?? { uri: n.uri, cid: n.cid } },
  };
}

async function pollNotifications(
  client: Client,
  ctx: InboxPollContext,
  cursor: StreamCursor | undefined,
): Promise<{ items: InboxFetched[]; cursor: StreamCursor; more: boolean }> {
  const nsid = 'app.bsky.notification.listNotifications';
  const reasons = [
    ...(ctx.kinds.includes('comment') ? ['reply'] : []),
    ...(ctx.kinds.includes('mention') ? ['mention', 'quote'] : []),
  ];
  const res = await client.call<{ notifications?: Notification[]; cursor?: string }>(nsid, {
    query: {
      reasons,
      limit: String(NOTIFICATION_LIMIT),
      ...(cursor?.walk ? { cursor: cursor.walk.cursor } : {}),
    },
  });
  if (res.status !== 200) throw xrpcError(res, nsid);
  const page = res.body.notifications ?? [];
  const since = ctx.since.getTime();
  const fresh = page.filter(
    (n) => after(n.indexedAt, n.uri, cursor?.stop) && Date.parse(n.indexedAt) >= since,
  );
  const items = fresh
    .map(fromNotification)
    .filter((i): i is InboxFetched => !!i && ctx.kinds.includes(i.kind));
  const top = newest(
    cursor?.walk?.top ?? cursor?.stop,
    page.map((n) => ({ at: n.indexedAt, id: n.uri })),
  );
  // Newest first: the walk ends at the first notification already read (or older than since).
  const reachedOld = fresh.length < page.length;
  if (!reachedOld && res.body.cursor && page.length >= NOTIFICATION_LIMIT && top)
    return {
      items,
      cursor: { ...(cursor?.stop ? { stop: cursor.stop } : {}), walk: { cursor: res.body.cursor, top } },
      more: true,
    };
  return { items, cursor: top ? { stop: top } : {}, more: false };
}

/** A conversation's messages from others after the mark and since `since`, newest first, a few pages. */
async function newMessages(
  client: Client,
  convo: ConvoView,
  me: string,
  stop: Mark | undefined,
  since: number,
): Promise<{ messages: MessageView[]; seen: MessageView[] }> {
  const nsid = 'chat.bsky.convo.getMessages';
  const out: MessageView[] = [];
  const seen: MessageView[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MESSAGE_PAGES; page++) {
    const res = await client.call<{ messages?: MessageView[]; cursor?: string }>(nsid, {
      query: { convoId: convo.id, limit: String(MESSAGE_LIMIT), ...(cursor ? { cursor } : {}) },
      headers: CHAT,
    });
    if (res.status !== 200) throw xrpcError(res, nsid);
    const messages = res.body.messages ?? [];
    let older = false;
    for (const m of messages) {
      if (!after(m.sentAt, m.id, stop) || Date.parse(m.sentAt) < since) {
        older = true;
        continue;
      }
      seen.push(m);
      // A deleted message has no text; the account's own are not inbox items.
      if (
        m.sender?.did !== me &&
        typeof m.text === 'string' &&
        m.$type !== 'chat.bsky.convo.defs#deletedMessageView'
      )
        out.push(m);
    }
    if (older || !res.body.cursor || messages.length < MESSAGE_LIMIT) break;
    cursor = res.body.cursor;
  }
  return { messages: out, seen };
}

async function pollMessages(
  client: Client,
  ctx: InboxPollContext,
  session: SessionData,
  cursor: StreamCursor | undefined,
): Promise<{ items: InboxFetched[]; cursor: StreamCursor; more: boolean }> {
  const nsid = 'chat.bsky.convo.listConvos';
  const res = await client.call<{ convos?: ConvoView[]; cursor?: string }>(nsid, {
    query: { limit: String(CONVO_LIMIT), ...(cursor?.walk ? { cursor: cursor.walk.cursor } : {}) },
    headers: CHAT,
  });
  if (res.status !== 200) throw xrpcError(res, nsid);
  const convos = res.body.convos ?? [];
  const since = ctx.since.getTime();
  const items: InboxFetched[] = [];
  const seen: Array<{ at: string; id: string }> = [];
  let reachedOld = false;
  for (const c of convos) {
    const last = c.lastMessage;
    if (!last || !after(last.sentAt, last.id, cursor?.stop) || Date.parse(last.sentAt) < since) {
      reachedOld = true;
      continue;
    }
    const other = c.members.find((m) => m.did !== session.did);
    const { messages, seen: read } = await newMessages(client, c, session.did, cursor?.stop, since);
    seen.push(...read.map((m) => ({ at: m.sentAt, id: m.id })));
    for (const m of messages) {
      const from = c.members.find((p) => p.did === m.sender.did) ??
        other ?? { did: m.sender.did, handle: m.sender.did };
      items.push({
        kind: 'message',
        platformId: m.id,
        text: m.text ?? '',
        url: null,
        author: author(from),
        inReplyTo: null,
        conversationId: c.id,
        rootId: null,
        createdAt: isoOr(m.sentAt, new Date().toISOString()),
      });
    }
  }
  const top = newest(cursor?.walk?.top ?? cursor?.stop, seen);
  if (!reachedOld && res.body.cursor && convos.length >= CONVO_LIMIT && top)
    return {
      items,
      cursor: { ...(cursor?.stop ? { stop: cursor.stop } : {}), walk: { cursor: res.body.cursor, top } },
      more: true,
    };
  return { items, cursor: top ? { stop: top } : cursor?.stop ? { stop: cursor.stop } : {}, more: false };
}

async function poll(ctx: InboxPollContext): Promise<InboxPage> {
  const client = new Client(ctx.credentials);
  const session = await client.session();
  const saved = (ctx.cursor ?? {}) as { notifications?: StreamCursor; messages?: StreamCursor };
  const cursor = { ...saved };
  const items: InboxFetched[] = [];
  let more = false;
  if (ctx.kinds.includes('comment') || ctx.kinds.includes('mention')) {
    const r = await pollNotifications(client, ctx, saved.notifications);
    items.push(...r.items);
    cursor.notifications = r.cursor;
    more ||= r.more;
  }
  // Direct messages only when this app password allows them (else the chat service refuses).
  if (ctx.kinds.includes('message') && chatAllowed(session)) {
    const r = await pollMessages(client, ctx, session, saved.messages);
    items.push(...r.items);
    cursor.messages = r.cursor;
    more ||= r.more;
  }
  return { items: items.filter((i) => i.author.platform_id !== session.did), cursor, more };
}

function chatAllowed(session: SessionData): boolean {
  const scope = sessionScope(session);
  // A token that is not a readable JWT: let the chat service decide.
  return scope === null || scope === 'com.atproto.appPassPrivileged' || scope === 'com.atproto.access';
}

// --- replies --------------------------------------------------------------------------------

/** The reply's record key: one per reply (its id) and first attempt, the same on every retry. */
function replyRkey(ctx: InboxReplyContext): string {
  const clock = createHash('sha256').update(ctx.idempotencyKey).digest().readUInt16BE(0) & 1023;
  return tid(ctx.attemptStartedAt.getTime() * 1000, clock);
}

function refsOf(ctx: InboxReplyContext): { root: StrongRef; parent: StrongRef } {
  const ref = ctx.item.ref ?? {};
  const cid = typeof ref.cid === 'string' ? ref.cid : '';
  const root = ref.root as StrongRef | undefined;
  if (!cid || !root?.uri || !root.cid)
    throw new PlatformError('system', `bluesky: no strong ref recorded for ${ctx.item.platformId}`, {
      retryable: false,
    });
  return { root: { uri: root.uri, cid: root.cid }, parent: { uri: ctx.item.platformId, cid } };
}

async function replyPost(ctx: InboxReplyContext): Promise<PublishResult> {
  const client = new Client(ctx.credentials);
  const session = await client.session();
  const rkey = replyRkey(ctx);
  const handle = session.handle || ctx.channel.handle.replace(/^@/, '');
  const done = (uri: string, cid: string | undefined): PublishResult => ({
    externalId: uri,
    url: permalink(handle, uri),
    ...(cid ? { ref: { cid } } : {}),
  });
  const resolve = async (h: string) => {
    const res = await client.call<{ did?: string }>('com.atproto.identity.resolveHandle', {
      query: { handle: h },
    });
    return res.status === 200 && res.body.did ? res.body.did : null;
  };
  const facets = await facetsFor(ctx.text, resolve);
  const record = {
    $type: POST,
    text: ctx.text,
    createdAt: new Date().toISOString(),
    ...(facets.length ? { facets } : {}),
    reply: refsOf(ctx),
  };
  const nsid = 'com.atproto.repo.createRecord';
  const res = await client.call<{ uri: string; cid: string }>(nsid, {
    method: 'POST',
    body: { repo: session.did, collection: POST, rkey, record },
  });
  if (res.status === 200) return done(res.body.uri, res.body.cid);
  const err = xrpcError(res, nsid);
  // The key is taken (an earlier attempt wrote it: the PDS answers 500) or the answer was lost.
  if (err.category === 'system' || res.status === 409 || /exist/i.test(errorName(res))) {
    const existing = await findRecord(client, session.did, rkey).catch(() => null);
    if (existing) return done(existing.uri, existing.cid);
  }
  throw err;
}

async function sendMessage(ctx: InboxReplyContext): Promise<PublishResult> {
  const client = new Client(ctx.credentials);
  const nsid = 'chat.bsky.convo.sendMessage';
  const convoId = ctx.item.conversationId;
  if (!convoId)
    throw new PlatformError('system', `bluesky: message ${ctx.item.platformId} has no conversation`, {
      retryable: false,
    });
  const res = await client.call<MessageView>(nsid, {
    method: 'POST',
    body: { convoId, message: { text: ctx.text } },
    headers: CHAT,
  });
  if (res.status !== 200) throw xrpcError(res, nsid);
  return { externalId: res.body.id, url: null };
}

const reply = (ctx: InboxReplyContext) => (ctx.item.kind === 'message' ? sendMessage(ctx) : replyPost(ctx));

const comparable = (s: string) => s.normalize('NFC').replace(/\s+/gu, ' ').trim();

interface ThreadView {
  post?: { uri: string; cid: string; author: Profile; record?: PostRecord };
  replies?: ThreadView[];
}

async function findPostReply(client: Client, ctx: InboxReplyContext): Promise<PublishResult | null> {
  const session = await client.session();
  const handle = session.handle || ctx.channel.handle.replace(/^@/, '');
  const exact = await findRecord(client, session.did, replyRkey(ctx));
  if (exact)
    return {
      externalId: exact.uri,
      url: permalink(handle, exact.uri),
      ...(exact.cid ? { ref: { cid: exact.cid } } : {}),
    };
  // Another key (an attempt dated otherwise): the parent's replies by the account since the attempt.
  const nsid = 'app.bsky.feed.getPostThread';
  const res = await client.call<{ thread?: ThreadView }>(nsid, {
    query: { uri: ctx.item.platformId, depth: '1', parentHeight: '0' },
  });
  if (res.status === 400 && errorName(res) === 'NotFound') return null;
  if (res.status !== 200) throw xrpcError(res, nsid);
  const from = ctx.attemptStartedAt.getTime() - 2 * 60_000;
  const want = comparable(ctx.text);
  for (const r of res.body.thread?.replies ?? []) {
    const p = r.post;
    if (!p || p.author?.did !== session.did) continue;
    if (Date.parse(p.record?.createdAt ?? '') < from) continue;
    if (comparable(String(p.record?.text ?? '')) === want)
      return { externalId: p.uri, url: permalink(handle, p.uri), ref: { cid: p.cid } };
  }
  return null;
}

async function findMessage(client: Client, ctx: InboxReplyContext): Promise<PublishResult | null> {
  const session = await client.session();
  const nsid = 'chat.bsky.convo.getMessages';
  const res = await client.call<{ messages?: MessageView[] }>(nsid, {
    query: { convoId: String(ctx.item.conversationId ?? ''), limit: String(MESSAGE_LIMIT) },
    headers: CHAT,
  });
  if (res.status !== 200) throw xrpcError(res, nsid);
  const from = ctx.attemptStartedAt.getTime() - 2 * 60_000;
  const want = comparable(ctx.text);
  const found = (res.body.messages ?? []).find(
    (m) => m.sender?.did === session.did && Date.parse(m.sentAt) >= from && comparable(m.text ?? '') === want,
  );
  return found ? { externalId: found.id, url: null } : null;
}

async function findReply(ctx: InboxReplyContext): Promise<PublishResult | null> {
  const client = new Client(ctx.credentials);
  return orOutcomeUnknown('bluesky', 'looking for the reply', () =>
    ctx.item.kind === 'message' ? findMessage(client, ctx) : findPostReply(client, ctx),
  );
}

export const inbox: InboxConnector = { poll, reply, findReply };
