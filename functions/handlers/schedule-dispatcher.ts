import type { DispatchMessage } from '#core/messages';
import { logger } from '#shared/logger';
import { sqsWholeBatchHandler } from '#shared/sqs-batch';
import { dispatchAll } from '#usecases/schedule-dispatcher';

/** A batch of dispatch messages, read and sent together; a failed one returns to the queue alone. */
export const handler = sqsWholeBatchHandler<DispatchMessage>(async (msgs) => {
  const outcomes = await dispatchAll(msgs);
  for (const o of outcomes) if (o instanceof Error) logger.warn('dispatch failed', { error: o.message });
  return outcomes;
});
