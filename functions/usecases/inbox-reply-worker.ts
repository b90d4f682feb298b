import { randomUUID } from 'node:crypto';
import { countAppRefusal } from '#adapters/app-refusals';
import { credentialRedactor, getChannelWithCredentials } from '#adapters/channel-credentials';
import { getInboxItem, replaceReply } from '#adapters/inbox-replies';
import { paceDelivery, recordRateLimit } from '#adapters/pacing';
import { connectorFor } from '#adapters/platforms/index';
import { type InboxReplyContext, PlatformError, type PublishResult } from '#adapters/platforms/types';
import { sendDelayed } from '#adapters/queues';
import type { ChannelRecord } from '#core/accounts';
import type { InboxItemRecord, InboxReply } from '#core/inbox';
import { claimReply, lookupFrom, replyDeferred, replyFailed, replySent } from '#core/inbox-replies';
import { type InboxReplyMessage, MAX_DELAY_SECONDS } from '#core/messages';
import { logger } from '#shared/logger';
import { recordChannelFailure } from '#usecases/support/channel-health';
import { channelTokens } from '#usecases/support/channel-tokens';

/** The message could not be handled now; SQS redelivers it after its visibility timeout. */
export class ReplyBusyError extends Error {}

export type ReplyOutcome = 'sent' | 'retrying' | 'failed' | 'skipped';

/**
 * Sends one reply to an inbox item (replyToInboxItem). Primary course: claim the reply under a
 * lease (queued → sending; no other worker can send it meanwhile) → while an earlier attempt may
 * have reached the platform unbeknown to us (its worker died mid-send, or its answer was lost:
 * `unresolved_since`), ask the connector to find that reply first (found: recorded `sent`, no
 * second send) → wait out the channel's or the app's pause (pacing) → send through the channel's
 * connector → record `sent`, or the failure. Failures follow the post delivery: the same error
 * categories, attempts and backoff (core/delivery.ts), retried by this worker's own delayed
 * message; a refused grant makes the channel reauth_required by the delivery's classification
 * (usecases/support/channel-health.ts). Duplicate or stale messages find nothing to claim.
 */
