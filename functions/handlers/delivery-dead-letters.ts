import type { DeliveryMessage } from '#core/messages';
import { logger } from '#shared/logger';
import { sqsBatchHandler } from '#shared/sqs-batch';
import { deadLetter } from '#usecases/delivery-dead-letters';

export const handler = sqsBatchHandler<DeliveryMessage>(async (msg) => {
  const marked = await deadLetter(msg);
  logger.error('delivery dead-lettered', { ...msg, marked_failed: marked });
});
