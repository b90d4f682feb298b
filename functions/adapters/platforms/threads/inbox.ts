import type { GraphClient } from '../meta/client.ts';
import {
  type GraphPage,
  graphMs,
  iso,
  type KindReader,
  LOOKBACK_MS,
  newOnObject,
  ownReply,
  pollByKind,
  pruneMarks,
  RECENT_POSTS,
  readMarks,
  replyText,
  unlessGone,
} from '../meta/inbox.ts';
import { asContainerStatus, bestEffort, waitForContainer } from '../meta/publish.ts';
import { orOutcomeUnknown } from '../support.ts';
import {
  type InboxConnector,
  type InboxFetched,
  type InboxReplyContext,
  PlatformError,
  type PublishResult,
} from '../types.ts';
import { open } from './client.ts';

// The Threads account's inbox (graph.threads.net; developers.facebook.com/docs/threads):
// - comments: the replies to the account's posts. GET /me/threads lists its 25 latest posts with
//   `has_replies`; each post that has replies is read with GET /{media-id}/conversation (every reply
//   at any depth, newest first with reverse=true; "Retrieve Replies and Conversations",
//   threads_read_replies). Replies name their author by `username` only (no user id), and
//   `is_reply_owned_by_me` marks the account's own.
// - mentions: GET /{threads-user-id}/mentions ("Mentions", threads_manage_mentions; without
//   advanced access only the app's testers' mentions are returned), with `since`.
// - a reply is a new post answering the item: POST /{user-id}/threads (media_type TEXT,
//   reply_to_id), then POST /{user-id}/threads_publish (threads_manage_replies). An interrupted one
//   is found among the parent's replies (GET /{media-id}/replies) by the account since the attempt.

const PLATFORM = 'threads';
const REPLY_FIELDS = 'id,text,username,permalink,timestamp,replied_to,root_post,is_reply_owned_by_me';

interface ThreadsMedia {
  id: string;
  text?: string;
  username?: string;
  permalink?: string;
  timestamp?: string;
  has_replies?: boolean;
  replied_to?: { id?: string };
  root_post?: { id?: string };
  is_reply_owned_by_me?: boolean;
}

const time = (m: ThreadsMedia) => graphMs(m.timestamp);

function fetched(kind: 'comment' | 'mention', m: ThreadsMedia, post: string | null): InboxFetched {
  const handle = m.username ?? 'unknown';
  const root = m.root_post?.id ?? post;
  return {
    kind,
    platformId: m.id,
    text: m.text ?? '',
    url: m.permalink ?? null,
    author: { handle, name: null, avatar_url: null, platform_id: handle },
    inReplyTo: m.replied_to?.id ?? (kind === 'comment' ? post : null),
    conversationId: root ?? m.id,
    rootId: root ?? m.id,
    createdAt: iso(time(m)),
  };
}

const mineOf = (handle: string) => (m: ThreadsMedia) =>
  m.is_reply_owned_by_me === true || (!!handle && m.username === handle);

const comments: KindReader = async (state, ctx) => {
  const { client } = await open(ctx);
  const sinceMs = ctx.since.getTime();
  const marks = readMarks(state?.marks);
  const recent = await client.get<GraphPage<ThreadsMedia>>('/me/threads', {
    fields: 'id,timestamp,has_replies',
    limit: RECENT_POSTS,
  });
  const posts = (recent.data ?? []).filter((p) => p.has_replies !== false).map((p) => p.id);
  const listed = new Set((recent.data ?? []).map((p) => p.id));
  posts.push(...ctx.recentPosts.filter((r) => !listed.has(r)).slice(0, RECENT_POSTS));
  const mine = mineOf(ctx.channel.handle);
  const items: InboxFetched[] = [];
  for (const post of posts) {
    const list = (after?: string) =>
      client.get<GraphPage<ThreadsMedia>>(`/${post}/conversation`, {
        fields: REPLY_FIELDS,
        reverse: true,
        limit: 50,
        after,
      });
    const got = await newOnObject(await unlessGone(() => list()), list, time, marks[post], sinceMs);
    if (got.mark) marks[post] = got.mark;
    for (const m of got.items) if (!mine(m)) items.push(fetched('comment', m, post));
  }
  return { items, state: { marks: pruneMarks(marks) } };
};

