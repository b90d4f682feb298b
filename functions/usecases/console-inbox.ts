import { anyRole } from '#core/accounts';
import { ApiError } from '#core/errors';
import { isId, newId } from '#core/ids';
import { INBOX, type InboxItem, type InboxKind, type InboxStatus } from '#core/inbox';
import { replyMaxText } from '#core/inbox-reply-rules';
import { ActError, type Actor } from '#core/people';
import { hasFeature, type PlanName } from '#core/plans';
import { getInboxItem } from '#usecases/get-inbox-item';
import { getPostById } from '#usecases/get-post';
import { listChannelsOf } from '#usecases/list-channels';
import { listInbox } from '#usecases/list-inbox';
import { replyToInboxItem } from '#usecases/reply-to-inbox-item';
import { type Authorized, authorizeAct, unmetered } from '#usecases/support/acts';
import { updateInboxItem } from '#usecases/update-inbox-item';

// The console's inbox: the API's own use cases (listInbox, getInboxItem, updateInboxItem,
// replyToInboxItem) with the person's role read first and the plan's `inbox` feature checked as the
// API checks it. Marking is every member's; replying publishes, so it is owners' and admins'. A
// person is not an API client: nothing here is metered, and the Dangerous AI operations toggle —
// which holds back API keys and agents — does not apply to people.

/** Items per page, the API's default. */
export const INBOX_PAGE = 25;
/** The conversation beside an item reads at most this many of the API's pages (no index holds items by conversation). */
export const CONVERSATION_PAGES = 2;
const CONVERSATION_PAGE = 100;

type Channels = Awaited<ReturnType<typeof listChannelsOf>>['data'];

export interface InboxList {
  items: InboxItem[];
  next: string | null;
  channels: Channels;
  /** Whether the plan includes the inbox (without it the page says so and lists nothing). */
  included: boolean;
  plan: PlanName;
}

export const NO_SUCH_ITEM = 'This workspace has no such inbox item; it may have expired.';

/** The API's refusals in a person's words, with the console's status for them. */
function asPersonError(err: unknown): unknown {
  if (!(err instanceof ApiError)) return err;
  if (err.code === 'resource_not_found') return new ActError(NO_SUCH_ITEM, 'not_found');
  if (err.code === 'validation_failed')
    return new ActError(err.errors?.[0]?.message ?? err.message, 'invalid');
  if (err.status === 403) return new ActError(err.message, 'forbidden');
  if (err.status === 429) return new ActError(err.message, 'rate_limited');
  return new ActError(err.message, err.status === 404 ? 'not_found' : 'conflict');
}

export async function personal<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw asPersonError(err);
  }
}

const planLacks = (plan: string) =>
  new ActError(
    `The ${plan} plan does not include the inbox; the operator can move the workspace to a plan that does.`,
    'forbidden',
  );

/** A role allowed to do `what`, on a plan with the inbox. */
export async function authorizeInbox(
  orgId: string,
  actor: Actor,
  allowed: Parameters<typeof authorizeAct>[2],
  what: string,
): Promise<Authorized> {
  const by = await authorizeAct(orgId, actor, allowed, what);
  if (!hasFeature(by.org.plan, 'inbox')) throw planLacks(by.org.plan);
  return by;
}

/** The inbox, newest first, by channel, kind and status, a page at a time (every member). */
export async function listInboxForPerson(a: {
  orgId: string;
  actor: Actor;
  channelId?: string | undefined;
  kind?: InboxKind | undefined;
  status?: InboxStatus | undefined;
  cursor?: string | undefined;
  cursorSecret: string;
}): Promise<InboxList> {
  const [by, { data: channels }] = await Promise.all([
    authorizeAct(a.orgId, a.actor, anyRole, 'seeing the inbox'),
    listChannelsOf(a.orgId),
  ]);
  const plan = by.org.plan;
  if (!hasFeature(plan, 'inbox')) return { items: [], next: null, channels, included: false, plan };
  try {
    const page = await listInbox(
      a.orgId,
      { channel_id: a.channelId, kind: a.kind, status: a.status, limit: INBOX_PAGE, after: a.cursor },
      a.cursorSecret,
    );
    return { items: page.data, next: page.next_cursor, channels, included: true, plan };
  } catch (err) {
    // A cursor that does not open is the API's invalid_request (a filter it refuses, validation_failed).
    if (err instanceof ApiError && err.code === 'invalid_request')
      throw new ActError('That link to more items is not valid; start again from the first page.', 'invalid');
    throw asPersonError(err);
  }
}

