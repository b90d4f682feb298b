import type { InboxReplyMessage } from '#core/messages';
import { logger } from '#shared/logger';
import { sqsBatchHandler } from '#shared/sqs-batch';
import { replyDeadLetter } from '#usecases/inbox-reply-dead-letters';

export const handler = sqsBatchHandler<InboxReplyMessage>(async (msg) => {
  const marked = await replyDeadLetter(msg);
  logger.error('inbox reply dead-lettered', { ...msg, marked_failed: marked });
});
