import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { queues } from '#lib/operations';
import {
  listDlqs,
  moveMessages,
  RefusedError,
  redriveDlq,
  showDlq,
  summarize,
} from '../../../bin/cli/dlq.ts';
import type { OpsTarget } from '../../../bin/cli/target.ts';

// `herald dlq list|show|redrive` against a mocked SQS: what each command asks SQS and answers.

const sqsMock = mockClient(SQSClient);
const sqs = new SQSClient({ region: 'us-east-1' });
const url = (name: string) => `https://sqs.us-east-1.amazonaws.com/1/${name}`;
const ops: OpsTarget = {
  dlqs: Object.fromEntries(
    queues.map((q) => [q.name, { dlqUrl: url(`${q.name}-dlq`), queueUrl: url(q.name) }]),
  ),
  streamDlqUrl: url('stream-dlq'),
  tableStreamArn: 'arn:aws:dynamodb:us-east-1:1:table/t/stream/2026',
  streamRelayFunction: 'relay',
};

afterEach(() => sqsMock.reset());

describe('dlq list', () => {
  it('lists every manifest queue and stream, each with visible + in-flight as its depth', async () => {
    sqsMock.on(GetQueueAttributesCommand).callsFake((input: { QueueUrl: string }) => ({
      Attributes: input.QueueUrl.endsWith('events-dlq')
        ? { ApproximateNumberOfMessages: '3', ApproximateNumberOfMessagesNotVisible: '2' }
        : { ApproximateNumberOfMessages: '0', ApproximateNumberOfMessagesNotVisible: '0' },
    }));
    const { dlqs } = await listDlqs(sqs, ops);
    expect(dlqs.map((d) => d.queue)).toEqual([...queues.map((q) => q.name), 'stream']);
    expect(dlqs.find((d) => d.queue === 'events')).toMatchObject({ visible: 3, in_flight: 2, depth: 5 });
    expect(dlqs.find((d) => d.queue === 'delivery')?.consumer).toMatch(/deliveryDeadLetters/);
    expect(dlqs.find((d) => d.queue === 'stream')?.redrive).toMatch(/stream replay/);
    for (const d of dlqs) expect(d.redrive.length).toBeGreaterThan(10);
  });

  it('says which output a stack without the DLQ URLs lacks', async () => {
    await expect(listDlqs(sqs, { ...ops, dlqs: {} })).rejects.toThrow(/no DeliveryDlqUrl output/);
  });
});