export interface InboxDetails {
  item: InboxItem;
  channels: Channels;
  /** The Herald post it answers, as its page shows it; null when none (or it was deleted). */
  post: { id: string; label: string; text: string | null } | null;
  /** Other items with the same conversation_id (from the few pages read; see CONVERSATION_PAGES). */
  conversation: InboxItem[];
  /** Whether the platform takes a reply to this kind of item from an app. */
  replyable: boolean;
  /** The longest reply the platform takes here. */
  replyLimit: number;
  /** The reply form's token: a reply id minted for this page, so the same form sent twice asks for one reply. */
  replyToken: string;
  /** Whether the plan includes AI generation (the "Suggest a reply" button). */
  suggests: boolean;
}

/** One item with its context (every member). */
export async function getInboxItemForPerson(a: {
  orgId: string;
  actor: Actor;
  id: string;
  cursorSecret: string;
}): Promise<InboxDetails> {
  const [by, item, { data: channels }] = await Promise.all([
    authorizeInbox(a.orgId, a.actor, anyRole, 'seeing the inbox'),
    personal(async () => (await getInboxItem(a.orgId, a.id)).item),
    listChannelsOf(a.orgId),
  ]);
  const [post, conversation] = await Promise.all([postOf(a.orgId, item), conversationOf(a, item)]);
  const kind = item.kind;
  return {
    item,
    channels,
    post,
    conversation,
    replyable: INBOX[item.platform].replies.includes(kind),
    replyLimit: replyMaxText(item.platform, kind),
    replyToken: newId('reply'),
    suggests: hasFeature(by.org.plan, 'ai'),
  };
}

/** The post an item answers: its label and the text it published on the item's channel. */
async function postOf(orgId: string, item: InboxItem): Promise<InboxDetails['post']> {
  if (!item.post_id) return null;
  const post = await getPostById(orgId, item.post_id).catch((err: unknown) => {
    if (err instanceof ApiError && err.code === 'resource_not_found') return null;
    throw err;
  });
  if (!post) return null;
  const text = post.variants.find((v) => v.channel_id === item.channel_id)?.body ?? post.body ?? null;
  const label = post.title ?? text ?? post.id;
  return { id: post.id, label: label.length > 80 ? `${label.slice(0, 79)}…` : label, text };
}

/**
 * The item's conversation: comments on a Herald post are all that post's (listInbox by post_id);
 * otherwise the channel's newest items, a few pages of them, with the same conversation_id.
 */
async function conversationOf(a: { orgId: string; cursorSecret: string }, item: InboxItem) {
  if (!item.conversation_id) return [];
  const found: InboxItem[] = [];
  let after: string | undefined;
  for (let read = 0; read < CONVERSATION_PAGES; read++) {
    const page = await listInbox(
      a.orgId,
      {
        ...(item.post_id ? { post_id: item.post_id } : { channel_id: item.channel_id }),
        limit: CONVERSATION_PAGE,
        after,
      },
      a.cursorSecret,
    );
    found.push(...page.data.filter((i) => i.conversation_id === item.conversation_id && i.id !== item.id));
    if (!page.next_cursor) break;
    after = page.next_cursor;
  }
  return found;
}

/** Marks an item read, unread or archived (every member), as the API's PATCH does. */
export async function markForPerson(a: {
  orgId: string;
  actor: Actor;
  id: string;
  status: InboxStatus;
  now: Date;
}): Promise<InboxItem> {
  await authorizeInbox(a.orgId, a.actor, anyRole, 'marking inbox items');
  return personal(async () => (await updateInboxItem(a.orgId, a.id, a.status, a.now, unmetered)).item);
}

/**
 * Replies to an item (owners and admins), through replyToInboxItem's person path (the role, not
 * the toggle; audited): queued now, sent by the reply worker exactly once. `token` is the form's,
 * a reply id minted when the page was rendered: the same form sent twice (a double click, a
 * resend) finds its reply already there and queues nothing more.
 */
export async function replyForPerson(a: {
  orgId: string;
  actor: Actor;
  id: string;
  body: string;
  token: string;
  now: Date;
}) {
  await authorizeInbox(a.orgId, a.actor, anyRole, 'seeing the inbox');
  return replyToInboxItem({
    orgId: a.orgId,
    itemId: a.id,
    body: a.body,
    actor: a.actor,
    now: a.now,
    ...(isId('reply', a.token) ? { replyId: a.token } : {}),
  });
}
