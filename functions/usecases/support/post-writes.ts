import { getOrg } from '#adapters/orgs';
import { ConcurrentChangeError, getPostWithOrg, type PostCount, PostQuotaError } from '#adapters/posts';
import type { Org } from '#core/accounts';
import { ApiError, conflict, dangerousOpsDisabled, notFound } from '#core/errors';
import { isId } from '#core/ids';
import { billingPeriod } from '#core/plans';
import { countedNow, type PostRecord } from '#core/posts';

// What the post-writing operations (createPost, reschedulePost, publishPost, deletePost and the
// admin CLI's approve) share: the posts_per_month count, its 429, the retry on a concurrent
// change, and the order of checks of the dangerous operations.

export const postNotFound = () => notFound('post');

export function requireOrg(org: Org | null): Org {
  // The key was valid moments ago; a missing org means it was removed since.
  if (!org) throw new ApiError('invalid_api_key', 'The API key is not valid.');
  return org;
}

/** What a write needs from the pipeline: the admission to await before writing, and the posts allowance. */
export interface Gate {
  admitted: () => Promise<unknown>;
  postsPerMonth: number;
}

/** The posts_per_month count for a write that makes `next` count now, or none. */
export function postCount(next: PostRecord, gate: Gate, now: Date): { next: PostRecord; count?: PostCount } {
  const period = billingPeriod(now.getTime());
  const counted = countedNow(next, period.id);
  return counted ? { next: counted, count: { period: period.id, limit: gate.postsPerMonth } } : { next };
}

/** Turns the posts_per_month refusal of a write into the 429 clients see. */
export async function quotaAware<T>(write: () => Promise<T>, now: Date): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (!(err instanceof PostQuotaError)) throw err;
    const period = billingPeriod(now.getTime());
    throw new ApiError(
      'quota_exhausted',
      `The organization has scheduled or published its posts_per_month allowance for ${period.id}; it resets at ${period.endsAt}.`,
      {
        headers: { 'retry-after': String(period.secondsLeft) },
      },
    );
  }
}

/** Runs a read-decide-write step again when a concurrent writer got there first. */
export async function withRetry<T>(step: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      if (!(err instanceof ConcurrentChangeError) || attempt >= 4) {
        if (err instanceof ConcurrentChangeError)
          throw conflict('The post changed while it was being updated; retry.');
        throw err;
      }
    }
  }
}

/** Order of checks (docs/limits.md): the toggle (403) before the post's existence (404). */
export async function loadForDangerousOp(
  orgId: string,
  postId: string,
): Promise<{ org: Org; post: PostRecord }> {
  const { org, post } = isId('post', postId)
    ? await getPostWithOrg(orgId, postId)
    : { org: await getOrg(orgId), post: null };
  const o = requireOrg(org);
  if (!o.settings.dangerous_ops) throw dangerousOpsDisabled();
  if (!post) throw postNotFound();
  return { org: o, post };
}
