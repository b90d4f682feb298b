import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { mapLimit } from '#core/concurrency';
import {
  type ChannelSyncMessage,
  type DeliveryMessage,
  type DispatchMessage,
  type EngagementSyncMessage,
  type HeraldEvent,
  type InboxPollMessage,
  type InboxReplyMessage,
  MAX_DELAY_SECONDS,
  MAX_MESSAGE_BYTES,
  type UnpublishMessage,
  type WebhookJob,
} from '#core/messages';
import { QUEUE_URL_ENV, type QueueName } from '#core/vocabulary';
import { requireEnv } from '#shared/config';
import { storeQueueBody } from '#shared/queue-bodies';
import { sqs } from '#shared/sqs';

// The work queues: deliveries, the scheduler's dispatches, events, webhook attempts, channel and engagement syncs.
// A queue's URL is read on use: a bundle that never sends to a queue needs no variable for it. SQS
// refuses a message over the queue's MaximumMessageSize and a batch request over 1 MiB: batches
// are cut by bytes as well as by count, and a message too large for the queue goes by reference.

const queueUrl = (queue: QueueName) => requireEnv(QUEUE_URL_ENV[queue]);

/**
 * Some messages were not sent: refused by SQS (after re-sending the refused entries) or in a call
 * that failed. `unsent` are their indexes in the list given to the send; the others went out.
 */
export class QueueSendError extends Error {
  constructor(
    message: string,
    readonly unsent: number[],
  ) {
    super(message);
  }
}

const clampDelay = (seconds: number) => Math.max(0, Math.min(MAX_DELAY_SECONDS, seconds));

/** Batches in flight at once: a burst (100,000 dispatches in one sweep) is sent in seconds. */
const PARALLEL_BATCHES = 16;

/** SQS refuses a SendMessageBatch whose messages total more than 1 MiB; a batch stays under this. */
const BATCH_BUDGET_BYTES = 1_048_576 - 64 * 1024;

/** A message over this goes by reference (the queues' MaximumMessageSize, less headroom). */
const INLINE_MAX_BYTES = MAX_MESSAGE_BYTES - 4 * 1024;

/** How often the entries SQS refused for its own reasons (not the sender's) are sent again. */
const RESENDS = 2;

/** Bodies stored by reference at once. */
const PARALLEL_STORES = 8;

/** The body SQS gets for `body`: its JSON, or a reference to it when too large for the queue. */
async function messageBody(body: unknown): Promise<{ text: string; bytes: number }> {
  const json = JSON.stringify(body);
  // SQS counts a message's size in UTF-8 bytes (we send no attributes).
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes <= INLINE_MAX_BYTES) return { text: json, bytes };
  const ref = await storeQueueBody(json);
  return { text: ref, bytes: Buffer.byteLength(ref, 'utf8') };
}

type Entry = { body: unknown; delaySeconds?: number };

/**
 * Sends in batches of at most 10 messages and BATCH_BUDGET_BYTES, up to 16 batches at once; a
 * delay (capped at SQS's 15 minutes) only where one is given. Entries SQS refused for its own
 * reasons are sent again (only those); what still did not go out is reported by index.
 */