describe('dlq show', () => {
  it('peeks with visibility 0 and summarizes bodies without their content', async () => {
    sqsMock
      .on(ReceiveMessageCommand)
      .resolvesOnce({
        Messages: [
          {
            MessageId: 'm1',
            Body: JSON.stringify({
              org_id: 'org_1',
              endpoint_id: 'wh_1',
              attempt: 3,
              due_at: '2026-12-01T00:00:00.000Z',
              event: { id: 'msg_1', type: 'post.published', data: { post: { text: 'secret plans' } } },
            }),
            Attributes: { SentTimestamp: '1764547200000', ApproximateReceiveCount: '6' },
          },
          {
            MessageId: 'm2',
            Body: JSON.stringify({ $queue_body: { key: 'queue-bodies/abc', bytes: 300000 } }),
            Attributes: { SentTimestamp: '1764547200000', ApproximateReceiveCount: '5' },
          },
        ],
      })
      .resolves({});
    const shown = await showDlq(sqs, ops, 'webhooks', 10);
    const receive = sqsMock.commandCalls(ReceiveMessageCommand)[0]?.args[0].input;
    expect(receive).toMatchObject({ QueueUrl: url('webhooks-dlq'), VisibilityTimeout: 0 });
    expect(shown.note).toMatch(/receive count/);
    expect(shown.messages[0]).toEqual({
      message_id: 'm1',
      sent_at: '2025-12-01T00:00:00.000Z',
      receive_count: 6,
      about: {
        org_id: 'org_1',
        endpoint_id: 'wh_1',
        attempt: 3,
        due_at: '2026-12-01T00:00:00.000Z',
        event_type: 'post.published',
        event_id: 'msg_1',
      },
    });
    expect(JSON.stringify(shown)).not.toContain('secret plans');
    expect(shown.messages[1]?.about).toMatchObject({ by_reference: true, bytes: 300000 });
    expect(JSON.stringify(shown.messages[1])).not.toContain('queue-bodies/abc');
  });

  it('an empty DLQ shows no messages', async () => {
    sqsMock.on(ReceiveMessageCommand).resolves({});
    expect((await showDlq(sqs, ops, 'schedule', 5)).messages).toEqual([]);
  });

  it('stops at the limit and shows a message received twice once', async () => {
    const m = (id: string) => ({ MessageId: id, Body: '{"org_id":"o","post_id":"p","scheduled_at":"x"}' });
    sqsMock
      .on(ReceiveMessageCommand)
      .resolvesOnce({ Messages: [m('a'), m('b')] })
      .resolvesOnce({ Messages: [m('b'), m('c')] })
      .resolves({ Messages: [m('d')] });
    const shown = await showDlq(sqs, ops, 'schedule', 3);
    expect(shown.messages.map((x) => x.message_id)).toEqual(['a', 'b', 'c']);
  });

  it("prints a stream message's shard, range, size, condition and whether its records are still there", () => {
    const body = (first: string) =>
      JSON.stringify({
        requestContext: { condition: 'RetryAttemptsExhausted', approximateInvokeCount: 11 },
        DDBStreamBatchInfo: {
          shardId: 'shardId-1',
          startSequenceNumber: '100',
          endSequenceNumber: '200',
          approximateArrivalOfFirstRecord: first,
          batchSize: 4,
          streamArn: ops.tableStreamArn,
        },
      });
    expect(summarize('stream', body('2026-12-01T12:00:00.000Z'))).toMatchObject({
      shard_id: 'shardId-1',
      start_sequence: '100',
      end_sequence: '200',
      batch_size: 4,
      condition: 'RetryAttemptsExhausted',
    });
    expect(summarize('stream', body(new Date(Date.now() - 3600_000).toISOString())).in_stream).toBe('yes');
    expect(summarize('stream', body('2026-11-01T00:00:00.000Z')).in_stream).toBe('no');
  });
});

describe('dlq redrive', () => {
  it('refuses the stream DLQ (pointers, not messages) and the delivery DLQ (it has a consumer)', async () => {
    await expect(redriveDlq(sqs, ops, 'stream', { native: true, wait: false })).rejects.toThrow(RefusedError);
    await expect(redriveDlq(sqs, ops, 'stream', { native: false, wait: false })).rejects.toThrow(
      /herald stream replay/,
    );
    await expect(redriveDlq(sqs, ops, 'delivery', { native: true, wait: false })).rejects.toThrow(
      /deliveryDeadLetters/,
    );
    expect(sqsMock.calls()).toHaveLength(0);
  });

  it('on AWS starts a message move task from the DLQ back to its source and waits for it', async () => {
    const arn = 'arn:aws:sqs:us-east-1:1:events-dlq';
    sqsMock.on(GetQueueAttributesCommand).resolves({ Attributes: { QueueArn: arn } });
    sqsMock.on(StartMessageMoveTaskCommand).resolves({ TaskHandle: 'th' });
    sqsMock
      .on(ListMessageMoveTasksCommand)
      .resolvesOnce({ Results: [{ Status: 'RUNNING', ApproximateNumberOfMessagesMoved: 1 }] })
      .resolves({
        Results: [
          { Status: 'COMPLETED', ApproximateNumberOfMessagesMoved: 4, ApproximateNumberOfMessagesToMove: 4 },
        ],
      });
    const res = await redriveDlq(sqs, ops, 'events', { native: true, wait: true, pollMs: 1 });
    expect(sqsMock.commandCalls(StartMessageMoveTaskCommand)[0]?.args[0].input).toEqual({ SourceArn: arn });
    expect(res).toMatchObject({
      how: 'message-move-task',
      status: 'COMPLETED',
      moved: 4,
      to_move: 4,
      task_handle: 'th',
    });
    expect(res.why_safe).toMatch(/event id/);
  });

  it('without --wait answers the task as SQS reports it once', async () => {
    sqsMock.on(GetQueueAttributesCommand).resolves({ Attributes: { QueueArn: 'arn' } });
    sqsMock.on(StartMessageMoveTaskCommand).resolves({ TaskHandle: 'th' });
    sqsMock.on(ListMessageMoveTasksCommand).resolves({ Results: [{ Status: 'RUNNING' }] });
    expect((await redriveDlq(sqs, ops, 'schedule', { native: true, wait: false })).status).toBe('RUNNING');
    expect(sqsMock.commandCalls(ListMessageMoveTasksCommand)).toHaveLength(1);
  });
});

