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
import { Auth, ok } from './client.ts';
import { commentsPath, commentUrl, commentUrnOf, type LiComment } from './comments.ts';

// The comments on an organization page's posts, read and answered through LinkedIn's Community
// Management API (learn.microsoft.com/linkedin/marketing/community-management/shares/):
//   Posts API, "Find Posts by Authors": GET /rest/posts?author={org urn}&q=author&count=…&sortBy=
//     LAST_MODIFIED → {elements: [post], paging}: the page's recent posts (r_organization_social).
//   Social Metadata API, "Batch Get a Summary of Social Metadata": GET /rest/socialMetadata?ids=List(
//     {urn},…) → {results: {urn: {commentSummary: {count, topLevelCount}}}}: which posts have new
//     comments, in one call for all of them.
//   Comments API, "Get Comments on Shares" / "Get Comments on Comments": GET /rest/socialActions/
//     {post or comment urn}/comments?start=&count= → {elements: [comment], paging: {start, count,
//     total}}, each comment {id, commentUrn, actor, object, message: {text}, created: {time},
//     parentComment?, commentsSummary: {aggregatedTotalComments, totalFirstLevelComments}}
//     (r_organization_social); "Create a Comment" on a comment: POST /rest/socialActions/{comment urn}
//     /comments {actor, object: {post}, message: {text}, parentComment: {comment urn}} → 201
//     (w_organization_social).
// Every one needs LinkedIn's Community Management API product on the operator's app; a member
// (person) account has no comment API an app may read, so its poll is refused. A poll's round reads
// the posts (the page's 20 most recently modified and Herald's own recent ones, at most 50) and their
// comment counts (2 calls), then, one post per page, the comments of the posts whose count moved —
// and of the one read longest ago, so a deletion that hides a new comment from the count delays it by
// one round per post at most. Comments are read whole per post (LinkedIn documents no order), up to
// COMMENT_PAGES pages; the replies under them only when a count of replies moved (the post's, or the
// sum of its comments' commentsSummary), one page of 100 per comment.

const P = 'linkedin';
const MAX_POSTS = 50;
const ORG_POSTS = 20;
const COMMENT_PAGES = 5;
const PAGE = 100;
const CLOCK_SLACK_MS = 2 * 60_000;

interface Paged<T> {
  elements?: T[];
  paging?: { start?: number; count?: number; total?: number };
}

/** What a round knows of one post: the newest comment read (`t`, and the ids at `t`), its counts, when read. */
interface PostState {
  t: number;
  at: string[];
  n: number;
  nested: number;
  /** The replies its comments' summaries counted when read (whether the post's own count includes them or not). */
  replies: number;
  read: number;
}

interface Cursor {
  posts: Record<string, PostState>;
  /** The round under way: the posts left to read, with the counts the round found. */
  queue?: Array<{ urn: string; n: number; nested: number }>;
}

function readCursor(raw: Record<string, unknown> | null): Cursor {
  const posts: Record<string, PostState> = {};
  const src = (raw?.posts ?? {}) as Record<string, Partial<PostState>>;
  for (const [urn, s] of Object.entries(src)) {
    if (typeof s?.t !== 'number') continue;
    posts[urn] = {
      t: s.t,
      at: Array.isArray(s.at) ? s.at.filter((x): x is string => typeof x === 'string') : [],
      n: typeof s.n === 'number' ? s.n : -1,
      nested: typeof s.nested === 'number' ? s.nested : -1,
      replies: typeof s.replies === 'number' ? s.replies : -1,
      read: typeof s.read === 'number' ? s.read : 0,
    };
  }
  const queue = Array.isArray(raw?.queue)
    ? (raw.queue as Array<Record<string, unknown>>)
        .filter((q) => typeof q?.urn === 'string')
        .map((q) => ({
          urn: String(q.urn),
          n: typeof q.n === 'number' ? q.n : -1,
          nested: typeof q.nested === 'number' ? q.nested : -1,
        }))
    : undefined;
  return { posts, ...(queue ? { queue } : {}) };
}

/** The organization whose inbox this is; a member account has none an app can read. */
function organizationOf(ctx: {
  channel: { accountId: string | null };
  credentials: Record<string, unknown>;
}) {
  const urn = ctx.channel.accountId ?? str(ctx.credentials.account_id) ?? '';
  if (!urn.startsWith('urn:li:organization:'))
    throw new PlatformError(
      'platform_rejected',
      `${P}: LinkedIn offers apps no API to read a member account's comments; connect an organization page`,
      { retryable: false },
    );
  return urn;
}

