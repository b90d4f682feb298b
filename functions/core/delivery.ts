import type { ERROR_CATEGORIES } from './constants.ts';
import {
  type DeliveryRecord,
  type DeliveryWarning,
  type PartRecord,
  type PostRecord,
  queuedPart,
  startPublishing,
  watchEntry,
} from './posts.ts';
import { LEASE_SECONDS, WATCHDOG_SECONDS } from './timing.ts';

// Delivery outcomes (docs/api/posts.md, "Deliveries"): the stages, the error taxonomy, and the retry policy.

export type ErrorCategory = (typeof ERROR_CATEGORIES)[number];

/** Attempts per delivery before it is finally failed. */
export const MAX_ATTEMPTS = 5;

/** The longest platform hint honoured (Instagram's publishing limit is a rolling 24 h). */
const MAX_HINT_SECONDS = 24 * 3600;

/** Backoff before attempt n+1 (seconds): the platform's hint when it gave one, else exponential with jitter, ≤ 15 min. */
export function retryDelaySeconds(
  attempt: number,
  hintSeconds: number | undefined,
  random = Math.random,
): number {
  if (hintSeconds !== undefined && hintSeconds >= 0)
    return Math.min(MAX_HINT_SECONDS, Math.ceil(hintSeconds));
  const base = Math.min(900, 5 * 3 ** (attempt - 1));
  return Math.max(1, Math.round(base * (0.8 + 0.4 * random())));
}

// ---- the delivery state machine (pure) -----------------------------------------------------------

export type ClaimOutcome =
  | {
      kind: 'claimed';
      post: PostRecord;
      /** An earlier attempt's outcome is unknown (`unresolved_since`): reconcile before sending. */
      recovering: boolean;
      /** An abandoned send was taken over: it counted no new attempt. */
      resumed: boolean;
    }
  | { kind: 'skip'; reason: string }
  | { kind: 'busy' };

/**
 * Takes a delivery for one attempt. A delivery of another round, a final one, or one another
 * worker holds under a live lease is not taken. A `sending` delivery whose lease ran out was
 * abandoned mid-send: its attempt's outcome is unknown from then on (`unresolved_since`), and
 * every claim while it is unknown is `recovering`, so the worker reconciles before sending.
 */
export function claimDelivery(
  post: PostRecord,
  channelId: string,
  round: number,
  claimId: string,
  now: Date,
  start?: string,
): ClaimOutcome {
  // A dispatch's message: the first one to arrive starts the post (and claims its own channel in
  // the same write), as long as the post is still scheduled for that time and round.
  if (start && post.status === 'scheduled') {
    if (post.scheduled_at !== start || post.round + 1 !== round)
      return { kind: 'skip', reason: 'stale dispatch' };
    const started = startPublishing(post, now);
    return claimDelivery(
      { ...started, dispatched: { for: start, at: now.toISOString(), round } },
      channelId,
      round,
      claimId,
      now,
    );
  }
  const d = post.deliveries[channelId];
  if (!d || post.status !== 'publishing' || d.round !== round || post.round !== round)
    return { kind: 'skip', reason: 'stale message' };
  if (d.stage === 'published' || d.stage === 'failed') return { kind: 'skip', reason: `already ${d.stage}` };
  const leaseLive =
    d.stage === 'sending' && d.lease_until !== undefined && Date.parse(d.lease_until) > now.getTime();
  if (leaseLive) return { kind: 'busy' };
  if (d.stage === 'retrying' && d.next_attempt_at && Date.parse(d.next_attempt_at) > now.getTime() + 1000) {
    return { kind: 'skip', reason: 'not due yet' };
  }
  const resumed = d.stage === 'sending';
  const at = now.toISOString();
  const unresolvedSince =
    d.unresolved_since ?? (resumed ? (d.attempt_started_at ?? d.updated_at) : undefined);
  const claimed: DeliveryRecord = {
    ...d,
    stage: 'sending',
    attempts: resumed ? d.attempts : d.attempts + 1,
    claim_id: claimId,
    lease_until: new Date(now.getTime() + LEASE_SECONDS * 1000).toISOString(),
    attempt_started_at: at,
    unresolved_since: unresolvedSince,
    updated_at: at,
  };
  return {
    kind: 'claimed',
    post: withDelivery(post, claimed, now),
    recovering: unresolvedSince !== undefined,
    resumed,
  };
}

