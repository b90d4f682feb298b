import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import type { HeraldEvent } from '#adapters/events-queue';
import { logger } from '#shared/logger';
import { fanOut } from '#usecases/webhook-fanout';

const processor = new BatchProcessor(EventType.SQS);

async function recordHandler(record: SQSRecord): Promise<void> {
  const event = JSON.parse(record.body) as HeraldEvent;
  const endpoints = await fanOut(event);
  logger.debug('event fanned out', { event_id: event.id, type: event.type, endpoints });
}

/** The events queue: one message per event, one webhook job per subscribed endpoint. */
export const handler = async (event: SQSEvent, context: Context) =>
  processPartialResponse(event, recordHandler, processor, { context, throwOnFullBatchFailure: false });
