import { INBOX_KINDS, type InboxKind } from '#core/inbox';
import { searchFrom } from '../support.ts';
import type {
  InboxFetched,
  InboxPage,
  InboxPollContext,
  InboxReplyContext,
  PublishResult,
} from '../types.ts';
import { PlatformError } from '../types.ts';
import type { GraphClient, Params } from './client.ts';
import { parseGraphTime, sameText } from './publish.ts';

// What the Meta inboxes (Facebook Pages, Instagram, Threads) share. The Graph API offers an app no
// "what is new since" feed without webhooks, so each kind is read from the objects it hangs on (the
// account's recent posts, its conversations, its mentions), newest first, and the cursor keeps per
// object a mark: the newest creation time seen, and the ids seen in the LOOKBACK before it. An item
// is new when it is not older than the poll's `since`, younger than the mark less LOOKBACK, and not
// among those ids: overlapping reads return nothing twice, and an item the platform shows late (Graph
// times are whole seconds, and a comment can surface after a newer one) is still read. Each poll
// reads one kind per page; `more` while other kinds remain.

/** Posts (media) whose comments one poll reads: the account's most recent, whatever their age. */
export const RECENT_POSTS = 25;
/** Pages of an object's items followed in one poll while every item on them is new. */
export const MAX_ITEM_PAGES = 4;
/** How far before an object's newest item a late one is still read. */
export const LOOKBACK_MS = 15 * 60_000;
/** Per-object marks a cursor keeps (the oldest are dropped first), and ids per mark. */
const MAX_MARKS = 80;
const MAX_SEEN = 40;

/**
 * The newest creation time (ms) seen on one object, and the ids seen within LOOKBACK_MS of it with
 * their times. When more were seen than a mark keeps, `floor` is the newest time let go: nothing
 * made then or before is new any more.
 */
export interface Mark {
  t: number;
  seen: Record<string, number>;
  floor?: number;
}
export type Marks = Record<string, Mark>;

export function readMarks(v: unknown): Marks {
  const out: Marks = {};
  if (!v || typeof v !== 'object') return out;
  for (const [k, m] of Object.entries(v as Record<string, unknown>)) {
    const mark = m as { t?: unknown; seen?: unknown; floor?: unknown } | null;
    if (!mark || typeof mark.t !== 'number' || !mark.seen || typeof mark.seen !== 'object') continue;
    const seen = Object.fromEntries(
      Object.entries(mark.seen as Record<string, unknown>).filter(
        (e): e is [string, number] => typeof e[1] === 'number',
      ),
    );
    out[k] = { t: mark.t, seen, ...(typeof mark.floor === 'number' ? { floor: mark.floor } : {}) };
  }
  return out;
}

/** Made at `t` (ms), not before `sinceMs`, and not already seen under `mark`. */
export function isNew(mark: Mark | undefined, sinceMs: number, id: string, t: number): boolean {
  if (!Number.isFinite(t) || t < sinceMs) return false;
  if (!mark) return true;
  return t > Math.max(mark.t - LOOKBACK_MS, mark.floor ?? -Infinity) && !(id in mark.seen);
}

/** The mark after seeing `id` made at `t`: ids older than the lookback (or beyond MAX_SEEN) are let go. */
export function advance(mark: Mark | undefined, id: string, t: number): Mark {
  const top = Math.max(mark?.t ?? t, t);
  const recent = Object.entries({ ...(mark?.seen ?? {}), [id]: t })
    .filter(([, at]) => at > top - LOOKBACK_MS)
    .sort((a, b) => b[1] - a[1]);
  const dropped = recent[MAX_SEEN]?.[1];
  const floor = Math.max(mark?.floor ?? -Infinity, dropped ?? -Infinity);
  return {
    t: top,
    seen: Object.fromEntries(recent.slice(0, MAX_SEEN)),
    ...(Number.isFinite(floor) && floor > top - LOOKBACK_MS ? { floor } : {}),
  };
}

/** The marks kept: at most MAX_MARKS, the newest. */
export function pruneMarks(marks: Marks): Marks {
  const entries = Object.entries(marks);
  if (entries.length <= MAX_MARKS) return marks;
  return Object.fromEntries(entries.sort((a, b) => b[1].t - a[1].t).slice(0, MAX_MARKS));
}

/** One kind's read: its items and its part of the cursor. */
export type KindReader = (
  state: Record<string, unknown> | null,
  ctx: InboxPollContext,
) => Promise<{ items: InboxFetched[]; state: Record<string, unknown> }>;

/**
 * One page of a poll: the kind the cursor's `phase` names (of those the channel may read and the
 * platform has), then `more` while kinds remain; after the last the phase starts over.
 */