const mentions: KindReader = async (state, ctx) => {
  const { client, accountId } = await open(ctx);
  const sinceMs = ctx.since.getTime();
  const marks = readMarks(state?.marks);
  const mark = marks.mentions;
  // The mentions edge takes `since` (epoch seconds, not before 1688540400): from the mark less the
  // lookback (what was seen there is skipped by id) or the poll's `since`, whichever is later.
  const from = Math.max(1688540400, Math.floor(Math.max((mark?.t ?? 0) - LOOKBACK_MS, sinceMs) / 1000));
  const list = (after?: string) =>
    client.get<GraphPage<ThreadsMedia>>(`/${accountId}/mentions`, {
      fields: 'id,text,username,permalink,timestamp,replied_to,root_post',
      since: from,
      limit: 25,
      after,
    });
  const got = await newOnObject(await list(), list, time, mark, sinceMs);
  if (got.mark) marks.mentions = got.mark;
  return { items: got.items.map((m) => fetched('mention', m, null)), state: { marks } };
};

async function containerReady(client: GraphClient, id: string) {
  return waitForContainer(PLATFORM, id, async () => {
    const body = await client.get<{ status?: string; error_message?: string }>(`/${id}`, {
      fields: 'status,error_message',
    });
    const status = asContainerStatus(body.status);
    if (!status)
      throw new PlatformError(
        'system',
        `${PLATFORM}: container ${id} has unknown status ${String(body.status)}`,
      );
    return { status, detail: body.error_message };
  });
}

async function reply(ctx: InboxReplyContext): Promise<PublishResult> {
  const { client, accountId } = await open(ctx);
  const text = replyText(PLATFORM, ctx);
  const container = await client.post<{ id?: string }>(`/${accountId}/threads`, {
    media_type: 'TEXT',
    text,
    reply_to_id: ctx.item.platformId,
  });
  if (typeof container.id !== 'string' || !container.id)
    throw new PlatformError('system', `${PLATFORM}: the reply's container came back without an id`);
  // Until published nothing is visible: a crash before this point leaves no reply behind.
  await containerReady(client, container.id);
  const media = await client.post<{ id?: string }>(`/${accountId}/threads_publish`, {
    creation_id: container.id,
  });
  if (typeof media.id !== 'string' || !media.id)
    throw new PlatformError('system', `${PLATFORM}: the reply was published without an id`, {
      retryable: false,
      unknownOutcome: true,
    });
  const node = await bestEffort(() =>
    client.get<{ permalink?: string }>(`/${media.id}`, { fields: 'permalink' }),
  );
  return { externalId: media.id, url: node?.permalink ?? null };
}

async function findReply(ctx: InboxReplyContext): Promise<PublishResult | null> {
  const { client } = await open(ctx);
  const parent = ctx.item.platformId;
  const listed = await orOutcomeUnknown(PLATFORM, `the replies to ${parent} could not be read`, () =>
    client.get<GraphPage<ThreadsMedia>>(`/${parent}/replies`, {
      fields: REPLY_FIELDS,
      reverse: true,
      limit: 50,
    }),
  );
  const hit = ownReply(listed.data ?? [], ctx, {
    mine: mineOf(ctx.channel.handle),
    text: (m) => m.text,
    time,
  });
  return hit ? { externalId: hit.id, url: hit.permalink ?? null } : null;
}

export const inbox: InboxConnector = {
  poll: (ctx) => pollByKind(ctx, { comment: comments, mention: mentions }),
  reply,
  findReply,
};
