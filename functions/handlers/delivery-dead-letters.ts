import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import type { DeliveryMessage } from '#adapters/delivery-queue';
import { logger } from '#shared/logger';
import { deadLetter } from '#usecases/dead-letters';

const processor = new BatchProcessor(EventType.SQS);

async function recordHandler(record: SQSRecord): Promise<void> {
  const msg = JSON.parse(record.body) as DeliveryMessage;
  const marked = await deadLetter(msg);
  logger.error('delivery dead-lettered', { ...msg, marked_failed: marked });
}

export const handler = async (event: SQSEvent, context: Context) =>
  processPartialResponse(event, recordHandler, processor, { context, throwOnFullBatchFailure: false });
