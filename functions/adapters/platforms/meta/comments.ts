import { orOutcomeUnknown } from '../support.ts';
import { PlatformError, type PublishContext, type PublishResult } from '../types.ts';
import type { GraphClient } from './client.ts';
import { listEdge } from './client.ts';
import { parseGraphTime, sameText, searchSince } from './publish.ts';

// First comments on Instagram media and Facebook Page posts: POST /{object-id}/comments with
// `message` answers `{"id"}` (Instagram: developers.facebook.com/docs/instagram-platform/
// instagram-graph-api/reference/ig-media/comments; Facebook: /docs/graph-api/reference/object/comments
// and the Pages API "Comments and @mentions" guide, where a Page token comments as the Page).
// Neither takes an idempotency key, so a checkpoint is saved right before the call, and reconcile
// lists the object's comments since then for one by the account with the same text.

export interface CommentEdge {
  platform: 'instagram' | 'facebook';
  client: GraphClient;
  /** The account the comment is made as (the Instagram user, the Page). */
  accountId: string;
  /**
   * The account's username where a listed comment may name its author by it (Instagram's `from.id`
   * is Instagram-scoped, not always the account id); '' to match by id only.
   */
  handle: string;
  /** The comment's text field (`text` on Instagram, `message` on Facebook) and its time field. */
  textField: 'text' | 'message';
  timeField: 'timestamp' | 'created_time';
  /** Fields of a listed comment besides id, text and time (who made it, its link). */
  extraFields: string;
  /** The comment's link from its listed fields (Instagram has none). */
  url(comment: Record<string, unknown>): string | null;
  /** Reads the link of a comment just made (null: the platform has none). */
  readUrl?(id: string): Promise<string | null>;
}

interface ListedComment extends Record<string, unknown> {
  id: string;
  from?: { id?: string; username?: string; name?: string };
  username?: string;
}

/** The post the comment goes under: the root (or a thread's last item) the worker names. */
export function commentParent(platform: string, ctx: PublishContext): string {
  const id = ctx.replyTo?.parent.externalId;
  if (!id)
    throw new PlatformError('system', `${platform}: a first comment needs the published post it goes under`, {
      retryable: false,
    });
  return id;
}

export async function publishComment(e: CommentEdge, ctx: PublishContext): Promise<PublishResult> {
  const parent = commentParent(e.platform, ctx);
  const text = ctx.text.trim();
  if (!text)
    throw new PlatformError('user_content', `${e.platform}: a comment needs text`, { retryable: false });
  // The worker reconciled an earlier attempt before this one: whatever it may have made was not found.
  await ctx.saveCheckpoint({ stage: 'commenting', parent, sentAt: new Date().toISOString() });
  const made = await e.client.post<{ id?: string }>(`/${parent}/comments`, { message: ctx.text });
  if (typeof made.id !== 'string' || !made.id)
    throw new PlatformError('system', `${e.platform}: the comment was made without an id`, {
      retryable: false,
      unknownOutcome: true,
    });
  const url = e.readUrl ? await e.readUrl(made.id).catch(() => null) : null;
  return { externalId: made.id, url };
}

const mine = (e: CommentEdge, c: ListedComment) =>
  c.from?.id === e.accountId || (!!e.handle && (c.from?.username ?? c.username) === e.handle);

/** The comment an interrupted attempt made, null when there is none, or outcome unknown. */
export async function reconcileComment(e: CommentEdge, ctx: PublishContext): Promise<PublishResult | null> {
  const cp = ctx.checkpoint;
  // The checkpoint is saved right before the call: without one, no comment was made.
  if (cp?.stage !== 'commenting') return null;
  const parent = typeof cp.parent === 'string' ? cp.parent : commentParent(e.platform, ctx);
  const since = searchSince(ctx, typeof cp.sentAt === 'string' ? cp.sentAt : undefined);
  const comments = await orOutcomeUnknown(e.platform, `the comments of ${parent} could not be read`, () =>
    listEdge<ListedComment>(e.client, `/${parent}/comments`, {
      fields: `id,${e.textField},${e.timeField},${e.extraFields}`,
      ...(e.platform === 'facebook' ? { filter: 'stream', order: 'reverse_chronological' } : {}),
      limit: 50,
    }),
  );
  const hit = comments
    .filter(
      (c) =>
        mine(e, c) && sameText(c[e.textField], ctx.text) && !(parseGraphTime(c[e.timeField]) < since * 1000),
    )
    .sort((a, b) => parseGraphTime(a[e.timeField]) - parseGraphTime(b[e.timeField]))[0];
  return hit ? { externalId: hit.id, url: e.url(hit) } : null;
}
