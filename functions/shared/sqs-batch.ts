import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';

/**
 * An SQS-triggered Lambda handler: each record's JSON body goes to `handle`, the records of a batch
 * run in parallel, and only the failed ones return to the queue (partial batch responses).
 */
export function sqsBatchHandler<T>(handle: (body: T, record: SQSRecord) => Promise<void>) {
  const processor = new BatchProcessor(EventType.SQS);
  const recordHandler = (record: SQSRecord) => handle(JSON.parse(record.body) as T, record);
  return (event: SQSEvent, context: Context) =>
    processPartialResponse(event, recordHandler, processor, { context, throwOnFullBatchFailure: false });
}
