import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import type { WebhookJob } from '#adapters/webhooks/jobs';
import { logger } from '#shared/logger';
import { deliverJob } from '#usecases/webhook-delivery';

const processor = new BatchProcessor(EventType.SQS);

async function recordHandler(record: SQSRecord): Promise<void> {
  const job = JSON.parse(record.body) as WebhookJob;
  const outcome = await deliverJob(job);
  logger.debug('webhook attempt', { outcome, event_id: job.event.id, attempt: job.attempt });
}

/** One message per (event, endpoint, attempt); the batch's POSTs run in parallel. */
export const handler = async (event: SQSEvent, context: Context) =>
  processPartialResponse(event, recordHandler, processor, { context, throwOnFullBatchFailure: false });