export async function sendReply(
  msg: InboxReplyMessage,
  clock: () => Date = () => new Date(),
): Promise<ReplyOutcome> {
  const token = randomUUID();
  const claimed = await claim(msg, token, clock);
  if (claimed.kind === 'skip') {
    if (claimed.reason === 'not due yet') await requeueWhenDue(msg, claimed.reply, clock);
    return 'skipped';
  }
  if (claimed.kind === 'busy') throw new ReplyBusyError('another worker holds this reply');
  const { recovering, resumed } = claimed;
  const attempt: Attempt = { msg, token, clock, item: claimed.item };
  const reply = claimed.reply;

  const creds = credentialRedactor();
  let tokens: ReturnType<typeof channelTokens> | undefined;
  let connected: ChannelRecord | null = null;
  let result: PublishResult | null = null;
  let failure: PlatformError | null = null;
  let paused: { until: Date; reason: string } | null = null;
  let calling = false;
  let maybeSent = false;
  /** This attempt's lookup found that no earlier attempt made the reply. */
  let resolved = false;
  let platform: string = claimed.item.platform;
  try {
    const { channel, credentials, version } = await getChannelWithCredentials(
      msg.org_id,
      claimed.item.channel_id,
    );
    creds.remember(credentials);
    if (!channel || channel.status === 'disconnected')
      throw new PlatformError(
        'auth_expired',
        'The channel is disconnected: connect it again, then reply again.',
        { retryable: false },
      );
    platform = channel.platform;
    connected = channel;
    const connector = await connectorFor(channel.platform);
    if (!connector.inbox)
      throw new PlatformError('platform_rejected', `${channel.platform} cannot answer inbox items.`, {
        retryable: false,
      });
    tokens = channelTokens({
      orgId: msg.org_id,
      channelId: channel.id,
      platform: channel.platform,
      credentials,
      version,
      remember: creds.remember,
    });
    const item = claimed.item;
    const ctx: InboxReplyContext = {
      channel: {
        id: channel.id,
        handle: channel.handle,
        platform: channel.platform,
        accountId: channel.account_id ?? null,
      },
      credentials,
      tokens,
      item: {
        kind: item.kind,
        platformId: item.platform_id,
        inReplyTo: item.in_reply_to,
        conversationId: item.conversation_id,
        rootId: item.root_id ?? null,
        ref: item.ref ?? null,
        author: { handle: item.author.handle, platform_id: item.author.platform_id },
      },
      text: reply.text,
      idempotencyKey: reply.id,
      attemptStartedAt: lookupFrom(reply, clock()),
    };
    if (recovering) {
      calling = true;
      result = await connector.inbox.findReply(ctx);
      calling = false;
      resolved = !result;
    }
    if (!result) {
      const pace = await paceDelivery({ orgId: msg.org_id, channel, media: 0 }, clock());
      if (pace.go) {
        calling = true;
        result = await connector.inbox.reply(ctx);
        calling = false;
      } else paused = pace;
    }
  } catch (err) {
    maybeSent = calling && (!(err instanceof PlatformError) || err.maybeCarriedOut);
    const raw =
      err instanceof PlatformError ? err : new PlatformError('system', (err as Error).message ?? String(err));
    failure = new PlatformError(raw.category, creds.redact(tokens?.explain(raw) ?? raw.message), raw.opts);
  }

  const facts = {
    org_id: msg.org_id,
    item_id: msg.item_id,
    reply_id: msg.reply_id,
    platform,
    attempt: reply.attempts,
  };
  if (paused) {
    // As for a failure below: the message that brings it back first, then the write.
    const deferred = replyDeferred(reply, paused.until, { undoClaim: !resumed, resolved });
    await sendAgain(msg, deferred, clock);
    const after = await updateClaimed(attempt, () => deferred);
    if (!after) return 'skipped';
    logger.info('inbox reply paced', { ...facts, reason: paused.reason, until: deferred.next_attempt_at });
    return 'retrying';
  }
  if (result) {
    const done = result;
    const after = await updateClaimed(attempt, (r) => replySent(r, done, clock()));
    // Lost the claim: whoever holds it now finds this reply by its lookup.
    if (!after) return 'skipped';
    logger.info('inbox reply sent', {
      ...facts,
      external_id: done.externalId,
      found: recovering && !resolved,
    });
    return 'sent';
  }
  const err = failure as PlatformError;
  let hint = err.opts.retryAfterSeconds;
  if (connected && err.category === 'rate_limited') {
    const pause = await recordRateLimit(
      {
        orgId: msg.org_id,
        channel: connected,
        refusal: { category: err.category, retryAfterSeconds: hint, scope: err.opts.scope },
      },
      clock(),
    );
    if (pause) hint = pause.retryAfterSeconds;
  }
  if (connected && (err.category === 'auth_expired' || err.opts.operator)) {
    const remedy = await recordChannelFailure(connected, err, clock(), { backoff: false });
    if (remedy === 'operator') await countAppRefusal(connected.platform, err.message);
  }
  const next = (r: InboxReply) =>
    replyFailed(
      r,
      {
        category: err.category,
        message: err.message,
        retryable: err.retryable,
        retryAfterSeconds: hint,
        maybeSent,
        resolved,
      },
      clock(),
    );
  // The retry's message goes first, then the outcome: a failure between them sends this record
  // back, and the early copy finds the reply still claimed (then abandoned: looked up first).
  const planned = next(reply);
  if (planned.stage === 'queued') await sendAgain(msg, planned, clock);
  const after = await updateClaimed(attempt, () => planned);
  if (!after) return 'skipped';
  const why = { ...facts, category: err.category, error: err.message };
  if (planned.stage === 'queued') {
    logger.warn('inbox reply retrying', { ...why, next_attempt_at: planned.next_attempt_at });
    return 'retrying';
  }
  logger.error('inbox reply failed', why);
  return 'failed';
}

