import { OAuthTokens } from '../oauth.ts';
import { orOutcomeUnknown, outcomeUnknown, str } from '../support.ts';
import {
  type InboxConnector,
  type InboxFetched,
  type InboxPage,
  type InboxPollContext,
  type InboxReplyContext,
  PlatformError,
  type PublishResult,
} from '../types.ts';
import { api, authed } from './client.ts';
import { youtubeError } from './errors.ts';

// The comments on the channel's videos, read and answered through the YouTube Data API v3
// (developers.google.com/youtube/v3/docs):
//   commentThreads.list (docs/commentThreads/list): GET /youtube/v3/commentThreads?part=snippet,replies
//     &allThreadsRelatedToChannelId=<channel>&order=time&maxResults=100&textFormat=plainText&pageToken=…
//     → youtube#commentThreadListResponse {nextPageToken?, items: [commentThread]}, each thread a
//     top-level comment (snippet.topLevelComment) with some of its replies (replies.comments — "not
//     necessarily all of them": comments.list?parentId= reads the rest). 1 quota unit a call.
//   comments.list (docs/comments/list): GET /youtube/v3/comments?part=snippet&parentId=<top-level
//     comment>&maxResults=100&pageToken=… → the replies. 1 unit.
//   comments.insert (docs/comments/insert): POST /youtube/v3/comments?part=snippet with {snippet:
//     {parentId, textOriginal}} → the comment. YouTube's replies are one level deep: a reply to a
//     reply is a reply to the thread's top-level comment. 50 units; youtube.force-ssl.
// Reading needs youtube.force-ssl too (the comment scopes: commentThreads.list lists a channel's
// threads, held-for-review included, to its owner only through it). The daily quota (10,000 units
// a project by default) is the cost that matters: a poll reads from the newest thread down and stops
// at the first one with nothing newer than the cursor, so a quiet channel costs one unit a poll.
// YouTube lists threads by their top-level comment's time, so a new reply under an older comment is
// not among the newest threads: the threads active in the last 7 days (50 at most) are watched, read
// by id in one more unit a poll, and the ones whose reply count grew are read again.
// No idempotency key on comments.insert: findReply lists the thread's replies for one by the
// channel with the same text since the attempt began.

const P = 'youtube';
/** Threads watched for new replies (one commentThreads.list by id: 1 unit for all of them). */
const WATCHED = 50;
/** How long a thread without new comments stays watched. */
const WATCH_MS = 7 * 86_400_000;
/** Pages of replies one thread is read for (comments.list, 100 each) in one poll. */
const REPLY_PAGES = 3;
/** Pages of a thread's replies findReply reads before it says it cannot tell. */
const FIND_PAGES = 10;
/** YouTube's clock against ours, for the reply lookup after a lost answer. */
const CLOCK_SLACK_MS = 2 * 60_000;

interface YtComment {
  id?: string;
  snippet?: {
    videoId?: string;
    channelId?: string;
    parentId?: string;
    textOriginal?: string;
    textDisplay?: string;
    authorDisplayName?: string;
    authorProfileImageUrl?: string;
    authorChannelUrl?: string;
    authorChannelId?: { value?: string };
    publishedAt?: string;
  };
}

interface YtThread {
  id?: string;
  snippet?: {
    channelId?: string;
    videoId?: string;
    topLevelComment?: YtComment;
    totalReplyCount?: number;
  };
  replies?: { comments?: YtComment[] };
}

interface ListAnswer<T> {
  nextPageToken?: string;
  items?: T[];
}

/** A thread with recent activity, watched for new replies: YouTube lists threads by their top-level comment's time. */
interface Watched {
  id: string;
  /** totalReplyCount when last read. */
  n: number;
  /** Its newest comment's time (ms). */
  t: number;
}

/**
 * The poll's cursor: `after` the newest time read (ms), `at` the ids read at exactly that time
 * (YouTube's times are to the second), while a walk over several pages is under way `walk` (the
 * next page's token and the newest time and ids its pages saw so far), and `watch`, the threads
 * active in the backfill window (at most WATCHED).
 */
interface Cursor {
  after: number;
  at: string[];
  walk?: { pageToken: string; newest: number; at: string[] };
  watch: Watched[];
}

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];

function readCursor(raw: Record<string, unknown> | null, since: Date): Cursor {
  const after = typeof raw?.after === 'number' ? raw.after : since.getTime();
  const w = raw?.walk as Record<string, unknown> | undefined;
  const walk =
    w && typeof w.pageToken === 'string' && typeof w.newest === 'number'
      ? { pageToken: w.pageToken, newest: w.newest, at: strings(w.at) }
      : undefined;
  const watch = (Array.isArray(raw?.watch) ? (raw.watch as Array<Partial<Watched>>) : [])
    .filter((x) => typeof x?.id === 'string' && typeof x.n === 'number' && typeof x.t === 'number')
    .map((x) => ({ id: String(x.id), n: Number(x.n), t: Number(x.t) }));
  return { after, at: strings(raw?.at), ...(walk ? { walk } : {}), watch };
}

