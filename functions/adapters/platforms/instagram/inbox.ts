import { pageGraph } from '../meta/client.ts';
import {
  advance,
  cannotAnswer,
  findMessage,
  type GraphPage,
  graphMs,
  isNew,
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
import { orOutcomeUnknown } from '../support.ts';
import type { InboxConnector, InboxFetched, InboxPollContext, InboxReplyContext } from '../types.ts';
import { PlatformError } from '../types.ts';

// The Instagram professional account's inbox through the Instagram API with Facebook Login
// (graph.facebook.com, the Page token the channel keeps; developers.facebook.com/docs/instagram-platform):
// - comments: GET /{ig-user-id}/media for the 25 latest media, each with its comments and their
//   replies embedded (IG Media Comments: id, text, timestamp, username, from, parent_id; IG Comment
//   Replies), paging on with GET /{ig-media-id}/comments while every comment is new
//   (instagram_manage_comments). A reply is POST /{ig-comment-id}/replies (to top-level comments:
//   a reply to a reply lands under the top-level one, as the reference says).
// - mentions: GET /{ig-user-id}/tags, the media others tagged the account in. Caption and comment
//   @mentions are only announced by the `mentions` webhook (mentioned_media / mentioned_comment need
//   the id it carries), so an app that polls does not see them; and Meta does not let an app
//   comment on media the account is only tagged in, so a mention cannot be answered.
// - messages: GET /{page-id}/conversations?platform=instagram (Messenger API for Instagram:
//   instagram_manage_messages, pages_manage_metadata), `me` being the Page of the Page token;
//   answered with POST /{page-id}/messages to the Instagram-scoped id, within 24 hours of the
//   person's last message (meta/errors.ts).

const PLATFORM = 'instagram';
const COMMENT_FIELDS = 'id,text,timestamp,username,from,parent_id';

interface IgComment {
  id: string;
  text?: string;
  timestamp?: string;
  username?: string;
  from?: { id?: string; username?: string };
  parent_id?: string;
  replies?: GraphPage<IgComment>;
}
interface IgMedia {
  id: string;
  timestamp?: string;
  permalink?: string;
  caption?: string;
  username?: string;
  comments?: GraphPage<IgComment>;
}

const session = (ctx: { credentials: Record<string, unknown> }) => pageGraph(PLATFORM, ctx.credentials);

/** The account's own comments and messages are not inbox items. */
const own = (
  ctx: InboxPollContext,
  from: { id?: string; username?: string } | undefined,
  username?: string,
) =>
  from?.id === ctx.channel.accountId ||
  (!!ctx.channel.handle && (from?.username ?? username) === ctx.channel.handle);

function comment(c: IgComment, media: IgMedia): InboxFetched {
  const handle = c.username ?? c.from?.username ?? 'unknown';
  return {
    kind: 'comment',
    platformId: c.id,
    text: c.text ?? '',
    // Comments have no permalink of their own: the media's.
    url: media.permalink ?? null,
    author: { handle, name: null, avatar_url: null, platform_id: c.from?.id ?? handle },
    inReplyTo: c.parent_id ?? media.id,
    conversationId: media.id,
    rootId: media.id,
    createdAt: iso(graphMs(c.timestamp)),
    ref: { thread: c.parent_id ?? c.id, permalink: media.permalink ?? null },
  };
}

const comments: KindReader = async (state, ctx) => {
  const { client, accountId } = session(ctx);
  const sinceMs = ctx.since.getTime();
  const marks = readMarks(state?.marks);
  const replies = `replies{${COMMENT_FIELDS}}`;
  const media = await client.get<GraphPage<IgMedia>>(`/${accountId}/media`, {
    fields: `id,timestamp,permalink,comments.limit(50){${COMMENT_FIELDS},${replies}}`,
    limit: RECENT_POSTS,
  });
  const all: Array<{ media: IgMedia; first: GraphPage<IgComment> | null }> = (media.data ?? []).map((m) => ({
    media: m,
    first: m.comments ?? { data: [] },
  }));
  const listed = new Set(all.map((a) => a.media.id));
  for (const id of ctx.recentPosts.filter((r) => !listed.has(r)).slice(0, RECENT_POSTS))
    all.push({ media: { id }, first: null });
  const items: InboxFetched[] = [];
  for (const { media: m, first } of all) {
    const list = (after?: string) =>
      client.get<GraphPage<IgComment>>(`/${m.id}/comments`, {
        fields: `${COMMENT_FIELDS},${replies}`,
        limit: 50,
        after,
      });
    const page = first ?? (await unlessGone(() => list()));
    if (!page) continue;
    const mark = marks[m.id];
    const time = (c: IgComment) => graphMs(c.timestamp);
    const tops = await newOnObject(page, list, time, mark, sinceMs);
    // Replies come embedded under their top-level comment: a new reply under an old comment counts too.
    const byId = new Map<string, IgComment>();
    for (const top of [...(page.data ?? []), ...tops.items]) {
      byId.set(top.id, top);
      for (const r of top.replies?.data ?? []) byId.set(r.id, { ...r, parent_id: r.parent_id ?? top.id });
    }
    const found = [...byId.values()].filter((c) => isNew(mark, sinceMs, c.id, time(c)));
    let next = mark;
    for (const c of found) next = advance(next, c.id, time(c));
    if (next) marks[m.id] = next;
    for (const c of found) if (!own(ctx, c.from, c.username)) items.push(comment(c, m));
  }
  return { items, state: { marks: pruneMarks(marks) } };
};

const mentions: KindReader = async (state, ctx) => {
  const { client, accountId } = session(ctx);
  const sinceMs = ctx.since.getTime();
  const marks = readMarks(state?.marks);
  const list = (after?: string) =>
    client.get<GraphPage<IgMedia>>(`/${accountId}/tags`, {
      fields: 'id,caption,timestamp,permalink,username',
      limit: 25,
      after,
    });
  const got = await newOnObject(await list(), list, (m) => graphMs(m.timestamp), marks.tags, sinceMs);
  if (got.mark) marks.tags = got.mark;
  const items: InboxFetched[] = got.items.map((m) => ({
    kind: 'mention',
    platformId: m.id,
    text: m.caption ?? '',
    url: m.permalink ?? null,
    author: {
      handle: m.username ?? 'unknown',
      name: null,
      avatar_url: null,
      platform_id: m.username ?? '',
    },
    inReplyTo: null,
    conversationId: m.id,
    rootId: m.id,
    createdAt: iso(graphMs(m.timestamp)),
  }));
  return { items, state: { marks } };
};

const messages: KindReader = (state, ctx) =>
  readConversations(
    {
      platform: PLATFORM,
      client: session(ctx).client,
      // The Page token's Page: the Instagram channel keeps the Instagram account id, not the Page's.
      node: 'me',
      own: (from) => own(ctx, from),
      author: (from) => ({
        handle: from.username ?? from.id ?? 'unknown',
        name: null,
        avatar_url: null,
        platform_id: from.id ?? '',
      }),
    },
    state,
    ctx,
  );

const threadOf = (ctx: InboxReplyContext): string =>
  typeof ctx.item.ref?.thread === 'string' ? ctx.item.ref.thread : ctx.item.platformId;
const permalinkOf = (ctx: InboxReplyContext): string | null =>
  typeof ctx.item.ref?.permalink === 'string' ? ctx.item.ref.permalink : null;

const mine = (ctx: InboxReplyContext, c: IgComment) =>
  c.from?.id === ctx.channel.accountId || (c.username ?? c.from?.username) === ctx.channel.handle;

export const inbox: InboxConnector = {
  poll: (ctx) => pollByKind(ctx, { comment: comments, mention: mentions, message: messages }),

  async reply(ctx) {
    const { client } = session(ctx);
    if (ctx.item.kind === 'mention')
      throw cannotAnswer(
        PLATFORM,
        'mention',
        'Instagram does not let apps comment on media the account is tagged in',
      );
    if (ctx.item.kind === 'message') return sendMessage(PLATFORM, client, 'me', ctx);
    const text = replyText(PLATFORM, ctx);
    const made = await client.post<{ id?: string }>(`/${threadOf(ctx)}/replies`, { message: text });
    if (typeof made.id !== 'string' || !made.id)
      throw new PlatformError('system', `${PLATFORM}: the reply was made without an id`, {
        retryable: false,
        unknownOutcome: true,
      });
    return { externalId: made.id, url: permalinkOf(ctx) };
  },

  async findReply(ctx) {
    const { client } = session(ctx);
    if (ctx.item.kind === 'mention') return null;
    if (ctx.item.kind === 'message')
      return orOutcomeUnknown(PLATFORM, 'the conversation could not be read', () =>
        findMessage(client, ctx, (from) => from?.id === ctx.channel.accountId),
      );
    const thread = threadOf(ctx);
    const listed = await orOutcomeUnknown(PLATFORM, `the replies to ${thread} could not be read`, () =>
      client.get<GraphPage<IgComment>>(`/${thread}/replies`, { fields: COMMENT_FIELDS, limit: 50 }),
    );
    const hit = ownReply(listed.data ?? [], ctx, {
      mine: (c) => mine(ctx, c),
      text: (c) => c.text,
      time: (c) => graphMs(c.timestamp),
    });
    return hit ? { externalId: hit.id, url: permalinkOf(ctx) } : null;
  },
};
