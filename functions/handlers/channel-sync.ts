import type { Context } from 'aws-lambda';
import { logger } from '#shared/logger';
import { findDueChannels } from '#usecases/channel-sync';

/** Time kept back from the function's timeout for the last page's sends and the cursor write. */
const MARGIN_MS = 10_000;

/**
 * The channel sync's finder: every 5 minutes (EventBridge schedule; every 2 seconds in the local
 * stack: the manifest says). Sends the due channels to the channel-sync queue.
 */
export const handler = async (_event: unknown, context?: Context) => {
  const deadlineMs = context ? Date.now() + context.getRemainingTimeInMillis() - MARGIN_MS : undefined;
  const result = await findDueChannels(new Date(), { deadlineMs });
  if (result.sent || result.resent) logger.info('channel sync: due channels sent', { ...result });
  return result;
};
