import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { requireEnv } from '#shared/config';
import { sqs } from '#shared/sqs';

// The scheduler's dispatch queue and delayed re-sends of delivery messages. SQS delays are at most
// 15 minutes; longer waits are chained by the receiver (it re-sends until the time has come).

export const MAX_DELAY_SECONDS = 900;

export interface DispatchMessage {
  org_id: string;
  post_id: string;
  /** The scheduled_at this dispatch is for; a rescheduled post ignores it. */
  scheduled_at: string;
}

/** SQS accepted the batch call but refused some of its messages. */
export class QueueSendError extends Error {}

/** Sends in batches of 10; a delay (capped at SQS's 15 minutes) only where one is given. */
export async function sendBatch(
  queueUrl: string,
  entries: Array<{ body: unknown; delaySeconds?: number }>,
): Promise<void> {
  for (let i = 0; i < entries.length; i += 10) {
    const chunk = entries.slice(i, i + 10);
    const res = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((e, j) => ({
          Id: String(j),
          MessageBody: JSON.stringify(e.body),
          ...(e.delaySeconds === undefined
            ? {}
            : { DelaySeconds: Math.max(0, Math.min(MAX_DELAY_SECONDS, Math.floor(e.delaySeconds))) }),
        })),
      }),
    );
    if (res.Failed?.length)
      throw new QueueSendError(`SQS refused ${res.Failed.length} message(s): ${res.Failed[0]?.Code}`);
  }
}

export function sendDispatches(
  messages: Array<{ body: DispatchMessage; delaySeconds: number }>,
): Promise<void> {
  return sendBatch(requireEnv('SCHEDULE_QUEUE_URL'), messages);
}

export async function sendDelayed(queueUrl: string, body: unknown, delaySeconds: number): Promise<void> {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: JSON.stringify(body),
      DelaySeconds: Math.max(0, Math.min(MAX_DELAY_SECONDS, Math.ceil(delaySeconds))),
    }),
  );
}
