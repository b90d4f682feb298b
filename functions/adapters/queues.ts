import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import {
  type ChannelSyncMessage,
  type DeliveryMessage,
  type DispatchMessage,
  type HeraldEvent,
  MAX_DELAY_SECONDS,
  QUEUE_URL_ENV,
  type QueueName,
  type WebhookJob,
} from '#core/messages';
import { requireEnv } from '#shared/config';
import { sqs } from '#shared/sqs';

// The work queues: deliveries, the scheduler's dispatches, events, webhook attempts, channel syncs.
// A queue's URL is read on use: a bundle that never sends to a queue needs no variable for it.

const queueUrl = (queue: QueueName) => requireEnv(QUEUE_URL_ENV[queue]);

/** SQS accepted the batch call but refused some of its messages. */
export class QueueSendError extends Error {}

const clampDelay = (seconds: number) => Math.max(0, Math.min(MAX_DELAY_SECONDS, seconds));

/** Batches of 10 in flight at once: a burst (100,000 dispatches in one sweep) is sent in seconds. */
const PARALLEL_BATCHES = 16;

/** Sends in batches of 10, up to 16 batches at once; a delay (capped at SQS's 15 minutes) only where one is given. */
async function sendBatch(queue: QueueName, entries: Array<{ body: unknown; delaySeconds?: number }>) {
  const url = entries.length ? queueUrl(queue) : '';
  const chunks: Array<typeof entries> = [];
  for (let i = 0; i < entries.length; i += 10) chunks.push(entries.slice(i, i + 10));
  let next = 0;
  let refused = 0;
  let code: string | undefined;
  await Promise.all(
    Array.from({ length: Math.min(PARALLEL_BATCHES, chunks.length) }, async () => {
      while (next < chunks.length) {
        const chunk = chunks[next++] as typeof entries;
        const res = await sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: url,
            Entries: chunk.map((e, j) => ({
              Id: String(j),
              MessageBody: JSON.stringify(e.body),
              ...(e.delaySeconds === undefined
                ? {}
                : { DelaySeconds: clampDelay(Math.floor(e.delaySeconds)) }),
            })),
          }),
        );
        if (res.Failed?.length) {
          refused += res.Failed.length;
          code ??= res.Failed[0]?.Code;
        }
      }
    }),
  );
  if (refused) throw new QueueSendError(`SQS refused ${refused} message(s): ${code}`);
}

/** One message, delayed (rounded up, so it never arrives early; at most 15 minutes). */
export async function sendDelayed(queue: QueueName, body: unknown, delaySeconds: number): Promise<void> {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: queueUrl(queue),
      MessageBody: JSON.stringify(body),
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

/** The channel sync's work: one message per due entry of the sync index. */
export function sendChannelSyncs(messages: ChannelSyncMessage[]): Promise<void> {
  return sendBatch(
    'channelSync',
    messages.map((body) => ({ body })),
  );
}
