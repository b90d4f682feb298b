import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { QueuePoller } from '../../../bin/local/queue-poller.ts';
import { lambdaContext } from '../support/fixtures.ts';

// The local stand-in for Lambda's SQS event source mapping: receive, hand the batch to the handler,
// delete what succeeded, leave reported failures for redelivery.

const sqsMock = mockClient(SQSClient);
const client = new SQSClient({ region: 'us-east-1' });

const QUEUE_URL = 'http://localhost:3001/000000000000/herald-delivery';
const QUEUE_ARN = 'arn:aws:sqs:us-east-1:000000000000:herald-delivery';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const message = (n: number): Message => ({
  MessageId: `m${n}`,
  ReceiptHandle: `rh${n}`,
  Body: JSON.stringify({ n }),
  MD5OfBody: 'md5',
  Attributes: { ApproximateReceiveCount: '2', SentTimestamp: '1900000000000' },
});

/**
 * The queue answers `batches` in order (an Error: the receive fails), then long-polls empty (a short
 * wait, as SQS would; an instant empty answer would spin the poller without yielding).
 */
function queueOf(batches: Array<Message[] | Error>) {
  sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
    const next = batches.shift();
    if (next instanceof Error) throw next;
    if (next) return { Messages: next };
    await sleep(5);
    return {};
  });
  sqsMock.on(DeleteMessageBatchCommand).resolves({ Successful: [], Failed: [] });
}

const deleted = () =>
  sqsMock.commandCalls(DeleteMessageBatchCommand).flatMap((c) => {
    expect(c.args[0].input.QueueUrl).toBe(QUEUE_URL);
    return (c.args[0].input.Entries ?? []).map((e) => e.ReceiptHandle);
  });

let poller: QueuePoller | undefined;

function start(
  handler: (event: SQSEvent) => Promise<SQSBatchResponse | undefined>,
  errors: unknown[] = [],
): QueuePoller {
  poller = new QueuePoller({
    client,
    queueUrl: QUEUE_URL,
    queueArn: QUEUE_ARN,
    handler,
    context: () => lambdaContext('deliveryWorker'),
    concurrency: 1,
    onError: (err) => errors.push(err),
  });
  poller.start();
  return poller;
}

beforeEach(() => {
  sqsMock.reset();
});

afterEach(async () => {
  await poller?.stop();
  poller = undefined;
});

describe('QueuePoller', () => {
  it('hands a batch to the handler as a Lambda SQS event and deletes the messages that succeeded', async () => {
    // Arrange
    queueOf([[message(1), message(2), message(3)]]);
    const events: SQSEvent[] = [];

    // Act
    start(async (event) => {
      events.push(event);
      return { batchItemFailures: [{ itemIdentifier: 'm2' }] };
    });
    await vi.waitFor(() => expect(sqsMock.commandCalls(DeleteMessageBatchCommand)).toHaveLength(1));

    // Assert
    expect(deleted()).toEqual(['rh1', 'rh3']);
    expect(events).toHaveLength(1);
    expect(events[0]?.Records.map((r) => r.messageId)).toEqual(['m1', 'm2', 'm3']);
    expect(events[0]?.Records[0]).toMatchObject({
      receiptHandle: 'rh1',
      body: '{"n":1}',
      eventSource: 'aws:sqs',
      eventSourceARN: QUEUE_ARN,
      attributes: { ApproximateReceiveCount: '2', SentTimestamp: '1900000000000' },
    });
    expect(sqsMock.commandCalls(ReceiveMessageCommand)[0]?.args[0].input).toMatchObject({
      QueueUrl: QUEUE_URL,
      MaxNumberOfMessages: 10,
    });
  });

  it('deletes the whole batch when the handler reports no failures', async () => {
    queueOf([[message(1), message(2)]]);
    start(async () => undefined);
    await vi.waitFor(() => expect(sqsMock.commandCalls(DeleteMessageBatchCommand)).toHaveLength(1));
    expect(deleted()).toEqual(['rh1', 'rh2']);
  });

  it('deletes nothing when every message failed', async () => {
    // Arrange
    queueOf([[message(1), message(2)]]);
    let handled = 0;

    // Act
    start(async () => {
      handled += 1;
      return { batchItemFailures: [{ itemIdentifier: 'm1' }, { itemIdentifier: 'm2' }] };
    });
    await vi.waitFor(() => expect(handled).toBe(1));
    await sleep(20);

    // Assert
    expect(sqsMock.commandCalls(DeleteMessageBatchCommand)).toHaveLength(0);
  });

  it('treats a handler that throws as a failure of every message and reports the error', async () => {
    // Arrange
    queueOf([[message(1), message(2)], [message(3)]]);
    const errors: unknown[] = [];
    let calls = 0;

    // Act: the first batch throws, the second succeeds.
    start(async () => {
      calls += 1;
      if (calls === 1) throw new Error('worker crashed');
      return { batchItemFailures: [] };
    }, errors);
    await vi.waitFor(() => expect(sqsMock.commandCalls(DeleteMessageBatchCommand)).toHaveLength(1));

    // Assert
    expect(deleted()).toEqual(['rh3']);
    expect(errors).toEqual([expect.objectContaining({ message: 'worker crashed' })]);
  });

  it('stops polling on stop(), after finishing the batch in hand', async () => {
    // Arrange: the handler holds its batch until released.
    queueOf([[message(1)]]);
    let release: () => void = () => {};
    let handling = false;
    const p = start(async () => {
      handling = true;
      await new Promise<void>((r) => {
        release = r;
      });
      return undefined;
    });
    await vi.waitFor(() => expect(handling).toBe(true));

    // Act
    let stopped = false;
    const stopping = p.stop().then(() => {
      stopped = true;
    });
    await sleep(20);
    const stoppedBeforeRelease = stopped;
    release();
    await stopping;
    const receives = sqsMock.commandCalls(ReceiveMessageCommand).length;
    await sleep(30);

    // Assert
    expect(stoppedBeforeRelease).toBe(false);
    expect(deleted()).toEqual(['rh1']);
    expect(sqsMock.commandCalls(ReceiveMessageCommand)).toHaveLength(receives);
    expect(receives).toBe(1);
  });

  it('keeps polling after a receive error, reporting it', async () => {
    // Arrange: the first receive fails (the local SQS restarting), then a batch arrives.
    const errors: unknown[] = [];
    queueOf([new Error('ECONNREFUSED'), [message(1)]]);

    // Act
    start(async () => undefined, errors);
    await vi.waitFor(() => expect(sqsMock.commandCalls(DeleteMessageBatchCommand)).toHaveLength(1), {
      timeout: 3000,
    });

    // Assert
    expect(errors).toEqual([expect.objectContaining({ message: 'ECONNREFUSED' })]);
    expect(deleted()).toEqual(['rh1']);
  });
});
