import { PlatformError, type PublishContext, type PublishResult } from './types.ts';

// Small helpers several connectors share.

/** A non-empty string, else undefined (credentials, options and API answers are untyped). */
export const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The earlier attempt's result cannot be known: the worker must not publish again on its own. */
export function outcomeUnknown(platform: string, why: string): PlatformError {
  return new PlatformError('system', `${platform}: outcome unknown: ${why}`, {
    retryable: false,
    unknownOutcome: true,
  });
}

/**
 * A reconcile lookup whose failure leaves the outcome unknown. Auth and rate limits pass through (the
 * worker handles them); anything else becomes a system error, retryable only when the cause was.
 */
export async function orOutcomeUnknown<T>(
  platform: string,
  why: string,
  lookup: () => Promise<T>,
): Promise<T> {
  try {
    return await lookup();
  } catch (err) {
    if (err instanceof PlatformError && (err.category === 'auth_expired' || err.category === 'rate_limited'))
      throw err;
    const detail = err instanceof Error ? err.message : String(err);
    throw new PlatformError('system', `${platform}: outcome unknown${why ? `, ${why}` : ''}: ${detail}`, {
      retryable: err instanceof PlatformError ? err.retryable : false,
      unknownOutcome: true,
      ...(err instanceof PlatformError && err.opts.retryAfterSeconds !== undefined
        ? { retryAfterSeconds: err.opts.retryAfterSeconds }
        : {}),
    });
  }
}

/**
 * Epoch ms from which a lookup searches for the post an earlier attempt made: the earlier of
 * `attemptStartedAt` (the earliest attempt whose outcome is unknown) and the time a checkpoint
 * marked (`marked`, an ISO string), less `slackMs` for the platform's clock.
 */
export function searchFrom(
  ctx: Pick<PublishContext, 'attemptStartedAt'>,
  marked: unknown,
  slackMs: number,
): number {
  const times = [ctx.attemptStartedAt.getTime()];
  const at = typeof marked === 'string' ? Date.parse(marked) : Number.NaN;
  if (Number.isFinite(at) && at > 0) times.push(at);
  return Math.min(...times) - slackMs;
}

/** Pacing of a status poll: a delay per round (the last repeats) and a total budget. */
export interface Polling {
  delaysMs: number[];
  budgetMs: number;
}

/** Exponential pacing: `firstDelayMs` doubling up to `maxDelayMs`, within `budgetMs`. */
export interface Backoff {
  firstDelayMs: number;
  maxDelayMs: number;
  budgetMs: number;
}

/** A backoff as `pollWithin` paces it: an immediate first round, then the doubling delays. */
export function backoff(b: Backoff): Polling {
  const delaysMs = [0];
  let d = b.firstDelayMs;
  while (d > 0 && d < b.maxDelayMs) {
    delaysMs.push(d);
    d *= 2;
  }
  delaysMs.push(Math.min(d, b.maxDelayMs));
  return { delaysMs, budgetMs: b.budgetMs };
}

/**
 * Polls `check` after each delay of `polling` until it returns a value; undefined once the next delay
 * would run past the budget (the caller decides what "still processing" means). The first round always runs.
 */
export async function pollWithin<T>(
  polling: Polling,
  check: () => Promise<T | undefined>,
): Promise<T | undefined> {
  const started = Date.now();
  for (let i = 0; ; i++) {
    const delay = polling.delaysMs[Math.min(i, polling.delaysMs.length - 1)] ?? 1000;
    if (i > 0 && Date.now() - started + delay > polling.budgetMs) return undefined;
    if (delay) await sleep(delay);
    const done = await check();
    if (done !== undefined) return done;
  }
}

// The posting checkpoint of the platforms without an idempotency key on their create call (X,
// LinkedIn, Mastodon, Bluesky): `stage: posting` is saved before it. What the call created is
// recorded by the delivery's outcome write right after, so no `stage: published` checkpoint is
// written (it cost a write per delivery); reconcile still honours one an older attempt left.

/** The post a checkpoint already records as published, or null. */
export function publishedIn(
  cp: Record<string, unknown> | null,
  url: (externalId: string) => string | null,
): PublishResult | null {
  if (cp?.stage !== 'published' || typeof cp.externalId !== 'string') return null;
  return { externalId: cp.externalId, url: typeof cp.url === 'string' ? cp.url : url(cp.externalId) };
}

type PartPaths = {
  publish(ctx: PublishContext): Promise<PublishResult>;
  reconcile(ctx: PublishContext): Promise<PublishResult | null>;
};

/**
 * publish/reconcile of a platform whose first comment goes through a comment API (not a reply):
 * the post's paths for the root, the comment's for `part.kind === 'comment'`, and no threads.
 */
export function postOrComment(platform: string, post: PartPaths, comment: PartPaths): PartPaths {
  const paths = (ctx: PublishContext): PartPaths => {
    if (ctx.part?.kind === 'thread')
      throw new PlatformError('user_content', `${platform}: posts have no threads`, { retryable: false });
    return ctx.part?.kind === 'comment' ? comment : post;
  };
  return {
    publish: async (ctx) => paths(ctx).publish(ctx),
    reconcile: async (ctx) => paths(ctx).reconcile(ctx),
  };
}

/** A variant's `options.poll` as a connector sends it: its choices and how long it stays open. */
export interface PollAsked {
  choices: string[];
  minutes: number;
}

/**
 * The poll the root carries (thread items and comments carry none: options are the variant's),
 * with the platform's default duration when none was asked. createPost checked the shape.
 */
export function rootPoll(
  ctx: Pick<PublishContext, 'part' | 'options'>,
  defaultMinutes: number,
): PollAsked | null {
  if (ctx.part && ctx.part.kind !== 'root') return null;
  const poll = ctx.options.poll as { choices?: unknown; duration_minutes?: unknown } | undefined;
  if (!poll || !Array.isArray(poll.choices)) return null;
  const minutes = typeof poll.duration_minutes === 'number' ? poll.duration_minutes : defaultMinutes;
  return { choices: poll.choices.map(String), minutes };
}

/** A poll with media: every platform with polls refuses it (createPost does too). */
export function pollWithMedia(platform: string): PlatformError {
  return new PlatformError('user_content', `${platform}: a post with a poll takes no media`, {
    retryable: false,
  });
}
