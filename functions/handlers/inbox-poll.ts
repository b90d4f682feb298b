import { scheduleEverySeconds } from '#lib/operations';
import { inLambda } from '#shared/config';
import { logger } from '#shared/logger';
import { type FindResult, findInboxPolls } from '#usecases/inbox-poll';

// The period this deployment runs the finder at (AWS's schedule, or the local stack's interval),
// read from the manifest both read: the slot's messages are spread over it.
const periodSeconds = scheduleEverySeconds('inboxPoll', inLambda() ? 'aws' : 'local');

/**
 * The inbox poller's finder: every minute (EventBridge schedule; faster in the local stack: the
 * manifest says). Sends the channels of the minute's slot to the inboxPoll queue.
 */
export const handler = async (): Promise<FindResult> => {
  const result = await findInboxPolls(new Date(), periodSeconds);
  if (result.sent) logger.info('inbox poll: channels sent', { ...result });
  return result;
};
