import { orOutcomeUnknown, searchFrom } from '../support.ts';
import { PlatformError, type PublishContext, type PublishResult } from '../types.ts';
import { Auth, call, ok } from './client.ts';
import { linkedinError } from './errors.ts';

// The first comment under a LinkedIn post, through the Comments API of the versioned REST API
// (learn.microsoft.com/linkedin/marketing/community-management/shares/comments-api, "Create a
// Comment"): POST /rest/socialActions/{shareUrn|ugcPostUrn}/comments with {actor, object, message:
// {text}}; the actor is the channel's author URN, so w_member_social (a member) or
// w_organization_social (an organization) covers it, as it covers posting. LinkedIn answers 201 with
// the comment (`commentUrn`, `$URN`) and its id in x-restli-id. The text is plain, not little text.
// No idempotency key: a checkpoint is saved before the call, and reconcile lists the post's comments
// (GET …/comments needs r_member_social or r_organization_social, which most apps lack: then the
// outcome stays unknown rather than risking a second comment).

/** A comment as the Comments API answers it (on a post, or under a comment: `parentComment`). */
export interface LiComment {
  id?: string;
  commentUrn?: string;
  $URN?: string;
  actor?: string;
  object?: string;
  parentComment?: string;
  message?: { text?: string };
  created?: { time?: number };
  commentsSummary?: { aggregatedTotalComments?: number; totalFirstLevelComments?: number };
}

export const commentsPath = (post: string) => `/rest/socialActions/${encodeURIComponent(post)}/comments`;

/** Where LinkedIn shows one comment: the post's page, scrolled to it. */
export const commentUrl = (post: string, comment: string) =>
  `https://www.linkedin.com/feed/update/${post}?commentUrn=${encodeURIComponent(comment)}`;

function parentOf(ctx: PublishContext): string {
  const cp = ctx.checkpoint;
  const id = typeof cp?.parent === 'string' ? cp.parent : ctx.replyTo?.parent.externalId;
  if (!id || !/^urn:li:(share|ugcPost):/.test(id))
    throw new PlatformError('system', `linkedin: a first comment needs the post's share or ugcPost URN`, {
      retryable: false,
    });
  return id;
}

/** A comment's URN: as answered, else built from its id (or the created one's `x-restli-id`) on `post`. */
export const commentUrnOf = (
  c: LiComment,
  post: string,
  headerId: string | null = null,
): string | undefined =>
  c.commentUrn ?? c.$URN ?? (c.id || headerId ? `urn:li:comment:(${post},${c.id ?? headerId})` : undefined);

export async function publishComment(ctx: PublishContext): Promise<PublishResult> {
  const auth = new Auth(ctx);
  const post = parentOf(ctx);
  if (!ctx.text.trim())
    throw new PlatformError('user_content', 'linkedin: a comment needs text', { retryable: false });
  const body = { actor: auth.author, object: post, message: { text: ctx.text } };
  await ctx.saveCheckpoint({ stage: 'commenting', parent: post, sentAt: new Date().toISOString() });
  const res = await call<LiComment>(auth, 'POST', commentsPath(post), { json: body });
  if (res.status !== 201 && res.status !== 200) throw linkedinError(res, 'POST socialActions comments');
  const made = typeof res.body === 'object' && res.body ? res.body : {};
  const urn = commentUrnOf(made, post, res.headers.get('x-restli-id'));
  if (!urn)
    throw new PlatformError('system', 'linkedin: the comment was created without an id', {
      retryable: false,
      unknownOutcome: true,
    });
  return { externalId: urn, url: commentUrl(post, urn) };
}

export async function reconcileComment(ctx: PublishContext): Promise<PublishResult | null> {
  // The checkpoint is saved right before the call: without one, no comment was made.
  if (ctx.checkpoint?.stage !== 'commenting') return null;
  const auth = new Auth(ctx);
  const post = parentOf(ctx);
  const since = searchFrom(ctx, ctx.checkpoint.sentAt, 2 * 60_000);
  const res = await orOutcomeUnknown('linkedin', "the post's comments could not be read", () =>
    ok<{ elements?: LiComment[] }>(auth, 'GET', `${commentsPath(post)}?start=0&count=50`),
  );
  const want = ctx.text.trim();
  const hit = (res.body.elements ?? []).find(
    (c) =>
      c.actor === auth.author &&
      (c.message?.text ?? '').trim() === want &&
      (c.created?.time ?? Date.now()) >= since,
  );
  const urn = hit ? commentUrnOf(hit, post) : undefined;
  return urn ? { externalId: urn, url: commentUrl(post, urn) } : null;
}
