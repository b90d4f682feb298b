import { logger } from '#shared/logger';
import { type FindResult, findEngagementWork } from '#usecases/engagement-sync';

/**
 * The engagement sync's finder: every hour (EventBridge schedule; every minute in the local stack:
 * the manifest says). Sends each channel's recent posts to the engagement-sync queue.
 */
export const handler = async (): Promise<FindResult> => {
  const result = await findEngagementWork(new Date());
  if (result.sent) logger.info('engagement sync: channels sent', { ...result });
  return result;
};
