import { requireEnv } from '#shared/config';
import { sendBatch } from './work-queues.ts';

/** One message per (post, channel, round); the delivery worker claims it, so duplicates are harmless. */
export interface DeliveryMessage {
  org_id: string;
  post_id: string;
  channel_id: string;
  round: number;
}

export function enqueueDeliveries(messages: DeliveryMessage[]): Promise<void> {
  // Read on use: the scheduler's dispatcher loads this module without ever sending here.
  return sendBatch(
    requireEnv('DELIVERY_QUEUE_URL'),
    messages.map((body) => ({ body })),
  );
}
