import { logger } from '#shared/logger';
import { syncDueChannels } from '#usecases/channel-sync';

/** Runs every 5 minutes (EventBridge schedule; every 2 seconds in the local stack: the manifest says). */
export const handler = async () => {
  const result = await syncDueChannels(new Date());
  if (result.refreshed || result.retrying || result.reauth_required)
    logger.info('channel sync', { ...result });
  return result;
};
