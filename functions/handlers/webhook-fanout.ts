import type { HeraldEvent } from '#core/messages';
import { logger } from '#shared/logger';
import { sqsBatchHandler } from '#shared/sqs-batch';
import { fanOut } from '#usecases/webhook-fanout';

/** The events queue: one message per event, one webhook job per subscribed endpoint. */
export const handler = sqsBatchHandler<HeraldEvent>(async (event) => {
  const endpoints = await fanOut(event);
  logger.debug('event fanned out', { event_id: event.id, type: event.type, endpoints });
});
