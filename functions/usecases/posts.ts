import { getOrg } from '#adapters/accounts';
import {
  ConcurrentChangeError,
  getPost,
  getPostWithOrg,
  type PostCount,
  PostQuotaError,
  queryPosts,
  removePost,
  replacePost,
} from '#adapters/posts';
import type { Org } from '#core/accounts';
import type { PostStatus } from '#core/constants';
import { PAGE_SIZE, type PageQuery, paginate } from '#core/cursor';
import { ApiError, conflict, dangerousOpsDisabled, notFound, ValidationError } from '#core/errors';
import { isId } from '#core/ids';
import { billingPeriod } from '#core/plans';
import {
  checkScheduleTime,
  countedNow,
  decideDelete,
  decidePublish,
  decideReschedule,
  type PostRecord,
  toPost,
} from '#core/posts';

const postNotFound = () => notFound('post');

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
async function withRetry<T>(step: () => Promise<T>): Promise<T> {
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

export async function getPostById(orgId: string, postId: string) {
  if (!isId('post', postId)) throw postNotFound();
  const post = await getPost(orgId, postId);
  if (!post) throw postNotFound();
  return toPost(post);
}

export async function listPosts(
  orgId: string,
  query: PageQuery & { status?: PostStatus | undefined },
  cursorSecret: string,
) {
  const scope = { list: 'posts', orgId, filter: query.status ?? '' };
  const page = paginate(cursorSecret, scope, query.after, (k) => isId('post', k));
  const posts = await queryPosts(orgId, {
    limit: query.limit ?? PAGE_SIZE.default,
    afterId: page.afterKey,
    status: query.status,
  });
  return page.envelope({ items: posts.posts, hasMore: posts.hasMore }, toPost, (p) => p.id);
}

/** reschedulePost: draft/scheduled/failed → scheduled at a new future time (docs/posts.md). */
export async function reschedulePost(
  orgId: string,
  postId: string,
  scheduledAt: string,
  now: Date,
  gate: Gate,
) {
  const timeError = checkScheduleTime(scheduledAt, now);
  if (timeError) throw new ValidationError([timeError]);
  if (!isId('post', postId)) throw postNotFound();
  return withRetry(async () => {
    const { org, post } = await getPostWithOrg(orgId, postId);
    const settings = requireOrg(org).settings;
    if (!post) throw postNotFound();
    const { next, count } = postCount(decideReschedule(post, scheduledAt, settings, now), gate, now);
    await gate.admitted();
    return toPost(
      await quotaAware(
        () => replacePost(next, post.version, { approval_required: settings.approval_required }, count),
        now,
      ),
    );
  });
}

/** publishPost: needs the dangerous-operations toggle; draft/scheduled/failed → publishing. */
export async function publishPost(orgId: string, postId: string, now: Date, gate: Gate) {
  return withRetry(async () => {
    const { org, post } = await loadForDangerousOp(orgId, postId);
    const decision = decidePublish(post, org.settings, now);
    await gate.admitted();
    if ('unchanged' in decision) return { id: post.id, status: post.status };
    const { next, count } = postCount(decision.change, gate, now);
    const settings = { dangerous_ops: true, approval_required: org.settings.approval_required };
    const result = await quotaAware(() => replacePost(next, post.version, settings, count), now);
    return { id: result.id, status: result.status };
  });
}

/** deletePost: needs the toggle; anything but publishing is removed. Published content stays on platforms. */
export async function deletePost(orgId: string, postId: string, gate: Pick<Gate, 'admitted'>) {
  return withRetry(async () => {
    const { org, post } = await loadForDangerousOp(orgId, postId);
    decideDelete(post, org.settings);
    await gate.admitted();
    await removePost(post);
    return { id: post.id, deleted: true as const };
  });
}

/** Order of checks (docs/limits.md): the toggle (403) before the post's existence (404). */
async function loadForDangerousOp(orgId: string, postId: string): Promise<{ org: Org; post: PostRecord }> {
  const { org, post } = isId('post', postId)
    ? await getPostWithOrg(orgId, postId)
    : { org: await getOrg(orgId), post: null };
  const o = requireOrg(org);
  if (!o.settings.dangerous_ops) throw dangerousOpsDisabled();
  if (!post) throw postNotFound();
  return { org: o, post };
}
