import type { EventType } from '#core/webhooks';
import { requireEnv } from '#shared/config';
import { sendBatch } from './work-queues.ts';

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

export function publishEvents(events: HeraldEvent[]): Promise<void> {
  return sendBatch(
    requireEnv('EVENTS_QUEUE_URL'),
    events.map((e) => ({ body: e, delaySeconds: 0 })),
  );
}
