import type { WebhookJob } from '#core/messages';
import { logger } from '#shared/logger';
import { sqsBatchHandler } from '#shared/sqs-batch';
import { deliverJob } from '#usecases/webhook-delivery';

/** One message per (event, endpoint, attempt); the batch's POSTs run in parallel. */
export const handler = sqsBatchHandler<WebhookJob>(async (job) => {
  const outcome = await deliverJob(job);
  logger.debug('webhook attempt', { outcome, event_id: job.event.id, attempt: job.attempt });
});