async function sendBatch(queue: QueueName, entries: Entry[]) {
  if (!entries.length) return;
  const url = queueUrl(queue);
  const bodies = await mapLimit(entries, PARALLEL_STORES, (e) => messageBody(e.body));
  const chunks: number[][] = [];
  let chunk: number[] = [];
  let bytes = 0;
  bodies.forEach((b, i) => {
    if (chunk.length === 10 || (chunk.length && bytes + b.bytes > BATCH_BUDGET_BYTES)) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(i);
    bytes += b.bytes;
  });
  chunks.push(chunk);
  const unsent: number[] = [];
  let cause: string | undefined;
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(PARALLEL_BATCHES, chunks.length) }, async () => {
      while (next < chunks.length) {
        let pending = chunks[next++] as number[];
        try {
          for (let round = 0; pending.length && round <= RESENDS; round++) {
            const res = await sqs.send(
              new SendMessageBatchCommand({
                QueueUrl: url,
                Entries: pending.map((i) => {
                  const delay = entries[i]?.delaySeconds;
                  return {
                    Id: String(i),
                    MessageBody: bodies[i]?.text,
                    ...(delay === undefined ? {} : { DelaySeconds: clampDelay(Math.floor(delay)) }),
                  };
                }),
              }),
            );
            const failed = res.Failed ?? [];
            cause ??= failed[0] && `${failed[0].Code}${failed[0].Message ? `: ${failed[0].Message}` : ''}`;
            // A sender's fault (a message SQS will never take) is not sent again.
            for (const f of failed.filter((x) => x.SenderFault)) unsent.push(Number(f.Id));
            pending = failed.filter((x) => !x.SenderFault).map((x) => Number(x.Id));
          }
          unsent.push(...pending);
        } catch (err) {
          cause ??= `${(err as Error).name}: ${(err as Error).message}`;
          unsent.push(...pending);
        }
      }
    }),
  );
  if (unsent.length) {
    unsent.sort((a, b) => a - b);
    throw new QueueSendError(`SQS did not take ${unsent.length} message(s): ${cause}`, unsent);
  }
}

/** One message, delayed (rounded up, so it never arrives early; at most 15 minutes). */
export async function sendDelayed(queue: QueueName, body: unknown, delaySeconds: number): Promise<void> {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: queueUrl(queue),
      MessageBody: (await messageBody(body)).text,
      DelaySeconds: clampDelay(Math.ceil(delaySeconds)),
    }),
  );
}

export function enqueueDeliveries(messages: DeliveryMessage[]): Promise<void> {
  return sendBatch(
    'delivery',
    messages.map((body) => ({ body })),
  );
}

export function sendDispatches(messages: Array<{ body: DispatchMessage; delaySeconds: number }>) {
  return sendBatch('schedule', messages);
}

export function publishEvents(events: HeraldEvent[]): Promise<void> {
  return sendBatch(
    'events',
    events.map((e) => ({ body: e, delaySeconds: 0 })),
  );
}

/** Each job is delayed until its due time, at most SQS's 15 minutes at a time. */
export function sendJobs(jobs: WebhookJob[], now = Date.now()): Promise<void> {
  return sendBatch(
    'webhooks',
    jobs.map((job) => ({
      body: job,
      delaySeconds: Math.max(0, Math.floor((Date.parse(job.due_at) - now) / 1000)),
    })),
  );
}

/** The engagement sync's work: one message per batch of recently published posts. */
export function sendEngagementSyncs(messages: EngagementSyncMessage[]): Promise<void> {
  return sendBatch(
    'engagementSync',
    messages.map((body) => ({ body })),
  );
}

/** The channel sync's work: one message per due entry of the sync index. */
export function sendChannelSyncs(messages: ChannelSyncMessage[]): Promise<void> {
  return sendBatch(
    'channelSync',
    messages.map((body) => ({ body })),
  );
}

/** Removals of published deliveries (unpublishPost), sent by the stream relay's outbox. */
export function sendRemovals(messages: UnpublishMessage[]): Promise<void> {
  return sendBatch(
    'unpublish',
    messages.map((body) => ({ body })),
  );
}

/** Replies to inbox items (replyToInboxItem), sent by the stream relay's outbox. */
export function sendInboxReplies(messages: InboxReplyMessage[]): Promise<void> {
  return sendBatch(
    'inboxReplies',
    messages.map((body) => ({ body })),
  );
}

/** The inbox finder's work: one message per channel of the minute's slot, delayed over the minute. */
export function sendInboxPolls(messages: Array<{ body: InboxPollMessage; delaySeconds: number }>) {
  return sendBatch('inboxPoll', messages);
}
