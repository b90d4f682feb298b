import { logger } from '#shared/logger';
import { sqsBatchHandler } from '#shared/sqs-batch';

// A queue worker in the production wrapper (Powertools' batch processor, no Lambda context of its
// own) whose messages log, wait for the test, and then fail or succeed as they say.

export const pauses = new Map<string, Promise<void>>();

export const handler = sqsBatchHandler<{ who: string; fail?: boolean }>(async ({ who, fail }) => {
  logger.warn(`${who} attempt`);
  await pauses.get(who);
  if (fail) throw new Error(`${who} failed`);
  logger.warn(`${who} done`);
});
