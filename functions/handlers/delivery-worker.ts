import type { DeliveryMessage } from '#core/messages';
import { logger } from '#shared/logger';
import { sqsBatchHandler } from '#shared/sqs-batch';
import { deliver } from '#usecases/delivery-worker';

/** One message per (post, channel, round); a failed record returns to the queue on its own. */
export const handler = sqsBatchHandler<DeliveryMessage>(async (msg, record) => {
  const outcome = await deliver(msg);
  logger.debug('delivery', { outcome, message_id: record.messageId });
});
