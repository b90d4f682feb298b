import type { InboxPollMessage } from '#core/messages';
import { logger } from '#shared/logger';
import { sqsBatchHandler } from '#shared/sqs-batch';
import { pollChannelInbox } from '#usecases/inbox-poll-worker';

/** One message per channel to poll; the batch's channels run in parallel. */
export const handler = sqsBatchHandler<InboxPollMessage>(async (msg) => {
  const result = await pollChannelInbox(msg, new Date());
  logger.debug('inbox poll', { ...result, org_id: msg.org_id, channel_id: msg.channel_id });
});
