import type { MediaImportMessage } from '#core/messages';
import { logger } from '#shared/logger';
import { sqsBatchHandler } from '#shared/sqs-batch';
import { finishImport } from '#usecases/media-import-worker';

/** One import per message (batch size 1: an import may take minutes). */
export const handler = sqsBatchHandler<MediaImportMessage>(async (msg) => {
  const outcome = await finishImport(msg, new Date());
  logger.info('media import', { media_id: msg.media_id, org_id: msg.org_id, outcome });
});
