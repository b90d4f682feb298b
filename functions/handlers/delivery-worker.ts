import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import type { DeliveryMessage } from '#adapters/delivery-queue';
import { logger } from '#shared/logger';
import { deliver } from '#usecases/deliver';

const processor = new BatchProcessor(EventType.SQS);

async function recordHandler(record: SQSRecord): Promise<void> {
  const outcome = await deliver(JSON.parse(record.body) as DeliveryMessage);
  logger.debug('delivery', { outcome, message_id: record.messageId });
}

/** One message per (post, channel, round); a failed record returns to the queue on its own. */
export const handler = async (event: SQSEvent, context: Context) =>
  processPartialResponse(event, recordHandler, processor, { context, throwOnFullBatchFailure: false });