const commentUrl = (videoId: string, commentId: string) =>
  `https://www.youtube.com/watch?v=${encodeURIComponent(videoId)}&lc=${encodeURIComponent(commentId)}`;

const timeOf = (c: YtComment | undefined) => Date.parse(c?.snippet?.publishedAt ?? '');

function channelOf(ctx: { channel: { accountId: string | null }; credentials: Record<string, unknown> }) {
  const id = ctx.channel.accountId ?? str(ctx.credentials.account_id);
  if (!id)
    throw new PlatformError('auth_expired', `${P}: the channel has no account_id`, { retryable: false });
  return id;
}

/** One comment as an inbox item; `thread` is its thread's top-level comment id. */
function fetched(c: YtComment, thread: string, videoId: string | undefined): InboxFetched | null {
  const s = c.snippet ?? {};
  const id = str(c.id);
  const at = timeOf(c);
  if (!id || !Number.isFinite(at)) return null;
  const video = str(s.videoId) ?? videoId;
  const reply = id !== thread;
  const authorId = str(s.authorChannelId?.value) ?? '';
  return {
    kind: 'comment',
    platformId: id,
    text: s.textOriginal ?? s.textDisplay ?? '',
    url: video ? commentUrl(video, id) : null,
    author: {
      handle: s.authorDisplayName ?? authorId,
      name: s.authorDisplayName ?? null,
      avatar_url: str(s.authorProfileImageUrl) ?? null,
      platform_id: authorId,
    },
    inReplyTo: reply ? thread : (video ?? null),
    conversationId: video ?? null,
    rootId: video ?? null,
    createdAt: new Date(at).toISOString(),
    ref: { thread, ...(video ? { videoId: video } : {}) },
  };
}

async function list<T>(tokens: OAuthTokens, path: string, q: URLSearchParams, what: string) {
  const res = await authed<ListAnswer<T>>(tokens, api(`${path}?${q}`), { method: 'GET' });
  if (res.status !== 200) throw youtubeError(res, what);
  return res.body ?? {};
}

/** Every reply of a thread (bounded): the thread answer carries only some of them. */
async function repliesOf(tokens: OAuthTokens, thread: string, pages: number): Promise<YtComment[]> {
  const out: YtComment[] = [];
  let pageToken: string | undefined;
  for (let i = 0; i < pages; i++) {
    const q = new URLSearchParams({
      part: 'snippet',
      parentId: thread,
      maxResults: '100',
      textFormat: 'plainText',
    });
    if (pageToken) q.set('pageToken', pageToken);
    const body = await list<YtComment>(tokens, '/youtube/v3/comments', q, 'comments.list');
    out.push(...(body.items ?? []));
    pageToken = str(body.nextPageToken);
    if (!pageToken) break;
  }
  return out;
}

export async function poll(ctx: InboxPollContext): Promise<InboxPage> {
  const channelId = channelOf(ctx);
  const cursor = readCursor(ctx.cursor, ctx.since);
  if (!ctx.kinds.includes('comment'))
    return { items: [], cursor: { after: cursor.after, at: cursor.at, watch: cursor.watch }, more: false };
  const tokens = await OAuthTokens.open(ctx);

  // New: after the cursor, or at its time and not read then.
  const isNew = (id: string, at: number) =>
    at > cursor.after || (at === cursor.after && !cursor.at.includes(id));
  let newest = cursor.walk?.newest ?? cursor.after;
  let newestAt = cursor.walk ? [...cursor.walk.at] : [...cursor.at];
  const seen = (id: string, at: number) => {
    if (at > newest) {
      newest = at;
      newestAt = [id];
    } else if (at === newest && !newestAt.includes(id)) newestAt.push(id);
  };
  const watch = new Map(cursor.watch.map((w) => [w.id, w]));
  const items = new Map<string, InboxFetched>();

  /** A thread with something new: its new comments become items, and it is watched. */
  const take = async (t: YtThread) => {
    const top = t.snippet?.topLevelComment;
    const thread = str(top?.id) ?? str(t.id);
    if (!thread || !top) return;
    const total = t.snippet?.totalReplyCount ?? 0;
    let replies = t.replies?.comments ?? [];
    // The thread lists some replies only: read them all.
    if (total > replies.length) replies = await repliesOf(tokens, thread, REPLY_PAGES);
    // A watched thread is read whole: newer than its own newest comment is new too, even when
    // another thread's comment moved the cursor past it (YouTube's lists catch up late).
    const known = watch.get(thread)?.t;
    let last = known ?? 0;
    for (const c of [top, ...replies]) {
      const f = fetched(c, thread, str(t.snippet?.videoId));
      if (!f) continue;
      const at = Date.parse(f.createdAt);
      last = Math.max(last, at);
      if (!isNew(f.platformId, at) && !(known !== undefined && at > known)) continue;
      seen(f.platformId, at);
      // The channel's own comments and replies are not its inbox.
      if (f.author.platform_id !== channelId) items.set(f.platformId, f);
    }
    watch.set(thread, { id: thread, n: total, t: last });
  };

  if (!cursor.walk && watch.size) {
    // Replies to threads older than the cursor: the watched ones whose reply count grew.
    const q = new URLSearchParams({
      part: 'snippet,replies',
      id: [...watch.keys()].join(','),
      textFormat: 'plainText',
    });
    const body = await list<YtThread>(tokens, '/youtube/v3/commentThreads', q, 'commentThreads.list');
    for (const t of body.items ?? []) {
      const id = str(t.snippet?.topLevelComment?.id) ?? str(t.id) ?? '';
      const w = watch.get(id);
      const total = t.snippet?.totalReplyCount ?? 0;
      if (w && total > w.n) await take(t);
      else if (w) watch.set(id, { ...w, n: total });
    }
  }

  const q = new URLSearchParams({
    part: 'snippet,replies',
    allThreadsRelatedToChannelId: channelId,
    order: 'time',
    maxResults: '100',
    textFormat: 'plainText',
  });
  if (cursor.walk) q.set('pageToken', cursor.walk.pageToken);
  const body = await list<YtThread>(tokens, '/youtube/v3/commentThreads', q, 'commentThreads.list');
  let reachedOld = false;
  for (const t of body.items ?? []) {
    const top = t.snippet?.topLevelComment;
    const thread = str(top?.id) ?? str(t.id);
    if (!thread || !top) continue;
    const topNew = isNew(thread, timeOf(top));
    const anyNewReply = (t.replies?.comments ?? []).some((r) => isNew(str(r.id) ?? '', timeOf(r)));
    if (!topNew && !anyNewReply) {
      // Threads come newest first: the first older than the cursor ends the walk (a quiet channel
      // costs 1 unit); one of the cursor's own second was read then, and others may share it.
      if (timeOf(top) < cursor.after || !Number.isFinite(timeOf(top))) {
        reachedOld = true;
        break;
      }
      continue;
    }
    await take(t);
  }

  const horizon = Date.now() - WATCH_MS;
  const watched = [...watch.values()]
    .filter((w) => w.t >= horizon)
    .sort((a, b) => b.t - a.t)
    .slice(0, WATCHED);
  const next = str(body.nextPageToken);
  if (!reachedOld && next)
    return {
      items: [...items.values()],
      cursor: {
        after: cursor.after,
        at: cursor.at,
        walk: { pageToken: next, newest, at: newestAt },
        watch: watched,
      },
      more: true,
    };
  return { items: [...items.values()], cursor: { after: newest, at: newestAt, watch: watched }, more: false };
}