/** Writes before giving up on an item that keeps changing under the worker (other replies, status). */
const WRITES = 12;

interface Attempt {
  msg: InboxReplyMessage;
  token: string;
  clock: () => Date;
  /** The item as this attempt last wrote or read it: each write is tried on it without a read first. */
  item: InboxItemRecord;
}

type Claimed =
  | {
      kind: 'claimed';
      item: InboxItemRecord;
      reply: InboxReply;
      recovering: boolean;
      resumed: boolean;
    }
  | { kind: 'skip'; reason: string; reply?: InboxReply | undefined }
  | { kind: 'busy' };

/** Claims the reply: decided on the item as read, written at that version, decided again when it moved. */
async function claim(msg: InboxReplyMessage, token: string, clock: () => Date): Promise<Claimed> {
  let item = await getInboxItem(msg.org_id, msg.item_id);
  for (let i = 0; i < WRITES; i++) {
    if (!item) return { kind: 'skip', reason: 'gone' };
    const index = (item.replies ?? []).findIndex((r) => r.id === msg.reply_id);
    const current = item.replies[index];
    const outcome = claimReply(current, token, clock());
    if (outcome.kind === 'busy') return outcome;
    if (outcome.kind === 'skip') return { ...outcome, reply: current };
    const res = await replaceReply(item, index, outcome.reply, clock());
    if ('written' in res)
      return {
        kind: 'claimed',
        item: res.written,
        reply: outcome.reply,
        recovering: outcome.recovering,
        resumed: outcome.resumed,
      };
    item = res.current;
  }
  throw new ReplyBusyError('the item kept changing while the reply was claimed');
}

/** Applies `change` to the reply while this worker's claim still holds it; null when it does not. */
async function updateClaimed(
  attempt: Attempt,
  change: (r: InboxReply) => InboxReply,
): Promise<InboxItemRecord | null> {
  let item: InboxItemRecord | null = attempt.item;
  for (let i = 0; i < WRITES && item; i++) {
    const index = (item.replies ?? []).findIndex((r) => r.id === attempt.msg.reply_id);
    const r = item.replies[index];
    if (r?.stage !== 'sending' || r.claim?.token !== attempt.token) return null;
    const res = await replaceReply(item, index, change(r), attempt.clock());
    if ('written' in res) {
      attempt.item = res.written;
      return res.written;
    }
    item = res.current;
  }
  if (!item) return null;
  throw new ReplyBusyError('the item kept changing while the reply was recorded');
}

/**
 * The retry's own message, due at the reply's next_attempt_at: a wait longer than SQS's delay cap
 * goes in steps (`due` says when the attempt is really due).
 */
function sendAgain(msg: InboxReplyMessage, r: InboxReply, clock: () => Date): Promise<void> {
  const due = r.next_attempt_at as string;
  const delay = (Date.parse(due) - clock().getTime()) / 1000;
  const { due: _old, ...rest } = msg;
  return sendDelayed(
    'inboxReplies',
    { ...rest, attempt: r.attempts ?? 0, ...(delay > MAX_DELAY_SECONDS ? { due } : {}) },
    delay,
  );
}

/**
 * A retry not due yet: its own message (the one naming that time) waits on; any other copy (a
 * duplicate, an older retry's) is dropped, or it would come back at every later retry.
 */
async function requeueWhenDue(
  msg: InboxReplyMessage,
  r: InboxReply | undefined,
  clock: () => Date,
): Promise<void> {
  if (!r?.next_attempt_at || msg.due !== r.next_attempt_at) return;
  await sendAgain(msg, r, clock);
}