/** Every comment on a post or a comment, page by page (start/count), at most `pages` pages. */
async function commentsOn(
  auth: Auth,
  urn: string,
  pages: number,
): Promise<{ all: LiComment[]; whole: boolean }> {
  const all: LiComment[] = [];
  for (let i = 0; i < pages; i++) {
    const res = await ok<Paged<LiComment>>(
      auth,
      'GET',
      `${commentsPath(urn)}?start=${i * PAGE}&count=${PAGE}`,
    );
    const got = res.body.elements ?? [];
    all.push(...got);
    const total = res.body.paging?.total;
    if (got.length < PAGE || (typeof total === 'number' && all.length >= total)) return { all, whole: true };
  }
  return { all, whole: false };
}

async function recentPosts(auth: Auth, org: string, herald: string[]): Promise<string[]> {
  const q = `author=${encodeURIComponent(org)}&q=author&count=${ORG_POSTS}&sortBy=LAST_MODIFIED`;
  const res = await ok<Paged<{ id?: string }>>(auth, 'GET', `/rest/posts?${q}`);
  const own = (res.body.elements ?? []).map((p) => p.id).filter((id): id is string => typeof id === 'string');
  const herald_ = herald.filter((u) => /^urn:li:(share|ugcPost):/.test(u));
  return [...new Set([...herald_, ...own])].slice(0, MAX_POSTS);
}

async function counts(auth: Auth, posts: string[]): Promise<Record<string, { n: number; nested: number }>> {
  if (!posts.length) return {};
  const ids = `List(${posts.map(encodeURIComponent).join(',')})`;
  const res = await ok<{
    results?: Record<string, { commentSummary?: { count?: number; topLevelCount?: number } }>;
  }>(auth, 'GET', `/rest/socialMetadata?ids=${ids}`);
  const out: Record<string, { n: number; nested: number }> = {};
  for (const [urn, m] of Object.entries(res.body.results ?? {})) {
    const n = m.commentSummary?.count ?? 0;
    out[urn] = { n, nested: n - (m.commentSummary?.topLevelCount ?? n) };
  }
  return out;
}

function fetched(c: LiComment, post: string, parent: string | null): InboxFetched | null {
  const urn = commentUrnOf(c, post);
  const at = c.created?.time;
  if (!urn || typeof at !== 'number') return null;
  const actor = c.actor ?? '';
  return {
    kind: 'comment',
    platformId: urn,
    text: c.message?.text ?? '',
    url: commentUrl(post, urn),
    // The versioned API names the actor by URN only (no member profile without their own grant).
    author: { handle: actor, name: null, avatar_url: null, platform_id: actor },
    inReplyTo: parent ?? post,
    conversationId: post,
    rootId: post,
    createdAt: new Date(at).toISOString(),
    ref: { post, ...(parent ? { parent } : {}) },
  };
}

