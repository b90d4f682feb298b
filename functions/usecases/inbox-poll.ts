import { channelsInSlot } from '#adapters/inbox-polls';
import { sendInboxPolls } from '#adapters/queues';
import { POLL_SLOTS } from '#core/inbox';
import type { InboxPollMessage } from '#core/messages';

// The inbox poller's finder: the part that scales polling with the number of channels (the poll
// itself is the worker's, usecases/inbox-poll-worker.ts). Every channel with a poll state sits in
// one of POLL_SLOTS slots of the poll index, chosen from its id; each run (every minute in AWS)
// reads the slot of its period and sends one message per channel to the inboxPoll queue, delayed
// so the slot's channels are spread over the period, not polled in one burst. Each channel so comes
// round once per POLL_SLOTS periods (5 minutes). Stateless: a message lost or dead-lettered only
// delays that channel to its next round (its cursor is kept), and a run that overlaps another
// sends duplicates the worker reads as already done (the items' ids dedupe them).

export interface FindResult {
  slot: number;
  /** Messages sent (one per channel of the slot). */
  sent: number;
}

/** The slot whose turn it is: the number of whole periods since the epoch, round the slots. */
export const slotAt = (now: Date, periodSeconds: number): number =>
  Math.floor(now.getTime() / (periodSeconds * 1000)) % POLL_SLOTS;

/** Spreads `count` messages evenly over the period (whole seconds: SQS's DelaySeconds). */
export const spreadDelay = (index: number, count: number, periodSeconds: number): number =>
  count <= 1 ? 0 : Math.floor((index * periodSeconds) / count);

/**
 * The finder. Primary course: read the slot of `now` from the poll index, then send its channels,
 * one message each, delayed over `periodSeconds` (the schedule's period in AWS or in the local stack).
 */
export async function findInboxPolls(now: Date, periodSeconds: number): Promise<FindResult> {
  const slot = slotAt(now, periodSeconds);
  const refs: Array<{ orgId: string; channelId: string }> = [];
  for await (const page of channelsInSlot(slot)) refs.push(...page);
  const messages = refs.map((r, i) => ({
    body: { org_id: r.orgId, channel_id: r.channelId } satisfies InboxPollMessage,
    delaySeconds: spreadDelay(i, refs.length, periodSeconds),
  }));
  await sendInboxPolls(messages);
  return { slot, sent: messages.length };
}
