import { putAudit } from '#adapters/audit-log';
import { getPostWithOrg } from '#adapters/posts';
import { canApprovePosts } from '#core/accounts';
import { ApiError } from '#core/errors';
import { ActError, type Actor } from '#core/people';
import { billingPeriod, effectiveLimits } from '#core/plans';
import {
  changedSince,
  decideApprove,
  decideReject,
  MAX_REJECT_REASON,
  type PostDecision,
  type PostRecord,
  type PostResource,
  toPost,
} from '#core/posts';
import { hiddenCharacterIn, hiddenCharacterMessage } from '#core/text';
import { type Authorized, auditEntry, authorizeAct, issuerOf, unmetered } from '#usecases/support/acts';
import { counting, quotaAware, withRetry } from '#usecases/support/post-writes';

// Approving and rejecting a post that waits for approval: owners and admins in the console, the
// operator with `herald post approve|reject`. One version-checked write decides: of two people
// approving, approve against reject, or approve against a delete, exactly one wins and the others
// get a conflict; the posts_per_month count is taken before the write and kept by the winner only
// (a loser's is given back: support/post-writes.ts).

/** What the page showed: the post's version and status (a changed post refuses the act). */
export interface Shown {
  version: number;
  status?: string | undefined;
}

interface DecideArgs {
  orgId: string;
  actor: Actor;
  postId: string;
  now: Date;
  /** From a page: the act applies only to the post as it was shown. */
  shown?: Shown | undefined;
}

/** needs_approval → scheduled (its time still ahead) or publishing, counted once against the quota. */
export async function approvePost(a: DecideArgs): Promise<PostResource> {
  const by = await authorizeAct(a.orgId, a.actor, canApprovePosts, 'approving posts');
  const postsPerMonth = effectiveLimits(by.org.plan, by.org.limits).posts_per_month;
  const approved = await decide(a, postsPerMonth, (post) =>
    withDecision(decideApprove(post, a.now), by, 'approved', null, a.now),
  );
  // After the write, not with it: the post's write is one UpdateItem, not a transaction the entry
  // could join. A crash between the two loses the entry, never the approval.
  await putAudit(
    auditEntry(
      { ...by, orgId: a.orgId },
      'post_approved',
      a.postId,
      { status: approved.status, scheduled_at: approved.scheduled_at },
      a.now,
    ),
  );
  return toPost(approved);
}

/** needs_approval → draft, with the reason kept on the post: it never publishes. */
export async function rejectPost(a: DecideArgs & { reason: string }): Promise<PostResource> {
  const by = await authorizeAct(a.orgId, a.actor, canApprovePosts, 'rejecting posts');
  const reason = a.reason.trim();
  if (!reason) throw new ActError('Say why the post is rejected.', 'invalid');
  if (reason.length > MAX_REJECT_REASON)
    throw new ActError(`Keep the reason to ${MAX_REJECT_REASON} characters or fewer.`, 'invalid');
  const hidden = hiddenCharacterIn(reason);
  if (hidden) throw new ActError(hiddenCharacterMessage('The reason', hidden), 'invalid');
  let asked: Pick<PostRecord, 'approval' | 'scheduled_at'> = { approval: null, scheduled_at: null };
  // A rejected post goes back to draft: never counted, so no allowance is needed.
  const rejected = await decide(a, 0, (post) => {
    asked = post;
    return withDecision(decideReject(post, a.now), by, 'rejected', reason, a.now);
  });
  await putAudit(
    auditEntry(
      { ...by, orgId: a.orgId },
      'post_rejected',
      a.postId,
      { reason, asked: asked.approval?.mode ?? null, scheduled_at: asked.scheduled_at },
      a.now,
    ),
  );
  return toPost(rejected);
}

function withDecision(
  next: PostRecord,
  by: Authorized,
  outcome: PostDecision['outcome'],
  reason: string | null,
  now: Date,
): PostRecord {
  const decision: PostDecision = {
    outcome,
    by: issuerOf(by),
    email: by.user?.email ?? null,
    at: now.toISOString(),
    reason,
  };
  return { ...next, decision };
}

/**
 * The read-decide-write step shared by both decisions, with the API's retry, quota and conflicts.
 * A person's act is not metered; a post it makes count is counted against `postsPerMonth`.
 */
async function decide(
  a: DecideArgs,
  postsPerMonth: number,
  step: (post: PostRecord) => PostRecord,
): Promise<PostRecord> {
  try {
    return await counting(a.orgId, { admitted: unmetered, postsPerMonth }, a.now, (counter) =>
      withRetry(async () => {
        const { org, post } = await getPostWithOrg(a.orgId, a.postId);
        if (!org) throw new ActError(`no organization ${a.orgId}`, 'not_found');
        // Not here (another workspace's id, or deleted since the page): 404, as the API answers.
        if (!post)
          throw new ActError(
            a.shown
              ? 'This workspace has no such post: it was deleted meanwhile, or never was here. Nothing was done.'
              : 'This workspace has no such post.',
            'not_found',
          );
        if (a.shown && post.version !== a.shown.version)
          throw new ActError(`${changedSince(a.shown.status, post)} Nothing was done.`, 'conflict');
        let next: PostRecord;
        try {
          next = step(post);
        } catch (err) {
          if (err instanceof ApiError) throw new ActError(err.message, 'conflict');
          throw err;
        }
        return quotaAware(() => counter.update(post, next), a.now);
      }),
    );
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    const period = billingPeriod(a.now.getTime());
    throw new ActError(
      err.code === 'quota_exhausted'
        ? `This workspace has used its posts_per_month for ${period.id} (it resets at ${period.endsAt}); nothing was approved.`
        : 'The post kept changing; try again.',
      'conflict',
    );
  }
}
