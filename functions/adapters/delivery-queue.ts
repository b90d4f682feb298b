import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { requireEnv } from '#shared/config';
import { sqs } from '#shared/sqs';

/** One message per (post, channel, round); the delivery worker claims it, so duplicates are harmless. */
export interface DeliveryMessage {
  org_id: string;
  post_id: string;
  channel_id: string;
  round: number;
}

export class QueueSendError extends Error {}

export async function enqueueDeliveries(messages: DeliveryMessage[]): Promise<void> {
  for (let i = 0; i < messages.length; i += 10) {
    const chunk = messages.slice(i, i + 10);
    const res = await sqs.send(
      new SendMessageBatchCommand({
        // Read on use: the scheduler's dispatcher loads this module without ever sending here.
        QueueUrl: requireEnv('DELIVERY_QUEUE_URL'),
        Entries: chunk.map((m, j) => ({ Id: String(j), MessageBody: JSON.stringify(m) })),
      }),
    );
    if (res.Failed?.length) {
      throw new QueueSendError(
        `SQS refused ${res.Failed.length} delivery message(s): ${res.Failed[0]?.Code}`,
      );
    }
  }
}