export async function pollByKind(
  ctx: InboxPollContext,
  readers: Partial<Record<InboxKind, KindReader>>,
): Promise<InboxPage> {
  const kinds = INBOX_KINDS.filter((k) => ctx.kinds.includes(k) && readers[k]);
  const cursor: Record<string, unknown> = { ...(ctx.cursor ?? {}) };
  if (!kinds.length) return { items: [], cursor: { ...cursor, phase: 0 }, more: false };
  const raw = typeof cursor.phase === 'number' && Number.isInteger(cursor.phase) ? cursor.phase : 0;
  const phase = raw >= 0 && raw < kinds.length ? raw : 0;
  const kind = kinds[phase] as InboxKind;
  const read = readers[kind] as KindReader;
  const prior = cursor[kind];
  const out = await read(prior && typeof prior === 'object' ? (prior as Record<string, unknown>) : null, ctx);
  const next = phase + 1 < kinds.length ? phase + 1 : 0;
  return { items: out.items, cursor: { ...cursor, [kind]: out.state, phase: next }, more: next !== 0 };
}

export interface GraphPage<T> {
  data?: T[];
  paging?: { cursors?: { after?: string }; next?: string };
}

/**
 * The new items of one object, newest first: the first page (embedded in a parent's read, or read
 * here), then further pages while every item on a page is new, at most MAX_ITEM_PAGES in all.
 */
export async function newOnObject<T extends { id: string }>(
  first: GraphPage<T> | null,
  next: (after: string) => Promise<GraphPage<T>>,
  time: (item: T) => number,
  mark: Mark | undefined,
  sinceMs: number,
): Promise<{ items: T[]; mark: Mark | undefined }> {
  const out: T[] = [];
  let page = first;
  let m = mark;
  for (let i = 0; page && i < MAX_ITEM_PAGES; i++) {
    const data = page.data ?? [];
    const fresh = data.filter((c) => isNew(mark, sinceMs, c.id, time(c)));
    out.push(...fresh);
    for (const c of fresh) m = advance(m, c.id, time(c));
    const after = page.paging?.next ? page.paging.cursors?.after : undefined;
    if (!after || fresh.length < data.length || !data.length) break;
    page = await next(after);
  }
  return { items: out, mark: m };
}

/**
 * A read of one object that may no longer exist (a Herald post since deleted on the platform: code
 * 100, subcode 33): null then, so one gone post never stalls the channel's inbox.
 */
export async function unlessGone<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof PlatformError && /\(#100\/33\)/.test(err.message)) return null;
    throw err;
  }
}

/** ISO 8601 of a Graph time. */
export const iso = (ms: number): string => new Date(ms).toISOString();

/** Graph times (`2026-04-15T14:30:00+0000`) and Messenger's ISO strings alike, as ms. */
export const graphMs = (v: unknown): number => parseGraphTime(v);

/** A listed item the account made with this text, since the attempt (less five minutes for clocks). */
export function ownReply<T extends { id: string }>(
  items: T[],
  ctx: InboxReplyContext,
  o: { mine(item: T): boolean; text(item: T): unknown; time(item: T): number },
): T | undefined {
  const from = searchFrom(ctx, undefined, 5 * 60_000);
  return items
    .filter((i) => o.mine(i) && sameText(o.text(i), ctx.text) && !(o.time(i) < from))
    .sort((a, b) => o.time(a) - o.time(b))[0];
}

/** A reply's text: never empty (the API refuses an empty body before it gets here). */
export function replyText(platform: string, ctx: InboxReplyContext): string {
  const text = ctx.text.trim();
  if (!text) throw new PlatformError('user_content', `${platform}: a reply needs text`, { retryable: false });
  return ctx.text;
}

/** A reply to a kind the platform cannot answer (core/inbox.ts INBOX.replies). */
export function cannotAnswer(platform: string, kind: InboxKind, why: string): PlatformError {
  return new PlatformError('user_content', `${platform}: a ${kind} cannot be answered: ${why}`, {
    retryable: false,
  });
}

// ---- Messenger-style conversations (Facebook Pages, Instagram with Facebook Login) -----------

interface ConversationMessage {
  id: string;
  message?: string;
  created_time?: string;
  from?: { id?: string; name?: string; username?: string };
}
interface Conversation {
  id: string;
  updated_time?: string;
  messages?: GraphPage<ConversationMessage>;
}

const MESSAGE_FIELDS = 'id,message,created_time,from';
/** Conversations one poll reads: the most recently updated, a page of 25 at most twice. */
const CONVERSATION_PAGES = 2;

