import { WATCHDOG_EVERY_SECONDS } from '#core/timing';
import { logger } from '#shared/logger';
import { sweep } from '#usecases/schedule-sweeper';

/** When this container last ran the watchdog (a new container runs it on its first sweep). */
let watchedAt = Number.NEGATIVE_INFINITY;

/** Runs every minute (EventBridge schedule; every second in the local stack). */
export const handler = async (): Promise<{ dispatched: number; redriven: number }> => {
  const now = new Date();
  const watch = now.getTime() - watchedAt >= WATCHDOG_EVERY_SECONDS * 1000;
  const result = await sweep(now, { watch });
  // Only a sweep that got through moves the mark: a failed watchdog runs again next time.
  if (watch) watchedAt = now.getTime();
  if (result.dispatched || result.redriven) logger.info('sweep', result);
  return result;
};
