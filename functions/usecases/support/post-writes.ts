import { randomBytes } from 'node:crypto';
import { getOrg } from '#adapters/orgs';
import {
  ConcurrentChangeError,
  getPostWithOrg,
  insertPost,
  mayHaveLanded,
  PostQuotaError,
  updatePost,
} from '#adapters/posts';
import { countPost, uncountPost } from '#adapters/usage';
import type { Admission, Org, PostsToCount } from '#core/accounts';
import { ApiError, conflict, dangerousOpsDisabled, notFound } from '#core/errors';
import { isId } from '#core/ids';
import { billingPeriod } from '#core/plans';
import { countedNow, type PostRecord } from '#core/posts';
import { logger } from '#shared/logger';
import { postsQuotaExhausted } from '#usecases/support/admission';

// What the post-writing operations (createPost, reschedulePost, publishPost, deletePost, and the
// console's and the CLI's acts and approvals) share: the posts_per_month count, its 429, the retry
// on a concurrent change, and the order of checks of the dangerous operations.
//
// Settings (dangerous_ops, approval_required) are read with the post, strongly consistent, in one
// round trip, and the write is conditional on the post's version only. A toggle committed before
// that read is honoured; one committed after it is concurrent with the request (the request was
// already under way and has not answered), and the request is ordered before it — as if it had
// been written at its read. Guarding the settings in the write as well would make it a
// transaction, which bills every unit twice (GSI writes included) for a window of one round trip.

export const postNotFound = () => notFound('post');

export function requireOrg(org: Org | null): Org {
  // The key was valid moments ago; a missing org means it was removed since.
  if (!org) throw new ApiError('invalid_api_key', 'The API key is not valid.');
  return org;
}

/** What a write needs from the pipeline: the admission to await before writing, and the posts allowance. */
export interface Gate {
  /**
   * The request's admission. `posts`: count one post against posts_per_month in the gate's own
   * write; only an admission not started yet can (the answer's `postCounted` says if it did).
   */
  admitted: (posts?: PostsToCount) => Promise<unknown>;
  postsPerMonth: number;
}

/**
 * One request's posts_per_month count (docs/api/limits.md), from the moment it is taken until the
 * write that makes the post count lands:
 * - taken before that write, conditionally at the allowance, so the allowance is never exceeded:
 *   in the request gate's own write when the admission is asked for it before it starts — at once
 *   by an operation that most likely counts a post (`expect`: createPost scheduling or publishing,
 *   publishPost), or once decided (reschedulePost) — otherwise by a write of its own (a request
 *   admitted already, a person's act);
 * - carried by the post's write (`counted_period`); a retry of the same request after a lost race
 *   reuses it;
 * - given back at the end when no write of the request can have used it: none was tried (a count
 *   taken in expectation of a post that did not count after all: already counted, needs approval,
 *   400, 404, 409…), or each one certainly did not land (see updatePost), or the post as read again
 *   is still uncounted (a landed write would have counted it, and nothing uncounts a post);
 * - kept otherwise: a write that may have landed (an SDK attempt whose answer was lost — a reset
 *   connection, a timeout, a 500 — when the post is then gone or moved on by several writes, or
 *   the write failed), a give-back that failed, a process that died between the count and the
 *   write or the give-back. So a post may be counted once too often, never once too rarely.
 * Every write of the request carries the same `write_id`, so a late-landing earlier attempt is
 * recognised as ours by the later ones.
 */
export class PostCounter {
  /** The period of a count taken and not (known to be) used by a landed write. */
  private held: string | null = null;
  /** A write carrying the held count failed in a way that may have landed. */
  private doubt = false;
  /** The gate's write counted a post for this request (it does so at most once). */
  private gateCounted = false;
  /** The admission asked, in expectation, to count a post. */
  private expected: Promise<unknown> | null = null;
  /** A give-back under way. */
  private givingBack: Promise<void> = Promise.resolve();
  // 64 random bits: unique among a post's writers, and few bytes on an item billed by the KB.
  private readonly writeId = randomBytes(8).toString('base64url');
  private readonly period: string;

