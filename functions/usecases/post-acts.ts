import { putAudit } from '#adapters/audit-log';
import { getPostWithOrg } from '#adapters/posts';
import { anyRole, canActOnPosts, type OrgSettings, type toChannel } from '#core/accounts';
import type { PostStatus } from '#core/constants';
import { ApiError, type FieldError, ValidationError } from '#core/errors';
import { isId } from '#core/ids';
import { ActError, type Actor, type AuditAction } from '#core/people';
import { effectiveLimits } from '#core/plans';
import { changedSince, type PostRecord } from '#core/posts';
import { UpdatePostBody } from '#core/requests';
import { parseOrThrow } from '#core/validation';
import { type ApiKeyView, listKeys } from '#usecases/api-keys';
import type { Shown } from '#usecases/approvals';
import { deletePost } from '#usecases/delete-post';
import { listChannelsOf } from '#usecases/list-channels';
import { listPosts } from '#usecases/list-posts';
import { publishPost } from '#usecases/publish-post';
import { reschedulePost } from '#usecases/reschedule-post';
import { auditEntry, authorizeAct, unmetered } from '#usecases/support/acts';
import { unpublishPost } from '#usecases/unpublish-post';
import { updatePost } from '#usecases/update-post';

// The console's posts: the list (by status and channel), a post with its deliveries, the posts
// waiting for approval, and a person's acts on a post — reschedule, publish now, delete, edit its
// texts — through the API's own use cases and rules (the dangerous-operations toggle included), on
// the post as its page showed it, unmetered (a person is not an API client), audited.

/** Posts per page, the API's default. */
export const POSTS_PAGE = 25;
/**
 * The channel filter reads at most this many of the API's pages per console page: no index holds
 * posts by channel, so the console filters the API's pages (newest first) and stops here.
 */
export const CHANNEL_FILTER_PAGES = 4;

type Channels = Array<ReturnType<typeof toChannel>>;

export interface PostList {
  posts: PostRecord[];
  /** The cursor of the next (older) page, or null at the end. */
  next: string | null;
  channels: Channels;
}

/** The posts, newest first, by status and/or channel, a page at a time (every member). */
export async function listPostsOf(a: {
  orgId: string;
  actor: Actor;
  status?: PostStatus | undefined;
  channelId?: string | undefined;
  cursor?: string | undefined;
  cursorSecret: string;
}): Promise<PostList> {
  const [, { data: channels }] = await Promise.all([
    authorizeAct(a.orgId, a.actor, anyRole, 'seeing posts'),
    listChannelsOf(a.orgId),
  ]);
  const page = (after: string | undefined) =>
    listPosts(a.orgId, { status: a.status, limit: POSTS_PAGE, after }, a.cursorSecret, (p) => p);
  try {
    if (!a.channelId) {
      const first = await page(a.cursor);
      return { posts: first.data, next: first.next_cursor, channels };
    }
    const posts: PostRecord[] = [];
    let after = a.cursor;
    let next: string | null = null;
    for (let read = 0; read < CHANNEL_FILTER_PAGES && posts.length < POSTS_PAGE; read++) {
      const got = await page(after);
      posts.push(...got.data.filter((p) => p.variants.some((v) => v.channel_id === a.channelId)));
      next = got.next_cursor;
      if (!next) break;
      after = next;
    }
    return { posts, next, channels };
  } catch (err) {
    if (err instanceof ApiError)
      throw new ActError('That link to more posts is not valid; start again from the first page.', 'invalid');
    throw err;
  }
}

export interface PostDetails {
  post: PostRecord;
  channels: Channels;
  settings: OrgSettings;
  /** The organization's keys (names for "created by"). */
  keys: ApiKeyView[];
}

/** One post of the organization, with what its page shows around it (every member). */
export async function getPostDetails(a: {
  orgId: string;
  actor: Actor;
  postId: string;
  now: Date;
}): Promise<PostDetails> {
  const [, found, { data: channels }, keys] = await Promise.all([
    authorizeAct(a.orgId, a.actor, anyRole, 'seeing posts'),
    isId('post', a.postId) ? getPostWithOrg(a.orgId, a.postId) : { org: null, post: null },
    listChannelsOf(a.orgId),
    listKeys({ orgId: a.orgId, actor: a.actor, now: a.now }),
  ]);
  if (!found.post || !found.org) throw new ActError('This workspace has no such post.', 'not_found');
  return { post: found.post, channels, settings: found.org.settings, keys };
}

export interface Approvals {
  posts: PostRecord[];
  next: string | null;
  channels: Channels;
  keys: ApiKeyView[];
}

/** The posts waiting for approval, newest first, with the keys that created them (every member). */
export async function listApprovals(a: {
  orgId: string;
  actor: Actor;
  cursor?: string | undefined;
  cursorSecret: string;
  now: Date;
}): Promise<Approvals> {
  const [list, keys] = await Promise.all([
    listPostsOf({ ...a, status: 'needs_approval' }),
    listKeys({ orgId: a.orgId, actor: a.actor, now: a.now }),
  ]);
  return { ...list, keys };
}

interface ActArgs {
  orgId: string;
  actor: Actor;
  postId: string;
  /** The post as its page showed it: a post changed since is refused, nothing done. */
  shown: Shown;
  now: Date;
}

/**
 * Reschedules a draft, scheduled or failed post (owners and admins), as the API does. A time the
 * page could not read is null: refused as invalid, after the role check.
 */
