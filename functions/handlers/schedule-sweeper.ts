import { WATCHDOG_EVERY_SECONDS } from '#core/timing';
import { logger } from '#shared/logger';
import { sweep } from '#usecases/schedule-sweeper';

/** When this container last ran the watchdog (a new container runs it on its first sweep). */
let watchedAt = Number.NEGATIVE_INFINITY;

/** Runs every minute (EventBridge schedule; every second in the local stack). */
export const handler = async (): Promise<{
  dispatched: number;
  redriven: number;
  watchFailed: number;
  refunded: number;
}> => {
  const now = new Date();
  const watch = now.getTime() - watchedAt >= WATCHDOG_EVERY_SECONDS * 1000;
  const result = await sweep(now, { watch });
  if (result.dispatched || result.redriven || result.watchFailed || result.refunded)
    logger.info('sweep', result);
  // The dispatches went out and the cursor moved; posts (and reservations) the watchdog could not handle fail the
  // invocation (the function's Errors alarm) and are looked at again on the next sweep.
  if (result.watchFailed) throw new Error(`watchdog: ${result.watchFailed} post(s) not handled`);
  // Only a sweep that got through moves the mark: a failed watchdog runs again next time.
  if (watch) watchedAt = now.getTime();
  return result;
};