/**
 * New messages of the Page's conversations on `platform` (messenger or instagram): GET
 * /{page-id}/conversations, newest updated first (the edge has no time-based paging), each with its
 * latest messages embedded. A conversation updated before `since` ends the read; one with nothing
 * new ends the paging after its page (the older ones were read before).
 */
export async function readConversations(
  o: {
    platform: 'facebook' | 'instagram';
    client: GraphClient;
    /** The node whose conversations are read (the Page id, or `me` for the Page token's Page). */
    node: string;
    /** The account's own id in `from` (its own messages are not inbox items). */
    own: (from: ConversationMessage['from']) => boolean;
    author: (from: NonNullable<ConversationMessage['from']>) => InboxFetched['author'];
  },
  state: Record<string, unknown> | null,
  ctx: InboxPollContext,
): Promise<{ items: InboxFetched[]; state: Record<string, unknown> }> {
  const client = o.client;
  const sinceMs = ctx.since.getTime();
  const marks = readMarks(state?.marks);
  const items: InboxFetched[] = [];
  let after: string | undefined;
  outer: for (let page = 0; page < CONVERSATION_PAGES; page++) {
    const params: Params = {
      platform: o.platform === 'facebook' ? 'messenger' : 'instagram',
      fields: `id,updated_time,messages.limit(25){${MESSAGE_FIELDS}}`,
      limit: 25,
      after,
    };
    const res = await client.get<GraphPage<Conversation>>(`/${o.node}/conversations`, params);
    // A conversation with nothing new means the older ones were read before: no further page.
    let stale = false;
    for (const conv of res.data ?? []) {
      const updated = graphMs(conv.updated_time);
      const mark = marks[conv.id];
      if (updated < sinceMs) break outer;
      const got = await newOnObject(
        conv.messages ?? null,
        (a) =>
          client.get<GraphPage<ConversationMessage>>(`/${conv.id}/messages`, {
            fields: MESSAGE_FIELDS,
            limit: 25,
            after: a,
          }),
        (m) => graphMs(m.created_time),
        mark,
        sinceMs,
      );
      if (got.mark) marks[conv.id] = got.mark;
      if (!got.items.length) stale = true;
      for (const m of got.items) {
        if (!m.from?.id || o.own(m.from)) continue;
        items.push({
          kind: 'message',
          platformId: m.id,
          text: m.message ?? '',
          url: null,
          author: o.author(m.from),
          inReplyTo: null,
          conversationId: conv.id,
          rootId: null,
          createdAt: iso(graphMs(m.created_time)),
          ref: { recipient: m.from.id },
        });
      }
    }
    after = res.paging?.next ? res.paging.cursors?.after : undefined;
    if (!after || stale) break;
  }
  return { items, state: { marks: pruneMarks(marks) } };
}

/**
 * A message in the item's conversation through the Send API: POST /{node}/messages with the
 * recipient's scoped id and messaging_type RESPONSE (a reply to a person who wrote within 24 hours;
 * outside that window Meta refuses it, errors.ts names it) → {"recipient_id", "message_id"}.
 */
export async function sendMessage(
  platform: string,
  client: GraphClient,
  node: string,
  ctx: InboxReplyContext,
): Promise<PublishResult> {
  const text = replyText(platform, ctx);
  const recipient =
    typeof ctx.item.ref?.recipient === 'string' ? ctx.item.ref.recipient : ctx.item.author.platform_id;
  const sent = await client.post<{ message_id?: string }>(`/${node}/messages`, {
    recipient: JSON.stringify({ id: recipient }),
    messaging_type: 'RESPONSE',
    message: JSON.stringify({ text }),
  });
  if (typeof sent.message_id !== 'string' || !sent.message_id)
    throw new PlatformError('system', `${platform}: the message was sent without an id`, {
      retryable: false,
      unknownOutcome: true,
    });
  return { externalId: sent.message_id, url: null };
}

/** The message an interrupted attempt sent: the conversation's latest messages, by the account, same text. */
export async function findMessage(
  client: GraphClient,
  ctx: InboxReplyContext,
  own: (from: ConversationMessage['from']) => boolean,
): Promise<PublishResult | null> {
  const conv = ctx.item.conversationId;
  if (!conv) return null;
  const res = await client.get<GraphPage<ConversationMessage>>(`/${conv}/messages`, {
    fields: MESSAGE_FIELDS,
    limit: 25,
  });
  const hit = ownReply(res.data ?? [], ctx, {
    mine: (m) => own(m.from),
    text: (m) => m.message,
    time: (m) => graphMs(m.created_time),
  });
  return hit ? { externalId: hit.id, url: null } : null;
}