/** The error of a delivery that ends while an earlier attempt is unresolved: it says so. */
export function withUnknownOutcome(message: string): string {
  if (/outcome unknown/i.test(message)) return message;
  return `Outcome unknown: an earlier attempt may have reached the platform, and it could not be checked since (${message})`;
}

/** A reconcile found that no earlier attempt posted it: nothing is unresolved any more. */
export function nothingPosted(d: DeliveryRecord): DeliveryRecord {
  return { ...d, unresolved_since: undefined };
}

/** The post with one delivery replaced, its status derived, and its watchdog moved. */
export function withDelivery(post: PostRecord, delivery: DeliveryRecord, now: Date): PostRecord {
  const deliveries = { ...post.deliveries, [delivery.channel_id]: delivery };
  const current = currentDeliveries({ ...post, deliveries });
  const final = finalStatus(post, current);
  const status = final ?? post.status;
  const publishedAt = final === 'published' ? now.toISOString() : post.published_at;
  const pendingUntil = current
    .filter((d) => d.stage === 'retrying' && d.next_attempt_at)
    .reduce((max, d) => Math.max(max, Date.parse(d.next_attempt_at as string)), now.getTime());
  const watchAt =
    status === 'publishing' ? new Date(pendingUntil + WATCHDOG_SECONDS * 1000).toISOString() : null;
  return {
    ...post,
    deliveries,
    status,
    published_at: publishedAt,
    watch_at: watchAt,
    // Re-filed in the due-work index only when the watchdog time would leave the sweeper's sight.
    watch_entry: watchAt ? watchEntry(post, watchAt) : null,
    updated_at: now.toISOString(),
  };
}

/** The round's deliveries (and those published in an earlier one), one per variant at most. */
function currentDeliveries(post: PostRecord): DeliveryRecord[] {
  return post.variants
    .map((v) => post.deliveries[v.channel_id])
    .filter((d): d is DeliveryRecord => d?.round === post.round || (d !== undefined && isDone(d)));
}

/** `published`/`failed` once every delivery of a publishing post is final; null before. */
function finalStatus(post: PostRecord, current: DeliveryRecord[]): 'published' | 'failed' | null {
  if (post.status !== 'publishing' || current.length !== post.variants.length) return null;
  if (!current.every((d) => isDone(d) || d.stage === 'failed')) return null;
  return current.every(isDone) ? 'published' : 'failed';
}

/** Published, or published and taken down since (unpublishPost): never sent again. */
export const isDone = (d: DeliveryRecord) =>
  d.stage === 'published' || d.stage === 'removing' || d.stage === 'removed';

/**
 * The post's aggregate after a delivery was written on its own (one channel's state, not the post):
 * the status once the last delivery is final, or the watchdog time when a delivery's own time (a
 * retry's, a lease's) has run past it. Null when it stands, which is the common case: a delivery
 * write then costs no second write. The watchdog firing early costs a look and a write; late, a
 * lost message waits — so it only ever moves forward, and a whole WATCHDOG_SECONDS at a time.
 */
export function settledPost(post: PostRecord, now: Date): PostRecord | null {
  if (post.status !== 'publishing') return null;
  const current = currentDeliveries(post);
  const final = finalStatus(post, current);
  if (final) {
    return {
      ...post,
      status: final,
      published_at: final === 'published' ? now.toISOString() : post.published_at,
      watch_at: null,
      watch_entry: null,
      updated_at: now.toISOString(),
    };
  }
  const due = current.reduce((max, d) => {
    const at = d.stage === 'retrying' ? d.next_attempt_at : d.stage === 'sending' ? d.lease_until : undefined;
    return at ? Math.max(max, Date.parse(at)) : max;
  }, 0);
  if (!due || (post.watch_at && Date.parse(post.watch_at) >= due)) return null;
  const watchAt = new Date(due + WATCHDOG_SECONDS * 1000).toISOString();
  return {
    ...post,
    watch_at: watchAt,
    watch_entry: watchEntry(post, watchAt),
    updated_at: now.toISOString(),
  };
}

