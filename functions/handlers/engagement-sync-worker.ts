import type { EngagementSyncMessage } from '#core/messages';
import { logger } from '#shared/logger';
import { sqsBatchHandler } from '#shared/sqs-batch';
import { syncEngagementBatch } from '#usecases/engagement-sync-worker';

/** One message per batch of recently published posts; the batch's messages run in parallel. */
export const handler = sqsBatchHandler<EngagementSyncMessage>(async (msg) => {
  const result = await syncEngagementBatch(msg, new Date());
  if (result.updated || result.failed) logger.info('engagement sync', { ...result });
});
