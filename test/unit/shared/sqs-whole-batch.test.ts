import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { sqsWholeBatchHandler } from '#shared/sqs-batch';

// A whole-batch SQS handler: the bodies go to the use case together; an Error answer, or a body
// that is not JSON, returns just that record to the queue.

const event = (bodies: string[]): SQSEvent =>
  ({ Records: bodies.map((body, i) => ({ messageId: `m${i}`, body })) }) as unknown as SQSEvent;

describe('sqsWholeBatchHandler', () => {
  it('hands over the parsed bodies in order and reports only the failed records', async () => {
    const seen: unknown[][] = [];
    const handler = sqsWholeBatchHandler<{ n: number }>(async (bodies) => {
      seen.push(bodies);
      return bodies.map((b) => (b.n === 2 ? new Error('no') : 'ok'));
    });
    const res = await handler(event(['{"n":1}', 'not json', '{"n":2}', '{"n":3}']));
    expect(seen).toEqual([[{ n: 1 }, { n: 2 }, { n: 3 }]]);
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'm1' }, { itemIdentifier: 'm2' }]);
  });

  it('fails the whole batch when the use case throws (Lambda returns every record)', async () => {
    const handler = sqsWholeBatchHandler(async () => {
      throw new Error('DynamoDB down');
    });
    await expect(handler(event(['{}']))).rejects.toThrow('DynamoDB down');
  });
});