export function deliverySucceeded(
  d: DeliveryRecord,
  result: { externalId: string; url: string | null },
  now: Date,
): DeliveryRecord {
  return {
    ...d,
    stage: 'published',
    external_id: result.externalId,
    url: result.url,
    error: null,
    error_category: null,
    checkpoint: null,
    lease_until: undefined,
    claim_id: undefined,
    next_attempt_at: undefined,
    unresolved_since: undefined,
    updated_at: now.toISOString(),
  };
}

/**
 * A failed attempt: retry later (with the platform's hint) or fail for good. `maybeSent`: the
 * failure came after the request left, without an answer that says the platform did not act on
 * it (a timeout, a dropped connection, a 5xx): from this attempt on the outcome is unknown, unless
 * an earlier one already was. A delivery that ends while its outcome is unknown says so.
 */
export function deliveryFailed(
  d: DeliveryRecord,
  err: {
    category: ErrorCategory;
    message: string;
    retryable: boolean;
    retryAfterSeconds?: number | undefined;
    maybeSent?: boolean;
  },
  now: Date,
  random = Math.random,
): DeliveryRecord {
  const retry = err.retryable && d.attempts < MAX_ATTEMPTS;
  const unresolvedSince =
    d.unresolved_since ?? (err.maybeSent ? (d.attempt_started_at ?? now.toISOString()) : undefined);
  const base = {
    ...d,
    error: err.message.slice(0, 1000),
    error_category: err.category,
    lease_until: undefined,
    claim_id: undefined,
    unresolved_since: unresolvedSince,
    updated_at: now.toISOString(),
  };
  if (!retry) {
    const error = unresolvedSince ? withUnknownOutcome(err.message) : err.message;
    return { ...base, stage: 'failed', error: error.slice(0, 1000), next_attempt_at: undefined };
  }
  const delay = retryDelaySeconds(d.attempts, err.retryAfterSeconds, random);
  return {
    ...base,
    stage: 'retrying',
    next_attempt_at: new Date(now.getTime() + delay * 1000).toISOString(),
  };
}

// ---- the parts of a delivery (threads, first comments) -------------------------------------------
//
// A delivery publishes its parts in order under one claim: the root (the delivery's own
// external_id/url/ref), each thread item, then the first comment. Each part's outcome is written
// before the next part starts, with attempt_started_at moved to that moment: so at any time at
// most one part — the first not yet published — can have an unknown outcome, and a recovering
// claim reconciles that one part, searching from its own start.

/** A part of a delivery: the root, a thread item (by index), or the first comment. */
export type DeliveryPart = { kind: 'root' } | { kind: 'thread'; index: number } | { kind: 'comment' };

/** The first part of the delivery not yet published, in publishing order; null when none is left. */
export function nextPart(d: DeliveryRecord): DeliveryPart | null {
  if (d.external_id === null) return { kind: 'root' };
  const index = (d.thread ?? []).findIndex((p) => p.stage !== 'published');
  if (index >= 0) return { kind: 'thread', index };
  if (d.first_comment && d.first_comment.stage === 'queued') return { kind: 'comment' };
  return null;
}

/** The part's place in the delivery's idempotency keys: `<post>.<channel>`, `.t<index>`, `.c`. */
export function partKey(base: string, part: DeliveryPart): string {
  if (part.kind === 'thread') return `${base}.t${part.index}`;
  if (part.kind === 'comment') return `${base}.c`;
  return base;
}

/** What a published part is referred to by: its id, url and platform ref. */
export interface PartRef {
  externalId: string;
  url: string | null;
  ref?: Record<string, unknown> | null;
}

