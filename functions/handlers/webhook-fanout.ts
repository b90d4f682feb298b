import type { HeraldEvent } from '#core/messages';
import { logger } from '#shared/logger';
import { sqsWholeBatchHandler } from '#shared/sqs-batch';
import { fanOutAll } from '#usecases/webhook-fanout';

/** The events queue: one message per event, one webhook job per subscribed endpoint; a batch together. */
export const handler = sqsWholeBatchHandler<HeraldEvent>(async (events) => {
  const results = await fanOutAll(events);
  results.forEach((r, i) => {
    const e = events[i];
    if (r instanceof Error) logger.warn('fan-out failed', { event_id: e?.id, error: r.message });
    else logger.debug('event fanned out', { event_id: e?.id, type: e?.type, endpoints: r });
  });
  return results;
});
