import type { ChannelSyncMessage } from '#core/messages';
import { logger } from '#shared/logger';
import { sqsBatchHandler } from '#shared/sqs-batch';
import { syncDueEntry } from '#usecases/channel-sync-worker';

/** One message per due channel (or expired account choice); the batch's channels run in parallel. */
export const handler = sqsBatchHandler<ChannelSyncMessage>(async (msg) => {
  const result = await syncDueEntry(msg, new Date());
  logger.debug('channel sync', { result, org_id: msg.org_id, id: msg.id, due_at: msg.at });
});
