import { pageGraph } from '../meta/client.ts';
import {
  findMessage,
  type GraphPage,
  graphMs,
  iso,
  type KindReader,
  newOnObject,
  ownReply,
  pollByKind,
  pruneMarks,
  RECENT_POSTS,
  readConversations,
  readMarks,
  replyText,
  sendMessage,
  unlessGone,
} from '../meta/inbox.ts';
import { bestEffort } from '../meta/publish.ts';
import { orOutcomeUnknown } from '../support.ts';
import {
  type Credentials,
  type InboxConnector,
  type InboxFetched,
  type InboxReplyContext,
  PlatformError,
  type PublishResult,
} from '../types.ts';

// The Facebook Page's inbox with its Page token (developers.facebook.com/docs/graph-api):
// - comments: GET /{page-id}/feed (Page Feed reference) for the Page's 25 latest posts, each with its
//   newest comments embedded (`comments.filter(stream).order(reverse_chronological)`: the Comments
//   reference's `filter=stream` lists replies to comments too, each naming its `parent`); a post whose
//   embedded comments are all new pages on with GET /{post-id}/comments. Reading who wrote them
//   (`from`) needs pages_read_user_content (Pages API, "Comments and @mentions"); replying,
//   POST /{comment-id}/comments, needs pages_manage_engagement.
// - messages: GET /{page-id}/conversations?platform=messenger (Page Conversations reference:
//   pages_messaging, pages_manage_metadata; no time-based paging), replied to with the Send API
//   (POST /{page-id}/messages, messaging_type RESPONSE), which Meta refuses 24 hours after the
//   person's last message (meta/errors.ts).
// Mentions of the Page reach an app only through webhooks: there is no mention kind here.

const PLATFORM = 'facebook';
const COMMENT_FIELDS = 'id,message,created_time,from,parent{id},permalink_url';
const WEB = 'https://www.facebook.com';

interface FbComment {
  id: string;
  message?: string;
  created_time?: string;
  from?: { id?: string; name?: string };
  parent?: { id?: string };
  permalink_url?: string;
}
interface FbPost {
  id: string;
  created_time?: string;
  permalink_url?: string;
  comments?: GraphPage<FbComment>;
}

const absolute = (url: unknown): string | null =>
  typeof url !== 'string' || !url ? null : url.startsWith('/') ? `${WEB}${url}` : url;

function session(credentials: Credentials) {
  const { client, accountId } = pageGraph(PLATFORM, credentials);
  return { client, pageId: accountId };
}

function comment(c: FbComment, postId: string): InboxFetched {
  const from = c.from ?? {};
  return {
    kind: 'comment',
    platformId: c.id,
    text: c.message ?? '',
    url: absolute(c.permalink_url),
    // Without pages_read_user_content Graph leaves `from` out: the author is unknown.
    author: {
      handle: from.name ?? from.id ?? 'unknown',
      name: from.name ?? null,
      avatar_url: null,
      platform_id: from.id ?? '',
    },
    inReplyTo: c.parent?.id ?? postId,
    conversationId: postId,
    rootId: postId,
    createdAt: iso(graphMs(c.created_time)),
    // Replies go under the top-level comment: Facebook threads comments one level deep.
    ref: { thread: c.parent?.id ?? c.id, post: postId },
  };
}

const comments: KindReader = async (state, ctx) => {
  const { client, pageId } = session(ctx.credentials);
  const sinceMs = ctx.since.getTime();
  const marks = readMarks(state?.marks);
  const embedded = `comments.filter(stream).order(reverse_chronological).limit(50){${COMMENT_FIELDS}}`;
  const feed = await client.get<GraphPage<FbPost>>(`/${pageId}/feed`, {
    fields: `id,created_time,permalink_url,${embedded}`,
    limit: RECENT_POSTS,
  });
  const posts: Array<{ id: string; comments: GraphPage<FbComment> | null }> = (feed.data ?? []).map((p) => ({
    id: p.id,
    comments: p.comments ?? { data: [] },
  }));
  // Herald's own recent posts beyond the feed's latest (a busy Page): read one by one.
  const listed = new Set(posts.map((p) => p.id));
  for (const id of ctx.recentPosts.filter((r) => !listed.has(r)).slice(0, RECENT_POSTS))
    posts.push({ id, comments: null });
  const items: InboxFetched[] = [];
  for (const post of posts) {
    const list = (after?: string) =>
      client.get<GraphPage<FbComment>>(`/${post.id}/comments`, {
        fields: COMMENT_FIELDS,
        filter: 'stream',
        order: 'reverse_chronological',
        limit: 50,
        after,
      });
    const first = post.comments ?? (await unlessGone(() => list()));
    const got = await newOnObject(first, list, (c) => graphMs(c.created_time), marks[post.id], sinceMs);
    if (got.mark) marks[post.id] = got.mark;
    for (const c of got.items) if (c.from?.id !== pageId) items.push(comment(c, post.id));
  }
  return { items, state: { marks: pruneMarks(marks) } };
};

const messages: KindReader = (state, ctx) => {
  const { client, pageId } = session(ctx.credentials);
  return readConversations(
    {
      platform: PLATFORM,
      client,
      node: pageId,
      own: (from) => from?.id === pageId,
      author: (from) => ({
        handle: from.name ?? from.id ?? 'unknown',
        name: from.name ?? null,
        avatar_url: null,
        platform_id: from.id ?? '',
      }),
    },
    state,
    ctx,
  );
};

const threadOf = (ctx: InboxReplyContext): string =>
  typeof ctx.item.ref?.thread === 'string' ? ctx.item.ref.thread : ctx.item.platformId;

async function replyToComment(ctx: InboxReplyContext): Promise<PublishResult> {
  const { client } = session(ctx.credentials);
  const text = replyText(PLATFORM, ctx);
  const made = await client.post<{ id?: string }>(`/${threadOf(ctx)}/comments`, { message: text });
  if (typeof made.id !== 'string' || !made.id)
    throw new PlatformError('system', `${PLATFORM}: the reply was made without an id`, {
      retryable: false,
      unknownOutcome: true,
    });
  const node = await bestEffort(() =>
    client.get<{ permalink_url?: string }>(`/${made.id}`, { fields: 'permalink_url' }),
  );
  return { externalId: made.id, url: absolute(node?.permalink_url) };
}

export const inbox: InboxConnector = {
  poll: (ctx) => pollByKind(ctx, { comment: comments, message: messages }),

  async reply(ctx) {
    if (ctx.item.kind === 'message') {
      const { client, pageId } = session(ctx.credentials);
      return sendMessage(PLATFORM, client, pageId, ctx);
    }
    return replyToComment(ctx);
  },

  async findReply(ctx) {
    const { client, pageId } = session(ctx.credentials);
    if (ctx.item.kind === 'message')
      return orOutcomeUnknown(PLATFORM, 'the conversation could not be read', () =>
        findMessage(client, ctx, (from) => from?.id === pageId),
      );
    const thread = threadOf(ctx);
    const listed = await orOutcomeUnknown(PLATFORM, `the replies to ${thread} could not be read`, () =>
      client.get<GraphPage<FbComment>>(`/${thread}/comments`, {
        fields: COMMENT_FIELDS,
        filter: 'stream',
        order: 'reverse_chronological',
        limit: 50,
      }),
    );
    const hit = ownReply(listed.data ?? [], ctx, {
      mine: (c) => c.from?.id === pageId,
      text: (c) => c.message,
      time: (c) => graphMs(c.created_time),
    });
    return hit ? { externalId: hit.id, url: absolute(hit.permalink_url) } : null;
  },
};
