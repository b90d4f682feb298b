import type { UnpublishMessage } from '#core/messages';
import { logger } from '#shared/logger';
import { sqsBatchHandler } from '#shared/sqs-batch';
import { removeDelivery } from '#usecases/unpublish-worker';

/** One message per delivery to take down; a failed record returns to the queue on its own. */
export const handler = sqsBatchHandler<UnpublishMessage>(async (msg, record) => {
  const outcome = await removeDelivery(msg);
  logger.debug('removal', { outcome, message_id: record.messageId });
});
