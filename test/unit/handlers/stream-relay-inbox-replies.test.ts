import { SendMessageBatchCommand, type SendMessageBatchCommandInput, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import type { InboxReply } from '#core/inbox';
import { handler } from '#handlers/stream-relay';
import { CREATED_AT, fixedId, type Item, inboxRecord, inboxRecordItem, ORG_ID } from '../support/fixtures.ts';

// The stream relay's part of replyToInboxItem: the change that gives an item a queued reply sends
// that reply's message to the inboxReplies queue, once per change; a failed send reports the
// record, so the stream brings it back (the written reply is never stranded).

const sqs = mockClient(SQSClient);
const ddb = mockClient(DynamoDBDocumentClient);
const SHARD = 'shardId-00000001900000000000-bbbbbbbb';
const QUEUE = 'https://sqs.us-east-1.amazonaws.com/000000000000/herald-inboxReplies';

type Image = NonNullable<NonNullable<DynamoDBRecord['dynamodb']>['NewImage']>;
const image = (item: Item): Image => marshall(item, { removeUndefinedValues: true }) as unknown as Image;
let seq = 500;
function change(oldItem: Item, newItem: Item): DynamoDBRecord {
  seq += 1;
  return {
    eventID: `ev-${seq}`,
    eventName: 'MODIFY',
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'us-east-1',
    eventSourceARN: 'arn:aws:dynamodb:us-east-1:000000000000:table/herald-test/stream/2030',
    dynamodb: {
      Keys: image({ pk: newItem.pk, sk: newItem.sk }),
      OldImage: image(oldItem),
      NewImage: image(newItem),
      SequenceNumber: String(seq).padStart(21, '0'),
      SizeBytes: 100,
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
  };
}
const relay = (...records: DynamoDBRecord[]) =>
  handler({ Records: records, shardId: SHARD } satisfies DynamoDBStreamEvent & { shardId: string });

const queued = (n: number): InboxReply => ({
  id: fixedId('reply', n),
  text: 'Thanks!',
  stage: 'queued',
  external_id: null,
  url: null,
  error: null,
  created_at: CREATED_AT,
  attempts: 0,
  claim: null,
});
const ITEM = inboxRecord(1);
const withReplies = (...replies: InboxReply[]) => inboxRecordItem({ ...ITEM, replies });
const sent = () =>
  sqs
    .commandCalls(SendMessageBatchCommand)
    .map((c) => c.args[0].input as SendMessageBatchCommandInput)
    .flatMap((i) =>
      (i.Entries ?? []).map((e) => ({ queue: i.QueueUrl, body: JSON.parse(e.MessageBody ?? '') })),
    );

beforeEach(() => {
  sqs.reset();
  ddb.reset();
  sqs.on(SendMessageBatchCommand).callsFake((input: SendMessageBatchCommandInput) => ({
    Successful: (input.Entries ?? []).map((e) => ({ Id: e.Id, MessageId: `m-${e.Id}` })),
    Failed: [],
  }));
});

describe('the stream relay and inbox replies', () => {
  it('sends the message of a reply the item gained queued, to the inboxReplies queue', async () => {
    const res = await relay(change(withReplies(), withReplies(queued(1))));
    expect(res.batchItemFailures).toEqual([]);
    expect(sent()).toEqual([
      { queue: QUEUE, body: { org_id: ORG_ID, item_id: ITEM.id, reply_id: fixedId('reply', 1) } },
    ]);
  });

  it('sends nothing for the worker’s own changes of a reply (its retries are its own messages)', async () => {
    const sending = { ...queued(1), stage: 'sending' as const };
    const res = await relay(change(withReplies(sending), withReplies(queued(1))));
    expect(res.batchItemFailures).toEqual([]);
    expect(sent()).toEqual([]);
  });

  it('reports the record when the send fails, so the stream brings it back', async () => {
    sqs.on(SendMessageBatchCommand).rejects(new Error('SQS unavailable'));
    const record = change(withReplies(), withReplies(queued(1)));
    const res = await relay(record);
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: record.dynamodb?.SequenceNumber }]);
  });
});