export async function reschedule(a: ActArgs & { scheduledAt: string | null }) {
  return act(a, 'post_rescheduled', 'rescheduling posts', (gate, check) => {
    if (!a.scheduledAt) throw new ActError('Enter a date and time, like 2030-01-31 09:00.', 'invalid');
    return reschedulePost(a.orgId, a.postId, a.scheduledAt, a.now, gate, check);
  });
}

/** Publishes now (owners and admins, with Dangerous AI operations on), as the API does. */
export async function publishNow(a: ActArgs) {
  return act(a, 'post_published', 'publishing posts', (gate, check) =>
    publishPost(a.orgId, a.postId, a.now, gate, check),
  );
}

/** Deletes the post (owners and admins, with Dangerous AI operations on), as the API does. */
export async function remove(a: ActArgs) {
  return act(a, 'post_deleted', 'deleting posts', (gate, check) =>
    deletePost(a.orgId, a.postId, gate, check),
  );
}

/** The texts a person edits on a post's page: its title and body, and each variant's body by channel. */
export interface EditedTexts {
  title: string | null;
  body: string | null;
  variants: ReadonlyMap<string, string>;
}

/** The texts were refused by the API's rules: the field errors, by pointer, for the form. */
export class EditRefused extends ActError {
  constructor(readonly fields: FieldError[]) {
    super(fields[0]?.message ?? 'The text is not valid.', 'invalid');
    this.name = 'EditRefused';
  }
}

/**
 * Edits the texts of a draft, scheduled, failed or needs_approval post (owners and admins), through
 * updatePost and its rules (the approval reset, a published channel's variant kept), on the post as
 * its page showed it. Everything else of the post — media, options, threads, first comments — is
 * given back as it is.
 */
export async function editTexts(a: ActArgs & { texts: EditedTexts }) {
  return act(a, 'post_edited', 'editing posts', async (gate, check) => {
    const { post } = await getPostWithOrg(a.orgId, a.postId);
    if (!post)
      throw new ActError(
        'This workspace has no such post (it may have been deleted meanwhile).',
        'not_found',
      );
    check(post);
    const input = {
      title: a.texts.title,
      body: a.texts.body,
      variants: post.variants.map((v) => ({
        channel_id: v.channel_id,
        body: a.texts.variants.get(v.channel_id) ?? v.body,
        media: v.media,
        options: v.options,
        ...(v.thread ? { thread: v.thread } : {}),
        ...(v.first_comment ? { first_comment: v.first_comment } : {}),
      })),
    };
    try {
      // The API's schema first (lengths), as the API's pipeline would check the body.
      const parsed = parseOrThrow(UpdatePostBody(), input);
      return (await updatePost(a.orgId, a.postId, parsed, a.now, gate, { check })).post;
    } catch (err) {
      if (err instanceof ValidationError) throw new EditRefused(err.errors ?? []);
      throw err;
    }
  });
}

/**
 * Takes the post down from every platform it is published on (owners and admins, with Dangerous
 * AI operations on), as the API's unpublishPost does.
 */
export async function unpublish(a: ActArgs) {
  return act(a, 'post_unpublished', 'unpublishing posts', (gate, check) =>
    unpublishPost(a.orgId, a.postId, undefined, a.now, gate, check),
  );
}

type Gate = Parameters<typeof reschedulePost>[4];
type Check = (post: PostRecord) => void;

async function act<T extends object>(
  a: ActArgs,
  action: AuditAction,
  what: string,
  run: (gate: Gate, check: Check) => Promise<T>,
): Promise<T> {
  const by = await authorizeAct(a.orgId, a.actor, canActOnPosts, what);
  // Not an API request: nothing metered. A post scheduled or published still counts.
  const gate: Gate = {
    admitted: unmetered,
    postsPerMonth: effectiveLimits(by.org.plan, by.org.limits).posts_per_month,
  };
  const check: Check = (post) => {
    if (post.version !== a.shown.version)
      throw new ActError(`${changedSince(a.shown.status, post)} Nothing was done.`, 'conflict');
  };
  let done: T;
  try {
    done = await run(gate, check);
  } catch (err) {
    throw err instanceof ApiError ? asActError(err) : err;
  }
  const after = done as { status?: string; scheduled_at?: string | null };
  const detail: Record<string, string | null> = { status: after.status ?? a.shown.status ?? null };
  if (action === 'post_rescheduled') detail.scheduled_at = after.scheduled_at ?? null;
  // After the write, as approvals are: the write is the API's own transaction.
  await putAudit(auditEntry({ ...by, orgId: a.orgId }, action, a.postId, detail, a.now));
  return done;
}

/** The API's refusals in a person's words, with the console's status for them. */
function asActError(err: ApiError): ActError {
  switch (err.code) {
    case 'validation_failed': {
      const field = err.errors?.[0];
      const message =
        field?.code === 'not_in_future'
          ? 'Choose a time in the future.'
          : field?.code === 'too_far_in_future'
            ? field.message.replace('scheduled_at', 'The new time')
            : (field?.message ?? err.message);
      return new ActError(message, 'invalid');
    }
    case 'dangerous_ops_disabled':
      return new ActError(err.message, 'forbidden');
    case 'resource_not_found':
      return new ActError(
        'This workspace has no such post (it may have been deleted meanwhile).',
        'not_found',
      );
    default:
      return new ActError(err.message, 'conflict');
  }
}