describe('the local move (receive → send → delete)', () => {
  it('sends each body and its attributes to the queue, then deletes only what SQS took', async () => {
    sqsMock.on(GetQueueAttributesCommand).resolves({ Attributes: { ApproximateNumberOfMessages: '3' } });
    sqsMock.on(ReceiveMessageCommand).resolvesOnce({
      Messages: [
        {
          MessageId: 'a',
          ReceiptHandle: 'ra',
          Body: 'A',
          MessageAttributes: { k: { DataType: 'String', StringValue: 'v' } },
        },
        { MessageId: 'b', ReceiptHandle: 'rb', Body: 'B' },
        { MessageId: 'c', ReceiptHandle: 'rc', Body: 'C' },
      ],
    });
    sqsMock.on(SendMessageBatchCommand).resolves({
      Successful: [
        { Id: '0', MessageId: 'x', MD5OfMessageBody: '' },
        { Id: '2', MessageId: 'y', MD5OfMessageBody: '' },
      ],
      Failed: [{ Id: '1', Code: 'InternalError', SenderFault: false, Message: 'try again' }],
    });
    sqsMock.on(DeleteMessageBatchCommand).resolves({ Successful: [{ Id: '0' }, { Id: '1' }] });
    await expect(moveMessages(sqs, url('events-dlq'), url('events'))).rejects.toThrow(/moved 2 .*refused 1/);
    const sent = sqsMock.commandCalls(SendMessageBatchCommand)[0]?.args[0].input;
    expect(sent?.QueueUrl).toBe(url('events'));
    expect(sent?.Entries?.[0]).toEqual({
      Id: '0',
      MessageBody: 'A',
      MessageAttributes: { k: { DataType: 'String', StringValue: 'v' } },
    });
    const deleted = sqsMock.commandCalls(DeleteMessageBatchCommand)[0]?.args[0].input;
    expect(deleted?.Entries?.map((e) => e.ReceiptHandle)).toEqual(['ra', 'rc']);
  });

  it('moves in batches of ten up to the depth it found, and an empty DLQ moves nothing', async () => {
    const batch = (n: number, from: number) => ({
      Messages: Array.from({ length: n }, (_, i) => ({
        MessageId: `m${from + i}`,
        ReceiptHandle: `r${from + i}`,
        Body: 'x',
      })),
    });
    sqsMock.on(GetQueueAttributesCommand).resolves({
      Attributes: { ApproximateNumberOfMessages: '10', ApproximateNumberOfMessagesNotVisible: '2' },
    });
    sqsMock
      .on(ReceiveMessageCommand)
      .resolvesOnce(batch(10, 0))
      .resolvesOnce(batch(2, 10))
      .resolves(batch(10, 12));
    sqsMock.on(SendMessageBatchCommand).callsFake((input: { Entries: Array<{ Id: string }> }) => ({
      Successful: input.Entries.map((e) => ({ Id: e.Id, MessageId: e.Id, MD5OfMessageBody: '' })),
    }));
    sqsMock.on(DeleteMessageBatchCommand).resolves({});
    const res = await redriveDlq(sqs, ops, 'webhooks', { native: false, wait: false });
    expect(res).toMatchObject({ how: 'receive-send-delete', moved: 12, to: url('webhooks') });
    expect(
      sqsMock.commandCalls(ReceiveMessageCommand).map((c) => c.args[0].input.MaxNumberOfMessages),
    ).toEqual([10, 2]);

    sqsMock.reset();
    sqsMock.on(GetQueueAttributesCommand).resolves({ Attributes: { ApproximateNumberOfMessages: '0' } });
    expect(await moveMessages(sqs, url('webhooks-dlq'), url('webhooks'))).toBe(0);
    expect(sqsMock.commandCalls(ReceiveMessageCommand)).toHaveLength(0);
  });
});
