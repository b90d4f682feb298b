import { logger } from '#shared/logger';
import { type SyncResult, syncEngagement } from '#usecases/engagement-sync';

/** Runs every hour (EventBridge schedule; every minute in the local stack: the manifest says). */
export const handler = async (): Promise<SyncResult> => {
  const result = await syncEngagement(new Date());
  if (result.updated || result.failed) logger.info('engagement sync', { ...result });
  return result;
};
