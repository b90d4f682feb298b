import type { MediaImportMessage } from '#core/messages';
import { logger } from '#shared/logger';
import { sqsBatchHandler } from '#shared/sqs-batch';
import { failImport } from '#usecases/media-import-worker';

export const handler = sqsBatchHandler<MediaImportMessage>(async (msg) => {
  const marked = await failImport(msg, new Date());
  logger.error('media import dead-lettered', { ...msg, marked_failed: marked });
});
