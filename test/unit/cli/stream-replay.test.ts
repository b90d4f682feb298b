import {
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
  TrimmedDataAccessException,
} from '@aws-sdk/client-dynamodb-streams';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { replayStream } from '../../../bin/cli/stream-replay.ts';
import type { OpsTarget } from '../../../bin/cli/target.ts';

// `herald stream replay` against mocked SQS, DynamoDB Streams and Lambda: which records it reads,
// the event it hands the relay, and when it deletes (only after every record was relayed).

const sqsMock = mockClient(SQSClient);
const streamsMock = mockClient(DynamoDBStreamsClient);
const lambdaMock = mockClient(LambdaClient);
const clients = {
  sqs: new SQSClient({ region: 'us-east-1' }),
  streams: new DynamoDBStreamsClient({ region: 'us-east-1' }),
  lambda: new LambdaClient({ region: 'us-east-1' }),
};
const STREAM = 'arn:aws:dynamodb:us-east-1:1:table/herald/stream/2026-12-01T00:00:00.000';
const ops: OpsTarget = {
  dlqs: {},
  streamDlqUrl: 'https://sqs.us-east-1.amazonaws.com/1/stream-dlq',
  tableStreamArn: STREAM,
  streamRelayFunction: 'Herald-prod-workers-streamRelay',
};

const failure = (first = new Date(Date.now() - 3600_000).toISOString()) =>
  JSON.stringify({
    requestContext: { condition: 'RetryAttemptsExhausted', approximateInvokeCount: 11 },
    timestamp: new Date().toISOString(),
    DDBStreamBatchInfo: {
      shardId: 'shardId-7',
      startSequenceNumber: '100',
      endSequenceNumber: '300',
      approximateArrivalOfFirstRecord: first,
      batchSize: 3,
      streamArn: STREAM,
    },
  });

const record = (seq: string, entity: string): StreamRecord => ({
  eventID: `e${seq}`,
  eventName: 'MODIFY',
  dynamodb: {
    SequenceNumber: seq,
    ApproximateCreationDateTime: new Date('2026-12-01T10:00:00Z'),
    NewImage: { entity: { S: entity }, pk: { S: 'ORG#o' }, meta: {} as never },
  },
});

function givenMessage(body = failure()) {
  sqsMock
    .on(ReceiveMessageCommand)
    .resolvesOnce({ Messages: [{ MessageId: 'dl1', ReceiptHandle: 'rh1', Body: body }] })
    .resolves({});
  sqsMock.on(DeleteMessageCommand).resolves({});
}

function givenRecords() {
  streamsMock.on(GetShardIteratorCommand).resolves({ ShardIterator: 'it1' });
  streamsMock
    .on(GetRecordsCommand)
    .resolvesOnce({ Records: [record('100', 'post'), record('150', 'gate')], NextShardIterator: 'it2' })
    .resolvesOnce({ Records: [record('300', 'channel'), record('400', 'post')], NextShardIterator: 'it3' });
}

const relayAnswers = (answer: unknown, functionError?: string) =>
  lambdaMock.on(InvokeCommand).resolves({
    StatusCode: 200,
    ...(functionError ? { FunctionError: functionError } : {}),
    Payload: new TextEncoder().encode(JSON.stringify(answer)) as never,
  });

afterEach(() => {
  sqsMock.reset();
  streamsMock.reset();
  lambdaMock.reset();
});

