import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import type { DispatchMessage } from '#adapters/work-queues';
import { dispatch } from '#usecases/schedule';

const processor = new BatchProcessor(EventType.SQS);

async function recordHandler(record: SQSRecord): Promise<void> {
  await dispatch(JSON.parse(record.body) as DispatchMessage);
}

export const handler = async (event: SQSEvent, context: Context) =>
  processPartialResponse(event, recordHandler, processor, { context, throwOnFullBatchFailure: false });