/** The thread's top-level comment: the parent YouTube takes for any reply in it. */
function threadOf(item: InboxReplyContext['item']): string {
  const ref = str(item.ref?.thread);
  if (ref) return ref;
  if (item.inReplyTo && item.inReplyTo !== item.rootId) return item.inReplyTo;
  return item.platformId;
}

function result(c: YtComment, item: InboxReplyContext['item']): PublishResult {
  const id = String(c.id);
  const video = str(c.snippet?.videoId) ?? str(item.ref?.videoId) ?? item.rootId;
  return { externalId: id, url: video ? commentUrl(video, id) : null };
}

export async function reply(ctx: InboxReplyContext): Promise<PublishResult> {
  if (ctx.item.kind !== 'comment')
    throw new PlatformError('user_content', `${P}: only comments can be answered`, { retryable: false });
  if (!ctx.text.trim())
    throw new PlatformError('user_content', `${P}: a reply needs text`, { retryable: false });
  const tokens = await OAuthTokens.open(ctx);
  const res = await authed<YtComment>(tokens, api('/youtube/v3/comments?part=snippet'), {
    method: 'POST',
    headers: { 'content-type': 'application/json; charset=UTF-8' },
    body: JSON.stringify({ snippet: { parentId: threadOf(ctx.item), textOriginal: ctx.text } }),
  });
  if (res.status !== 200) throw youtubeError(res, 'comments.insert');
  if (!str(res.body?.id))
    throw new PlatformError('system', `${P}: the reply was made without an id`, {
      retryable: false,
      unknownOutcome: true,
    });
  return result(res.body, ctx.item);
}

export async function findReply(ctx: InboxReplyContext): Promise<PublishResult | null> {
  const channelId = channelOf(ctx);
  const thread = threadOf(ctx.item);
  const since = ctx.attemptStartedAt.getTime() - CLOCK_SLACK_MS;
  const want = ctx.text.trim();
  const tokens = await OAuthTokens.open(ctx);
  const replies = await orOutcomeUnknown(P, "the thread's replies could not be read", async () => {
    const all = await repliesOf(tokens, thread, FIND_PAGES + 1);
    // More pages than we read: the reply may be on one we did not.
    if (all.length > FIND_PAGES * 100) throw outcomeUnknown(P, 'the thread has too many replies to search');
    return all;
  });
  const hit = replies.find((c) => {
    const s = c.snippet;
    const at = timeOf(c);
    return (
      s?.authorChannelId?.value === channelId &&
      (s.textOriginal ?? '').trim() === want &&
      !(Number.isFinite(at) && at < since)
    );
  });
  return hit && str(hit.id) ? result(hit, ctx.item) : null;
}

export const inbox: InboxConnector = { poll, reply, findReply };
