import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { EventType } from '#core/webhooks';
import { requireEnv } from '#shared/config';
import { sqs } from '#shared/sqs';

// The durable event stream the webhooks consume: one SQS message per event.

export { EVENT_TYPES, type EventType } from '#core/webhooks';

export interface HeraldEvent {
  /** `msg_…`, stable for the change that caused it (the webhook-id). */
  id: string;
  type: EventType;
  timestamp: string;
  org_id: string;
  data: Record<string, unknown>;
}

export async function publishEvents(events: HeraldEvent[]): Promise<void> {
  const queueUrl = requireEnv('EVENTS_QUEUE_URL');
  for (let i = 0; i < events.length; i += 10) {
    const chunk = events.slice(i, i + 10);
    const res = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((e, j) => ({ Id: String(j), MessageBody: JSON.stringify(e) })),
      }),
    );
    if (res.Failed?.length)
      throw new Error(`SQS refused ${res.Failed.length} event(s): ${res.Failed[0]?.Code}`);
  }
}
