import { SendMessageBatchCommand, type SendMessageBatchCommandInput, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { DeliveryMessage } from '#core/messages';
import { type PostRecord, startPublishing } from '#core/posts';
import { handler } from '#handlers/stream-relay';
import { captureLines, emfOf, emfProblems } from '../support/emf.ts';
import { channel, channelItem, fixedId, type Item, post, postItem, variant } from '../support/fixtures.ts';

// Above SILENT, as the outcome lines are read.
vi.hoisted(() => {
  process.env.POWERTOOLS_LOG_LEVEL = 'WARN';
});

const sqs = mockClient(SQSClient);
/** The JSON lines the relay writes (its error lines stay out of the test output). */
const lines = captureLines();
// The relay also keeps the analytics counters (one UpdateItem per organization and counter item of
// a batch; one transaction per change in a batch that does not name its shard).
const ddb = mockClient(DynamoDBDocumentClient);
const SHARD = 'shardId-00000001900000000000-aaaaaaaa';

const NOW = new Date('2030-06-01T12:00:00.000Z');
const CH1 = fixedId('channel', 1);
const CH2 = fixedId('channel', 2);

type Image = NonNullable<NonNullable<DynamoDBRecord['dynamodb']>['NewImage']>;
const image = (item: Item): Image => marshall(item, { removeUndefinedValues: true }) as unknown as Image;

let seq = 100;
/** A stream record as Lambda delivers it (NEW_AND_OLD_IMAGES). */
function change(oldItem: Item | undefined, newItem: Item | undefined): DynamoDBRecord {
  seq += 1;
  const keyed = newItem ?? oldItem ?? {};
  return {
    eventID: `ev-${seq}`,
    eventName: oldItem && newItem ? 'MODIFY' : newItem ? 'INSERT' : 'REMOVE',
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'us-east-1',
    eventSourceARN: 'arn:aws:dynamodb:us-east-1:000000000000:table/herald-test/stream/2030',
    dynamodb: {
      Keys: image({ pk: keyed.pk, sk: keyed.sk }),
      ...(oldItem ? { OldImage: image(oldItem) } : {}),
      ...(newItem ? { NewImage: image(newItem) } : {}),
      SequenceNumber: String(seq).padStart(21, '0'),
      SizeBytes: 100,
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
  };
}
const sequenceOf = (r: DynamoDBRecord) => r.dynamodb?.SequenceNumber ?? '';
/** A batch as the windowed mapping hands it over: one shard's records, and the shard's id. */
const relay = (...records: DynamoDBRecord[]) =>
  handler({ Records: records, shardId: SHARD } satisfies DynamoDBStreamEvent & { shardId: string });

const twoChannelDraft = (n = 1): PostRecord =>
  post({ id: fixedId('post', n), variants: [variant(CH1, 1), variant(CH2, 2)] });
const startsPublishing = (n = 1) => {
  const draft = twoChannelDraft(n);
  return change(postItem(draft), postItem(startPublishing(draft, NOW)));
};

const sentMessages = (): DeliveryMessage[] =>
  sqs
    .commandCalls(SendMessageBatchCommand)
    .flatMap((c) => (c.args[0].input as SendMessageBatchCommandInput).Entries ?? [])
    .map((e) => JSON.parse(e.MessageBody ?? '') as DeliveryMessage);

/** SQS fails every batch that carries a message of `postId`, in the way `how` says. */
function sqsFailsFor(postId: string, how: 'reject' | 'failed-entries') {
  sqs.on(SendMessageBatchCommand).callsFake((input: SendMessageBatchCommandInput) => {
    const entries = input.Entries ?? [];
    const ours = entries.some((e) => (JSON.parse(e.MessageBody ?? '') as DeliveryMessage).post_id === postId);
    if (!ours) return { Successful: entries.map((e) => ({ Id: e.Id, MessageId: `m-${e.Id}` })), Failed: [] };
    if (how === 'reject') throw new Error('SQS unavailable');
    return {
      Successful: [],
      Failed: entries.map((e) => ({ Id: e.Id, Code: 'InternalError', SenderFault: false })),
    };
  });
}

beforeEach(() => {
  ddb.reset();
  ddb.on(TransactWriteCommand).resolves({});
  ddb.on(UpdateCommand).resolves({});
  sqs.reset();
  sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
});

describe('stream relay', () => {
  it('enqueues one delivery message per pending channel when a draft starts publishing', async () => {
    // Act
    const res = await relay(startsPublishing());

    // Assert
    expect(res).toEqual({ batchItemFailures: [], state: {} });
    expect(sqs.commandCalls(SendMessageBatchCommand)).toHaveLength(1);
    expect(sentMessages()).toEqual([
      { org_id: expect.any(String), post_id: fixedId('post', 1), channel_id: CH1, round: 1 },
      { org_id: expect.any(String), post_id: fixedId('post', 1), channel_id: CH2, round: 1 },
    ]);
  });

  it('enqueues a post inserted as publishing (publish_now)', async () => {
    await relay(change(undefined, postItem(startPublishing(twoChannelDraft(), NOW))));
    expect(sentMessages().map((m) => m.channel_id)).toEqual([CH1, CH2]);
  });

  it('enqueues nothing for publishing → publishing in the same round', async () => {
    // Arrange
    const publishing = startPublishing(twoChannelDraft(), NOW);
    const progressed: PostRecord = { ...publishing, version: 3 };

    // Act
    const res = await relay(change(postItem(publishing), postItem(progressed)));

    // Assert
    expect(res).toEqual({ batchItemFailures: [], state: {} });
    expect(sqs.calls()).toHaveLength(0);
  });

  it('enqueues nothing for a round a dispatch started (the dispatcher sent its messages)', async () => {
    const at = new Date(NOW.getTime() - 1000).toISOString();
    const scheduled: PostRecord = { ...twoChannelDraft(), status: 'scheduled', scheduled_at: at };
    const started = {
      ...startPublishing(scheduled, NOW),
      dispatched: { for: at, at: NOW.toISOString(), round: 1 },
    };
    await relay(change(postItem(scheduled), postItem(started)));
    expect(sqs.calls()).toHaveLength(0);
  });

  it('dispatches a post scheduled inside the window the sweeper already swept, and not one due later', async () => {
    const soon = new Date(Date.now() + 30_000).toISOString();
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const draft = twoChannelDraft();
    await relay(change(postItem(draft), postItem({ ...draft, status: 'scheduled', scheduled_at: soon })));
    await relay(change(postItem(draft), postItem({ ...draft, status: 'scheduled', scheduled_at: later })));
    const sent = sqs
      .commandCalls(SendMessageBatchCommand)
      .flatMap((c) => c.args[0].input.Entries ?? [])
      .map((e) => ({ body: JSON.parse(e.MessageBody ?? ''), delay: e.DelaySeconds }));
    expect(sent).toEqual([
      { body: { org_id: draft.org_id, post_id: draft.id, scheduled_at: soon }, delay: expect.any(Number) },
    ]);
    expect(sent[0]?.delay).toBeGreaterThanOrEqual(29);
  });

  it('enqueues nothing for an item that is not a post', async () => {
    // Arrange: a channel item that happens to carry post-like attributes.
    const item = { ...channelItem(channel(1)), status: 'publishing', round: 1, deliveries: {} };

    // Act
    await relay(change(channelItem(channel(1)), item));

    // Assert
    expect(sqs.calls()).toHaveLength(0);
  });

  it('enqueues nothing when a post is removed', async () => {
    await relay(change(postItem(startPublishing(twoChannelDraft(), NOW)), undefined));
    expect(sqs.calls()).toHaveLength(0);
  });

  it.each(['reject', 'failed-entries'] as const)(
    'reports the earliest record of a batch whose messages SQS did not all take (%s) so the stream retries from it',
    async (how) => {
      // Arrange: post 2's messages are refused; the batch's messages go out together.
      const records = [startsPublishing(1), startsPublishing(2), startsPublishing(3)];
      sqsFailsFor(fixedId('post', 2), how);

      // Act
      const res = await relay(...records);

      // Assert: Lambda resumes from post 1 (its messages and post 3's are sent again: harmless,
      // they name their round).
      expect(res).toEqual({
        batchItemFailures: [{ itemIdentifier: sequenceOf(records[0] as DynamoDBRecord) }],
        state: {},
      });
      const calls = sqs.commandCalls(SendMessageBatchCommand);
      expect(calls[0]?.args[0].input.Entries?.map((e) => JSON.parse(e.MessageBody ?? '').post_id)).toEqual(
        [1, 1, 2, 2, 3, 3].map((n) => fixedId('post', n)),
      );
    },
  );

  it('reports every record when all failed, so Lambda retries from the first (order kept)', async () => {
    // Arrange
    sqsFailsFor(fixedId('post', 1), 'reject');

    // Act
    const out = await relay(startsPublishing(1));

    // Assert
    expect(out.batchItemFailures.length).toBeGreaterThan(0);
  });

  it('counts the batch in one write per counter item, keyed by the shard the batch names', async () => {
    // Act: three posts start publishing in one batch.
    await relay(startsPublishing(1), startsPublishing(2), startsPublishing(3));

    // Assert: the org's STATS item, once, with the shard's mark; no transaction.
    const writes = ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);
    expect(writes.map((w) => w.Key?.sk)).toEqual(['STATS']);
    expect(Object.values(writes[0]?.ExpressionAttributeValues ?? {})).toContain(6);
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
  });

  it('counts change by change with markers when the batch does not name its shard', async () => {
    await handler({ Records: [startsPublishing(1), startsPublishing(2)] });
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(2);
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
  });

  it("answers a window's final invocation (no records) with an empty state", async () => {
    const res = await handler({ Records: [], shardId: SHARD, isFinalInvokeForWindow: true, state: {} });
    expect(res).toEqual({ batchItemFailures: [], state: {} });
    expect(ddb.calls()).toHaveLength(0);
  });

  it('reports the earliest record of a counter write that failed, so the stream retries from it', async () => {
    // Arrange
    ddb.on(UpdateCommand).rejects(new Error('DynamoDB unavailable'));
    const records = [startsPublishing(1), startsPublishing(2)];

    // Act
    const res = await relay(...records);

    // Assert: the messages went out; the counters come again with the retry.
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: sequenceOf(records[0] as DynamoDBRecord) }]);
    expect(sentMessages()).toHaveLength(4);
  });
});

