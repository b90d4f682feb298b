import { logger } from '#shared/logger';
import { sweep } from '#usecases/schedule-sweeper';

/** Runs every minute (EventBridge schedule; every second in the local stack). */
export const handler = async (): Promise<{ dispatched: number; redriven: number }> => {
  const result = await sweep(new Date());
  if (result.dispatched || result.redriven) logger.info('sweep', result);
  return result;
};