/**
 * What a thread item or comment replies to: the thread's root, and the part before it (a thread
 * item: the previous item or the root; the comment: the thread's last item or the root).
 */
export function replyRefs(d: DeliveryRecord, part: DeliveryPart): { root: PartRef; parent: PartRef } | null {
  if (part.kind === 'root' || d.external_id === null) return null;
  const root: PartRef = { externalId: d.external_id, url: d.url, ref: d.ref ?? null };
  const thread = d.thread ?? [];
  const before = part.kind === 'thread' ? part.index - 1 : thread.length - 1;
  const prev = before >= 0 ? thread[before] : undefined;
  const parent: PartRef =
    prev?.external_id != null ? { externalId: prev.external_id, url: prev.url, ref: prev.ref ?? null } : root;
  return { root, parent };
}

function withPart(d: DeliveryRecord, part: DeliveryPart, value: PartRecord): DeliveryRecord {
  if (part.kind === 'thread') {
    const thread = [...(d.thread ?? [])];
    thread[part.index] = value;
    return { ...d, thread };
  }
  if (part.kind === 'comment') return { ...d, first_comment: value };
  return d;
}

/**
 * A part was published (or found by a reconcile): recorded on the delivery. The delivery is
 * `published` once no part is left; until then it stays `sending` under this claim, its lease
 * renewed and its attempt's start moved to now — the next part's start, from which a lookup for it
 * would search — and nothing unresolved (the one part that could be is now known).
 */
export function partSucceeded(
  d: DeliveryRecord,
  part: DeliveryPart,
  result: { externalId: string; url: string | null; ref?: Record<string, unknown> | null },
  now: Date,
  warnings: readonly DeliveryWarning[] = [],
): DeliveryRecord {
  const recorded =
    part.kind === 'root'
      ? {
          ...withWarnings(d, warnings),
          external_id: result.externalId,
          url: result.url,
          ...(result.ref ? { ref: result.ref } : {}),
        }
      : withPart(withWarnings(d, warnings), part, {
          stage: 'published',
          external_id: result.externalId,
          url: result.url,
          error: null,
          ...(result.ref ? { ref: result.ref } : {}),
        });
  if (nextPart(recorded) === null)
    return deliverySucceeded(
      recorded,
      { externalId: recorded.external_id as string, url: recorded.url },
      now,
    );
  const at = now.toISOString();
  return {
    ...recorded,
    checkpoint: null,
    unresolved_since: undefined,
    attempt_started_at: at,
    lease_until: new Date(now.getTime() + LEASE_SECONDS * 1000).toISOString(),
    error: null,
    error_category: null,
    updated_at: at,
  };
}

/** The delivery with `warnings` added, one per code (a retried part says it once, the latest wording). */
export function withWarnings(d: DeliveryRecord, warnings: readonly DeliveryWarning[]): DeliveryRecord {
  if (!warnings.length) return d;
  const byCode = new Map((d.warnings ?? []).map((w) => [w.code, w]));
  for (const w of warnings) byCode.set(w.code, w);
  return { ...d, warnings: [...byCode.values()] };
}

/**
 * A part's attempt failed: the delivery retries later (resuming at this part) or fails for good
 * (deliveryFailed), the part marked failed with the error. A first comment that fails for good
 * does not fail what was published: the delivery is `published`, its comment `failed`.
 */
export function partFailed(
  d: DeliveryRecord,
  part: DeliveryPart,
  err: Parameters<typeof deliveryFailed>[1],
  now: Date,
  random = Math.random,
): DeliveryRecord {
  const next = deliveryFailed(d, err, now, random);
  if (next.stage !== 'failed' || part.kind === 'root') return next;
  const failedPart: PartRecord = { ...queuedPart(), stage: 'failed', error: next.error };
  if (part.kind === 'thread') return withPart(next, part, failedPart);
  return {
    ...withPart(next, part, failedPart),
    stage: 'published',
    error: null,
    error_category: null,
    checkpoint: null,
    unresolved_since: undefined,
  };
}