describe('stream relay: channel status transitions (ChannelStatusChanged)', () => {
  const transitions = () => lines.metrics('ChannelStatusChanged');
  const ch = (status: 'live' | 'error' | 'reauth_required', n = 1) =>
    channelItem({ ...channel(n, 'mastodon'), status });

  it('counts a change of status by platform and new status, with the organization and channel in the line', async () => {
    await relay(change(ch('live'), ch('reauth_required')));

    const [line, ...more] = transitions();
    expect(more).toEqual([]);
    expect(emfProblems(line as Record<string, unknown>)).toEqual([]);
    expect(line).toMatchObject({
      level: 'INFO',
      message: 'channel status changed',
      org_id: channel(1).org_id,
      channel_id: fixedId('channel', 1),
      platform: 'mastodon',
      from: 'live',
      status: 'reauth_required',
      ChannelStatusChanged: 1,
    });
    expect(emfOf(line as Record<string, unknown>).dimensions).toEqual([['platform', 'status'], []]);
  });

  it('counts nothing for a channel change that keeps its status, or a new channel', async () => {
    await relay(change(ch('live'), { ...ch('live'), followers: 12 }), change(undefined, ch('live', 2)));
    expect(transitions()).toEqual([]);
  });

  it('counts only the records before the first failed one (the stream relays the rest again)', async () => {
    // Arrange: the post's counters cannot be written; the stream resumes from its record.
    ddb.on(UpdateCommand).rejects(new Error('DynamoDB unavailable'));
    const records = [
      change(ch('live'), ch('error')),
      startsPublishing(1),
      change(ch('error', 2), ch('live', 2)),
    ];

    // Act
    const res = await relay(...records);

    // Assert
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: sequenceOf(records[1] as DynamoDBRecord) }]);
    expect(transitions()).toHaveLength(1);
    expect(transitions()[0]).toMatchObject({
      channel_id: fixedId('channel', 1),
      from: 'live',
      status: 'error',
    });
  });
});
