import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { logger } from './logger.ts';
import { receivedBody } from './queue-bodies.ts';

/**
 * An SQS-triggered Lambda handler: each record's JSON body goes to `handle` (a body sent by
 * reference is read first: shared/queue-bodies.ts), the records of a batch run in parallel, and only
 * the failed ones return to the queue (partial batch responses).
 */
export function sqsBatchHandler<T>(handle: (body: T, record: SQSRecord) => Promise<void>) {
  const processor = new BatchProcessor(EventType.SQS);
  const recordHandler = async (record: SQSRecord) => handle(await receivedBody<T>(record.body), record);
  return (event: SQSEvent, context: Context) =>
    processPartialResponse(event, recordHandler, processor, { context, throwOnFullBatchFailure: false });
}

/**
 * An SQS-triggered Lambda handler that takes the batch's bodies together (to read or send for all
 * of them at once). `handle` answers per body, in order: an Error sends that record back to the
 * queue, anything else deletes it. A body that is not JSON, or sent by reference and not readable,
 * goes back alone (and on to the DLQ if it stays so).
 */
export function sqsWholeBatchHandler<T>(handle: (bodies: T[]) => Promise<unknown[]>) {
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const parsed = await Promise.all(
      event.Records.map(async (r) => {
        try {
          return { record: r, body: await receivedBody<T>(r.body) };
        } catch (err) {
          logger.warn('unreadable message body', { message_id: r.messageId, error: (err as Error).message });
          return { record: r, body: undefined };
        }
      }),
    );
    const good = parsed.filter((p) => p.body !== undefined);
    const results = await handle(good.map((p) => p.body as T));
    const failed = [
      ...parsed.filter((p) => p.body === undefined).map((p) => p.record),
      ...good.filter((_, i) => results[i] instanceof Error).map((p) => p.record),
    ];
    return { batchItemFailures: failed.map((r) => ({ itemIdentifier: r.messageId })) };
  };
}