export async function poll(ctx: InboxPollContext): Promise<InboxPage> {
  const org = organizationOf(ctx);
  const cursor = readCursor(ctx.cursor);
  if (!ctx.kinds.includes('comment')) return { items: [], cursor: { posts: cursor.posts }, more: false };
  const auth = new Auth(ctx);
  let queue = cursor.queue;
  let posts = cursor.posts;
  if (!queue) {
    // A new round: which posts, and which of them have comments we have not read.
    const urns = await recentPosts(auth, org, ctx.recentPosts);
    const now = await counts(auth, urns);
    posts = Object.fromEntries(Object.entries(cursor.posts).filter(([u]) => urns.includes(u)));
    // A post the batch does not answer for is gone (deleted): nothing to read there.
    const live = urns.filter((u) => now[u]);
    posts = Object.fromEntries(Object.entries(posts).filter(([u]) => now[u]));
    const moved = live.filter((u) => {
      const s = posts[u];
      const c = now[u];
      return !s || !c || s.n !== c.n || s.nested !== c.nested;
    });
    const oldest = live
      .filter((u) => !moved.includes(u))
      .sort((a, b) => (posts[a]?.read ?? 0) - (posts[b]?.read ?? 0))[0];
    queue = [...moved, ...(oldest ? [oldest] : [])].map((urn) => ({
      urn,
      n: now[urn]?.n ?? -1,
      nested: now[urn]?.nested ?? -1,
    }));
  }
  const head = queue[0];
  if (!head) return { items: [], cursor: { posts }, more: false };
  const rest = queue.slice(1);

  const prev = posts[head.urn];
  const after = prev?.t ?? ctx.since.getTime();
  const atIds = prev?.at ?? [];
  const isNew = (id: string, t: number) => t > after || (t === after && !atIds.includes(id));
  let newest = after;
  let newestAt = [...atIds];
  const items: InboxFetched[] = [];
  const take = (c: LiComment, parent: string | null) => {
    const f = fetched(c, head.urn, parent);
    if (!f) return;
    const t = Date.parse(f.createdAt);
    if (!isNew(f.platformId, t)) return;
    if (t > newest) {
      newest = t;
      newestAt = [f.platformId];
    } else if (t === newest) newestAt.push(f.platformId);
    // The organization's own comments and replies are not its inbox.
    if (c.actor !== org) items.push(f);
  };

  const top = await commentsOn(auth, head.urn, COMMENT_PAGES).catch((err: unknown) => {
    // Deleted since the round began: the next round leaves it out.
    if (err instanceof PlatformError && err.opts.status === 404) return { all: [], whole: true };
    throw err;
  });
  const repliesOf = (c: LiComment) =>
    c.commentsSummary?.aggregatedTotalComments ?? c.commentsSummary?.totalFirstLevelComments ?? 0;
  const replies = top.all.reduce((n, c) => n + repliesOf(c), 0);
  // Nested replies are read again only when a count of them moved: the post's or its comments'.
  const nestedMoved = !prev || prev.nested !== head.nested || prev.replies !== replies;
  for (const c of top.all) {
    take(c, null);
    const urn = commentUrnOf(c, head.urn);
    if (!urn || repliesOf(c) <= 0 || !nestedMoved) continue;
    for (const r of (await commentsOn(auth, urn, 1)).all) take(r, urn);
  }
  const state: PostState = {
    t: newest,
    at: newestAt,
    n: head.n,
    nested: head.nested,
    replies,
    read: Date.now(),
  };
  const next = { ...posts, [head.urn]: state };
  return {
    items,
    cursor: rest.length ? { posts: next, queue: rest } : { posts: next },
    more: rest.length > 0,
  };
}

/** The comment a reply goes under: a top-level comment answers itself, a nested one its parent. */
function parentOf(item: InboxReplyContext['item']): { post: string; parent: string } {
  const post = str(item.ref?.post) ?? item.rootId ?? item.conversationId;
  if (!post)
    throw new PlatformError('user_content', `${P}: the comment names no post to answer under`, {
      retryable: false,
    });
  const parent =
    str(item.ref?.parent) ?? (item.inReplyTo && item.inReplyTo !== post ? item.inReplyTo : item.platformId);
  return { post, parent };
}

export async function reply(ctx: InboxReplyContext): Promise<PublishResult> {
  const org = organizationOf(ctx);
  if (ctx.item.kind !== 'comment')
    throw new PlatformError('user_content', `${P}: only comments can be answered`, { retryable: false });
  if (!ctx.text.trim())
    throw new PlatformError('user_content', `${P}: a reply needs text`, { retryable: false });
  const { post, parent } = parentOf(ctx.item);
  const auth = new Auth(ctx);
  const res = await ok<LiComment>(auth, 'POST', commentsPath(parent), {
    json: { actor: org, object: post, message: { text: ctx.text }, parentComment: parent },
  });
  const made = typeof res.body === 'object' && res.body ? res.body : {};
  const id = made.id ?? res.headers.get('x-restli-id') ?? undefined;
  const urn = made.commentUrn ?? made.$URN ?? (id ? `urn:li:comment:(${post},${id})` : undefined);
  if (!urn)
    throw new PlatformError('system', `${P}: the reply was made without an id`, {
      retryable: false,
      unknownOutcome: true,
    });
  return { externalId: urn, url: commentUrl(post, urn) };
}

export async function findReply(ctx: InboxReplyContext): Promise<PublishResult | null> {
  const org = organizationOf(ctx);
  const { post, parent } = parentOf(ctx.item);
  const since = ctx.attemptStartedAt.getTime() - CLOCK_SLACK_MS;
  const want = ctx.text.trim();
  const auth = new Auth(ctx);
  const { all, whole } = await orOutcomeUnknown(P, "the comment's replies could not be read", () =>
    commentsOn(auth, parent, COMMENT_PAGES),
  );
  const hit = all.find(
    (c) =>
      c.actor === org && (c.message?.text ?? '').trim() === want && (c.created?.time ?? Date.now()) >= since,
  );
  const urn = hit ? commentUrnOf(hit, post) : undefined;
  if (urn) return { externalId: urn, url: commentUrl(post, urn) };
  if (!whole) throw outcomeUnknown(P, 'the comment has more replies than we read');
  return null;
}

export const inbox: InboxConnector = { poll, reply, findReply };
