import { SendMessageBatchCommand, type SendMessageBatchCommandInput, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import type { DeliveryMessage } from '#core/messages';
import { type PostRecord, startPublishing } from '#core/posts';
import { type Change, deliveriesToEnqueue, relayPostChange } from '#usecases/support/relay-post-changes';
import { fixedId, ORG_ID, post, variant } from '../../support/fixtures.ts';

const sqs = mockClient(SQSClient);

const NOW = new Date('2030-06-01T12:00:00.000Z');
const QUEUE_URL = process.env.DELIVERY_QUEUE_URL;
const channels = (n: number) => Array.from({ length: n }, (_, i) => fixedId('channel', i + 1));
const draftTo = (n: number): PostRecord => post({ variants: channels(n).map((c, i) => variant(c, i + 1)) });

const sentMessages = (): DeliveryMessage[] =>
  sqs
    .commandCalls(SendMessageBatchCommand)
    .flatMap((c) => (c.args[0].input as SendMessageBatchCommandInput).Entries ?? [])
    .map((e) => JSON.parse(e.MessageBody ?? '') as DeliveryMessage);

beforeEach(() => {
  sqs.reset();
  sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
});

describe('deliveriesToEnqueue', () => {
  it('queues one message per pending channel when a draft starts publishing', () => {
    // Arrange
    const before = draftTo(2);
    const after = startPublishing(before, NOW);

    // Act
    const messages = deliveriesToEnqueue(before, after);

    // Assert
    expect(messages).toEqual(
      channels(2).map((channel_id) => ({ org_id: ORG_ID, post_id: before.id, channel_id, round: 1 })),
    );
  });

  it('queues a post inserted straight into publishing (publish_now)', () => {
    const inserted = startPublishing(draftTo(1), NOW);
    expect(deliveriesToEnqueue(undefined, inserted)).toHaveLength(1);
  });

  it('queues nothing for a publishing → publishing change within the same round', () => {
    // Arrange: a delivery worker recorded progress on one channel.
    const publishing = startPublishing(draftTo(2), NOW);
    const progressed: PostRecord = { ...publishing, version: publishing.version + 1 };

    // Act / Assert
    expect(deliveriesToEnqueue(publishing, progressed)).toEqual([]);
  });

  it('queues the new round when a failed post is published again', () => {
    const failed: PostRecord = { ...startPublishing(draftTo(1), NOW), status: 'failed' };
    const again = startPublishing(failed, NOW);
    expect(deliveriesToEnqueue(failed, again)).toEqual([expect.objectContaining({ round: 2 })]);
  });

  it.each<[string, PostRecord | undefined]>([
    ['a draft', draftTo(1)],
    ['a scheduled post', { ...draftTo(1), status: 'scheduled' }],
    ['a deleted post', undefined],
  ])('queues nothing for %s', (_what, newImage) => {
    expect(deliveriesToEnqueue(draftTo(1), newImage)).toEqual([]);
  });
});

/** A stream change of one post item. */
const change = (old: PostRecord | undefined, next: PostRecord | undefined): Change<PostRecord> => ({
  eventId: 'evt-1',
  timeMs: NOW.getTime(),
  old,
  new: next,
});

describe('relayPostChange', () => {
  it('sends the messages to the delivery queue in batches of at most 10', async () => {
    // Arrange: 12 channels → two SendMessageBatch requests.
    const before = draftTo(12);

    // Act
    const sent = await relayPostChange(change(before, startPublishing(before, NOW)));

    // Assert
    expect(sent).toBe(12);
    const calls = sqs.commandCalls(SendMessageBatchCommand);
    expect(calls.map((c) => c.args[0].input.Entries?.length)).toEqual([10, 2]);
    expect(calls.every((c) => c.args[0].input.QueueUrl === QUEUE_URL)).toBe(true);
    expect(sentMessages().map((m) => m.channel_id)).toEqual(channels(12));
  });

  it('sends nothing when there is nothing to deliver', async () => {
    expect(await relayPostChange(change(draftTo(1), draftTo(1)))).toBe(0);
    expect(sqs.calls()).toHaveLength(0);
  });

  it('fails when SQS refuses any entry, so the stream record is retried', async () => {
    // Arrange
    sqs.on(SendMessageBatchCommand).resolves({
      Successful: [{ Id: '0', MessageId: 'm0', MD5OfMessageBody: 'x' }],
      Failed: [{ Id: '1', Code: 'InternalError', SenderFault: false }],
    });
    const before = draftTo(2);

    // Act / Assert
    await expect(relayPostChange(change(before, startPublishing(before, NOW)))).rejects.toThrow(
      /InternalError/,
    );
  });
});
