import type { InboxReplyMessage } from '#core/messages';
import { logger } from '#shared/logger';
import { sqsBatchHandler } from '#shared/sqs-batch';
import { sendReply } from '#usecases/inbox-reply-worker';

/** One message per reply to send; a failed record (busy, a crash) returns to the queue on its own. */
export const handler = sqsBatchHandler<InboxReplyMessage>(async (msg, record) => {
  const outcome = await sendReply(msg);
  logger.debug('inbox reply', { outcome, message_id: record.messageId });
});
