import type { ErrorCategory } from './delivery.ts';
import { MAX_ATTEMPTS, retryDelaySeconds, withUnknownOutcome } from './delivery.ts';
import { type InboxItemRecord, type InboxReply, MAX_REPLIES_PER_ITEM } from './inbox.ts';
import { LEASE_SECONDS } from './timing.ts';

// Answering an inbox item (replyToInboxItem, docs/api/inbox.md "Replying"): a reply's stages —
// queued → sending (under a worker's claim) → sent or failed — with the post delivery's attempts, backoff and "outcome unknown". Pure: the
// conditional writes are adapters/inbox-replies.ts's; what may be answered, and how long an answer
// may be, is core/inbox-reply-rules.ts (the request's, kept out of the worker's bundle).

/** The reply replyToInboxItem appends: queued, nothing tried yet. */
export function newReply(id: string, text: string, requestedBy: string, now: Date): InboxReply {
  return {
    id,
    text,
    stage: 'queued',
    external_id: null,
    url: null,
    error: null,
    created_at: now.toISOString(),
    requested_by: requestedBy,
    attempts: 0,
    claim: null,
    sent_at: null,
  };
}

/** The item has room for one more reply. */
export const hasRoom = (item: Pick<InboxItemRecord, 'replies'>) =>
  (item.replies ?? []).length < MAX_REPLIES_PER_ITEM;

export type ReplyClaim =
  | {
      kind: 'claimed';
      reply: InboxReply;
      /** An earlier attempt's outcome is unknown (`unresolved_since`): look for its reply first. */
      recovering: boolean;
      /** An abandoned send was taken over: it counted no new attempt. */
      resumed: boolean;
    }
  | { kind: 'skip'; reason: 'gone' | 'sent' | 'failed' | 'not due yet' }
  | { kind: 'busy' };

/**
 * Takes a reply for one attempt (the delivery's claim, core/delivery.ts claimDelivery): a final
 * reply, or one another worker holds under a live lease, is not taken; a retry not due yet waits.
 * A `sending` reply whose lease ran out was abandoned mid-send: its outcome is unknown from then
 * on (`unresolved_since`, the abandoned attempt's start), so this claim and any after it while
 * it stays unknown are `recovering`.
 */
export function claimReply(reply: InboxReply | undefined, token: string, now: Date): ReplyClaim {
  if (!reply) return { kind: 'skip', reason: 'gone' };
  if (reply.stage === 'sent' || reply.stage === 'failed') return { kind: 'skip', reason: reply.stage };
  const claim = reply.claim ?? null;
  if (reply.stage === 'sending' && claim && Date.parse(claim.until) > now.getTime()) return { kind: 'busy' };
  if (
    reply.stage === 'queued' &&
    reply.next_attempt_at &&
    Date.parse(reply.next_attempt_at) > now.getTime() + 1000
  )
    return { kind: 'skip', reason: 'not due yet' };
  const resumed = reply.stage === 'sending';
  const at = now.toISOString();
  const unresolvedSince =
    reply.unresolved_since ?? (resumed ? (claim?.started_at ?? reply.created_at) : null);
  return {
    kind: 'claimed',
    reply: {
      ...reply,
      stage: 'sending',
      attempts: resumed ? (reply.attempts ?? 1) : (reply.attempts ?? 0) + 1,
      claim: { token, until: new Date(now.getTime() + LEASE_SECONDS * 1000).toISOString(), started_at: at },
      unresolved_since: unresolvedSince,
      next_attempt_at: null,
    },
    recovering: unresolvedSince !== null,
    resumed,
  };
}

/** Where a lookup for an earlier attempt's reply searches from: the unresolved attempt's start. */
export function lookupFrom(reply: InboxReply, now: Date): Date {
  return new Date(reply.unresolved_since ?? reply.claim?.started_at ?? now.toISOString());
}

/** The reply was made (or found by a lookup): `sent`, with its id and address on the platform. */
export function replySent(
  reply: InboxReply,
  result: { externalId: string; url: string | null },
  now: Date,
): InboxReply {
  return {
    ...reply,
    stage: 'sent',
    external_id: result.externalId,
    url: result.url,
    error: null,
    claim: null,
    unresolved_since: null,
    next_attempt_at: null,
    sent_at: now.toISOString(),
  };
}

/** A failed attempt, in the delivery's terms (core/delivery.ts deliveryFailed). */
export interface ReplyFailure {
  category: ErrorCategory;
  message: string;
  retryable: boolean;
  retryAfterSeconds?: number | undefined;
  /** The failure came after the request left, without an answer saying the platform did not act. */
  maybeSent?: boolean;
  /** This attempt's lookup found no earlier reply: nothing is unresolved any more. */
  resolved?: boolean;
}

/**
 * A failed attempt: back to `queued` for a retry after the delivery's backoff (the platform's hint
 * first), up to the delivery's MAX_ATTEMPTS, or `failed` for good with `{code, message}`. One that
 * ends while an earlier attempt's outcome is unknown says so.
 */
export function replyFailed(
  reply: InboxReply,
  err: ReplyFailure,
  now: Date,
  random = Math.random,
): InboxReply {
  const attempts = reply.attempts ?? 1;
  const prior = err.resolved ? null : (reply.unresolved_since ?? null);
  const unresolvedSince = prior ?? (err.maybeSent ? (reply.claim?.started_at ?? now.toISOString()) : null);
  const base = { ...reply, claim: null, unresolved_since: unresolvedSince };
  if (!err.retryable || attempts >= MAX_ATTEMPTS) {
    const message = (unresolvedSince ? withUnknownOutcome(err.message) : err.message).slice(0, 1000);
    return { ...base, stage: 'failed', error: { code: err.category, message }, next_attempt_at: null };
  }
  const delay = retryDelaySeconds(attempts, err.retryAfterSeconds, random);
  return {
    ...base,
    stage: 'queued',
    error: null,
    next_attempt_at: new Date(now.getTime() + delay * 1000).toISOString(),
  };
}

/**
 * Turned back by pacing before anything was sent: queued again for when the pause ends, without
 * spending an attempt (a fresh claim counted one; taking over an abandoned send did not).
 */
export function replyDeferred(
  reply: InboxReply,
  until: Date,
  opts: { undoClaim: boolean; resolved: boolean },
): InboxReply {
  return {
    ...reply,
    stage: 'queued',
    attempts: opts.undoClaim ? Math.max(0, (reply.attempts ?? 1) - 1) : reply.attempts,
    claim: null,
    unresolved_since: opts.resolved ? null : (reply.unresolved_since ?? null),
    next_attempt_at: until.toISOString(),
  };
}

/** A reply whose messages were dead-lettered: failed (system), unless it already ended. */
export function replyDeadLettered(reply: InboxReply): InboxReply | null {
  if (reply.stage === 'sent' || reply.stage === 'failed') return null;
  const message = 'The reply could not be processed and was moved to the dead-letter queue.';
  return {
    ...reply,
    stage: 'failed',
    error: {
      code: 'system',
      message: reply.unresolved_since || reply.stage === 'sending' ? withUnknownOutcome(message) : message,
    },
    claim: null,
    next_attempt_at: null,
  };
}