describe('herald stream replay', () => {
  it("reads the range from the stream, hands the filter's records to the relay with their shard, then deletes", async () => {
    givenMessage();
    givenRecords();
    relayAnswers({ batchItemFailures: [], state: {} });
    const res = await replayStream(clients, ops, { dryRun: false });

    expect(streamsMock.commandCalls(GetShardIteratorCommand)[0]?.args[0].input).toEqual({
      StreamArn: STREAM,
      ShardId: 'shardId-7',
      ShardIteratorType: 'AT_SEQUENCE_NUMBER',
      SequenceNumber: '100',
    });
    const invoke = lambdaMock.commandCalls(InvokeCommand)[0]?.args[0].input;
    expect(invoke).toMatchObject({
      FunctionName: ops.streamRelayFunction,
      InvocationType: 'RequestResponse',
    });
    const event = JSON.parse(new TextDecoder().decode(invoke?.Payload as Uint8Array));
    // The gate write is filtered out (as the mapping does); 400 is past the range.
    expect(
      event.Records.map((r: { dynamodb: { SequenceNumber: string } }) => r.dynamodb.SequenceNumber),
    ).toEqual(['100', '300']);
    expect(event).toMatchObject({
      shardId: 'shardId-7',
      eventSourceARN: STREAM,
      state: {},
      isFinalInvokeForWindow: false,
    });
    expect(event.Records[0]).toMatchObject({ eventSource: 'aws:dynamodb', eventSourceARN: STREAM });
    // Seconds, as Lambda sends them; an empty map stays an attribute value.
    expect(event.Records[0].dynamodb.ApproximateCreationDateTime).toBe(
      Date.parse('2026-12-01T10:00:00Z') / 1000,
    );
    expect(event.Records[0].dynamodb.NewImage.meta).toEqual({ M: {} });

    expect(sqsMock.commandCalls(DeleteMessageCommand)[0]?.args[0].input.ReceiptHandle).toBe('rh1');
    expect(res).toMatchObject({ dry_run: false, replayed: 1, kept: 0 });
    expect(res.messages[0]).toMatchObject({
      status: 'replayed',
      shard_id: 'shardId-7',
      records: 2,
      filtered_out: 1,
      entities: { post: 1, channel: 1 },
      condition: 'RetryAttemptsExhausted',
    });
  });

  it('keeps the message and names the sequence when the relay reports a record again', async () => {
    givenMessage();
    givenRecords();
    relayAnswers({ batchItemFailures: [{ itemIdentifier: '300' }], state: {} });
    const res = await replayStream(clients, ops, { dryRun: false });
    expect(res.messages[0]).toMatchObject({ status: 'failed', failed_sequence: '300' });
    expect(res).toMatchObject({ replayed: 0, kept: 1 });
    expect(sqsMock.commandCalls(DeleteMessageCommand)).toHaveLength(0);
  });

  it('keeps the message when the relay function fails', async () => {
    givenMessage();
    givenRecords();
    relayAnswers({ errorType: 'Error', errorMessage: 'Task timed out' }, 'Unhandled');
    const res = await replayStream(clients, ops, { dryRun: false });
    expect(res.messages[0]).toMatchObject({ status: 'failed', failed_sequence: '100' });
    expect(res.messages[0]?.error).toMatch(/Task timed out/);
    expect(sqsMock.commandCalls(DeleteMessageCommand)).toHaveLength(0);
  });

  it('says the records are lost when the stream has trimmed them, and keeps the message unless --drop-lost', async () => {
    givenMessage();
    streamsMock
      .on(GetShardIteratorCommand)
      .rejects(new TrimmedDataAccessException({ message: 'trimmed', $metadata: {} }));
    const res = await replayStream(clients, ops, { dryRun: false });
    expect(res.messages[0]?.status).toBe('lost');
    expect(res.messages[0]?.lost).toMatch(/100…300 of shard shardId-7/);
    expect(res.messages[0]?.lost).toMatch(/events, failure-ladder starts and analytics counts/);
    expect(res.messages[0]?.lost).toMatch(/runbooks\.md#stream-replay/);
    expect(lambdaMock.calls()).toHaveLength(0);
    expect(sqsMock.commandCalls(DeleteMessageCommand)).toHaveLength(0);

    sqsMock.reset();
    givenMessage();
    const dropped = await replayStream(clients, ops, { dryRun: false, dropLost: true });
    expect(dropped.messages[0]?.status).toBe('dropped');
    expect(sqsMock.commandCalls(DeleteMessageCommand)).toHaveLength(1);
  });

  it('does not read a batch older than the 24-hour retention', async () => {
    givenMessage(failure(new Date(Date.now() - 25 * 3600_000).toISOString()));
    const res = await replayStream(clients, ops, { dryRun: false });
    expect(res.messages[0]).toMatchObject({ status: 'lost' });
    expect(res.messages[0]?.lost).toMatch(/older than the 24-hour retention/);
    expect(streamsMock.calls()).toHaveLength(0);
  });

  it('--dry-run peeks (visibility 0), reads the records and changes nothing', async () => {
    givenMessage();
    givenRecords();
    const res = await replayStream(clients, ops, { dryRun: true });
    expect(sqsMock.commandCalls(ReceiveMessageCommand)[0]?.args[0].input.VisibilityTimeout).toBe(0);
    expect(res.messages[0]).toMatchObject({ status: 'would_replay', records: 2, filtered_out: 1 });
    expect(res).toMatchObject({ dry_run: true, replayed: 0, kept: 0 });
    expect(lambdaMock.calls()).toHaveLength(0);
    expect(sqsMock.commandCalls(DeleteMessageCommand)).toHaveLength(0);
  });

  it('an empty DLQ replays nothing; a message that is not an on-failure record is kept', async () => {
    sqsMock.on(ReceiveMessageCommand).resolves({});
    expect(await replayStream(clients, ops, { dryRun: false })).toMatchObject({
      messages: [],
      replayed: 0,
      kept: 0,
    });
    sqsMock.reset();
    givenMessage('{"hello":1}');
    const res = await replayStream(clients, ops, { dryRun: false });
    expect(res.messages[0]?.status).toBe('unreadable');
    expect(sqsMock.commandCalls(DeleteMessageCommand)).toHaveLength(0);
  });

  it('says which output an older deployment lacks', async () => {
    await expect(
      replayStream(clients, { ...ops, streamRelayFunction: undefined }, { dryRun: false }),
    ).rejects.toThrow(/StreamRelayFunctionName/);
  });
});