  constructor(
    private readonly orgId: string,
    private readonly gate: Gate,
    now: Date,
  ) {
    this.period = billingPeriod(now.getTime()).id;
  }

  /**
   * Starts the admission now, asking it to count a post, beside the operation's read: for an
   * operation that will most likely make its post count. Costs a give-back when it does not.
   */
  expect(): void {
    this.expected = this.gate.admitted({ period: this.period, limit: this.gate.postsPerMonth });
    this.expected.catch(() => undefined); // awaited by admit() or release()
  }

  /** Writes `next` over `before` (as read), counting the post first when this write makes it count. */
  async update(before: PostRecord, next: PostRecord): Promise<PostRecord> {
    const counted = await this.admit(next);
    try {
      const written = await updatePost(before, counted ?? next, this.writeId);
      if (counted) this.held = null;
      return written;
    } catch (err) {
      if (counted && mayHaveLanded(err)) this.doubt = true;
      throw err;
    }
  }

  /** Inserts a new post, counting it first when it counts. Returns the post as written. */
  async insert(post: PostRecord): Promise<PostRecord> {
    const counted = await this.admit(post);
    try {
      await insertPost(counted ?? post);
      if (counted) this.held = null;
    } catch (err) {
      if (counted && mayHaveLanded(err)) this.doubt = true;
      throw err;
    }
    return counted ?? post;
  }

  /** Gives back a count that no write can have used. Runs once the request is done, whatever its outcome. */
  async release(): Promise<void> {
    if (this.expected) this.fromGate(await this.expected.catch(() => undefined));
    this.giveBack();
    await this.givingBack;
  }

  /** Starts giving back the held count, if no write can have used it. */
  private giveBack(): void {
    const period = this.held;
    if (!period || this.doubt) return;
    this.held = null;
    const orgId = this.orgId;
    const previous = this.givingBack;
    this.givingBack = (async () => {
      await previous;
      try {
        await uncountPost(orgId, period);
      } catch (err) {
        // Kept: one post over-counted, the safe side.
        logger.warn('posts_per_month: an unused count was not given back', { org_id: orgId, err });
      }
    })();
  }

  /** Holds the count an admission's write took, once. */
  private fromGate(admission: unknown): void {
    const a = admission as Admission | undefined;
    if (this.gateCounted || !a?.allowed || !a.postCounted) return;
    this.gateCounted = true;
    this.held = this.period;
  }

  /** Admits the request; when `next` makes the post count, takes the count and returns `next` marked counted. */
  private async admit(next: PostRecord): Promise<PostRecord | null> {
    const counted = countedNow(next, this.period);
    if (!counted) {
      // A count taken in expectation is given back beside the write (no round trip of its own).
      this.fromGate(await this.gate.admitted());
      this.giveBack();
      return null;
    }
    // The post as read is uncounted: no earlier write of this request that carried the count landed.
    this.doubt = false;
    if (this.held) return counted;
    this.fromGate(await this.gate.admitted({ period: this.period, limit: this.gate.postsPerMonth }));
    if (this.held) return counted;
    if (!(await countPost(this.orgId, this.period, this.gate.postsPerMonth))) throw new PostQuotaError();
    this.held = this.period;
    return counted;
  }
}

/**
 * Runs a post-writing step with its posts_per_month counter, giving back a count left unused.
 * `expect`: the step will most likely make its post count (see PostCounter.expect).
 */
export async function counting<T>(
  orgId: string,
  gate: Gate,
  now: Date,
  step: (counter: PostCounter) => Promise<T>,
  opts: { expect?: boolean } = {},
): Promise<T> {
  const counter = new PostCounter(orgId, gate, now);
  if (opts.expect) counter.expect();
  try {
    return await step(counter);
  } finally {
    await counter.release();
  }
}

/** Turns the posts_per_month refusal of a write into the 429 clients see. */
export async function quotaAware<T>(write: () => Promise<T>, now: Date): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (!(err instanceof PostQuotaError)) throw err;
    throw postsQuotaExhausted(now.getTime());
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

/** Order of checks (docs/api/limits.md): the toggle (403) before the post's existence (404). */
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
