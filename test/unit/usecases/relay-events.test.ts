import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { type ChannelRecord, toChannel } from '#core/accounts';
import type { HeraldEvent } from '#core/messages';
import { type DeliveryRecord, type PostRecord, startPublishing, toPost } from '#core/posts';
import {
  type Change,
  channelEvents,
  postEvents,
  relayChannelChange,
  relayPostChange,
} from '#usecases/support/relay-post-changes';
import { channel, ORG_ID, post, variant } from '../support/fixtures.ts';

// Events from table changes (docs/architecture/delivery.md "Events", docs/api/webhooks.md): post.published / post.failed on a
// post's status transition, delivery.failed when a delivery reaches failed, channel.connected and
// channel.reauth_required. Ids derive from the stream record, so a relay retry repeats them.

const sqs = mockClient(SQSClient);

const NOW = new Date('2030-06-10T09:30:00.000Z');
const CH1 = channel(1, 'bluesky');
const CH2 = channel(2, 'mastodon');
const MSG_ID = /^msg_[0-9A-HJKMNP-TV-Z]{26}$/;

const change = <T>(old: T | undefined, next: T | undefined, eventId = 'evt-1'): Change<T> => ({
  eventId,
  timeMs: NOW.getTime(),
  old,
  new: next,
});

/** A post publishing round 1 to CH1 and CH2. */
const publishing = (): PostRecord =>
  startPublishing(
    post({ variants: [variant(CH1.id, 1), variant(CH2.id, 2)] }),
    new Date('2030-06-10T09:29:00Z'),
  );

function withStages(
  p: PostRecord,
  stages: Record<string, Partial<DeliveryRecord>>,
  patch: Partial<PostRecord> = {},
) {
  const deliveries = { ...p.deliveries };
  for (const [id, d] of Object.entries(stages))
    deliveries[id] = { ...(deliveries[id] as DeliveryRecord), ...d };
  return { ...p, deliveries, version: p.version + 1, ...patch };
}

const published = (externalId: string): Partial<DeliveryRecord> => ({
  stage: 'published',
  external_id: externalId,
  attempts: 1,
});
const failed: Partial<DeliveryRecord> = {
  stage: 'failed',
  attempts: 1,
  error: 'text too long',
  error_category: 'user_content',
};

const types = (events: HeraldEvent[]) => events.map((e) => e.type);

beforeEach(() => {
  sqs.reset();
  sqs.on(SendMessageBatchCommand).resolves({});
});

describe('postEvents', () => {
  it('emits post.published with the post resource when the post becomes published', () => {
    // Arrange
    const before = withStages(publishing(), { [CH1.id]: published('a-1') });
    const after = withStages(
      before,
      { [CH2.id]: published('b-1') },
      { status: 'published', published_at: NOW.toISOString() },
    );

    // Act
    const events = postEvents(change(before, after));

    // Assert
    expect(events).toEqual([
      {
        id: expect.stringMatching(MSG_ID),
        type: 'post.published',
        timestamp: NOW.toISOString(),
        org_id: ORG_ID,
        data: { post: toPost(after) },
      },
    ]);
  });

  it('does not emit post.published again on a later change of a published post', () => {
    const p = withStages(
      publishing(),
      { [CH1.id]: published('a-1'), [CH2.id]: published('b-1') },
      { status: 'published', published_at: NOW.toISOString() },
    );
    const later = { ...p, version: p.version + 1, updated_at: '2030-06-10T10:00:00.000Z' };
    expect(postEvents(change(p, later))).toEqual([]);
  });

  it('emits post.failed and delivery.failed when the last delivery fails', () => {
    // Arrange: CH1 published, CH2 fails → the post fails.
    const before = withStages(publishing(), { [CH1.id]: published('a-1') });
    const after = withStages(before, { [CH2.id]: failed }, { status: 'failed' });

    // Act
    const events = postEvents(change(before, after));

    // Assert
    expect(types(events).sort()).toEqual(['delivery.failed', 'post.failed']);
    expect(events.find((e) => e.type === 'post.failed')?.data).toEqual({ post: toPost(after) });
    const deliveryFailed = events.find((e) => e.type === 'delivery.failed');
    expect(deliveryFailed?.data).toEqual({
      post_id: after.id,
      channel_id: CH2.id,
      delivery: toPost(after).deliveries.find((d) => d.channel_id === CH2.id),
    });
    expect(deliveryFailed?.data.delivery).toMatchObject({ stage: 'failed', error_category: 'user_content' });
    expect(new Set(events.map((e) => e.id)).size).toBe(2);
  });

  it('emits delivery.failed for a delivery entering failed while the post keeps publishing', () => {
    const before = publishing();
    const after = withStages(before, { [CH1.id]: failed });
    const events = postEvents(change(before, after));
    expect(types(events)).toEqual(['delivery.failed']);
    expect(events[0]?.data).toMatchObject({ channel_id: CH1.id });
  });

  it('does not emit delivery.failed again for a delivery that stays failed', () => {
    const before = withStages(publishing(), { [CH1.id]: failed });
    const after = withStages(before, { [CH2.id]: { stage: 'sending', attempts: 1 } });
    expect(postEvents(change(before, after))).toEqual([]);
  });

  it('emits delivery.failed again when a republished delivery fails in its new round', () => {
    // Arrange: round 1 failed on CH1; the republished round 2 fails too.
    const failedPost = withStages(
      publishing(),
      { [CH1.id]: failed, [CH2.id]: published('b-1') },
      { status: 'failed' },
    );
    const round2 = startPublishing(failedPost, NOW);
    const before = withStages(round2, { [CH1.id]: { stage: 'sending', attempts: 1 } });
    const after = withStages(before, { [CH1.id]: failed }, { status: 'failed' });

    // Act
    const events = postEvents(change(before, after, 'evt-2'));

    // Assert
    expect(types(events).sort()).toEqual(['delivery.failed', 'post.failed']);
  });

  it('emits nothing for progress that changes no status', () => {
    const before = publishing();
    const after = withStages(before, { [CH1.id]: published('a-1') });
    expect(postEvents(change(before, after))).toEqual([]);
  });

  it('emits nothing for a deleted post', () => {
    expect(postEvents(change(publishing(), undefined))).toEqual([]);
  });
});

describe('event ids', () => {
  const before = publishing();
  const after = withStages(before, { [CH1.id]: failed });

  it('are the same for the same change (a relay retry repeats them)', () => {
    const first = postEvents(change(before, after, 'evt-7'));
    const retry = postEvents(change(before, after, 'evt-7'));
    expect(first[0]?.id).toMatch(MSG_ID);
    expect(retry.map((e) => e.id)).toEqual(first.map((e) => e.id));
  });

  it('differ between changes', () => {
    const a = postEvents(change(before, after, 'evt-7'));
    const b = postEvents(change(before, after, 'evt-8'));
    expect(a[0]?.id).not.toBe(b[0]?.id);
  });

  it('differ between the events of one change', () => {
    const both = withStages(before, { [CH1.id]: failed, [CH2.id]: failed }, { status: 'failed' });
    const ids = postEvents(change(before, both)).map((e) => e.id);
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(3);
  });
});

describe('channelEvents', () => {
  it('emits channel.connected with the channel resource for a new channel', () => {
    const events = channelEvents(change<ChannelRecord>(undefined, CH1));
    expect(events).toEqual([
      {
        id: expect.stringMatching(MSG_ID),
        type: 'channel.connected',
        timestamp: NOW.toISOString(),
        org_id: ORG_ID,
        data: { channel: toChannel(CH1) },
      },
    ]);
  });

  it('emits channel.reauth_required when a channel starts needing re-authorization', () => {
    const after: ChannelRecord = { ...CH1, status: 'reauth_required', last_error: 'token revoked' };
    const events = channelEvents(change(CH1, after));
    expect(types(events)).toEqual(['channel.reauth_required']);
    expect(events[0]?.data).toEqual({ channel: toChannel(after) });
  });

  it('emits nothing while a channel stays reauth_required, or for other changes', () => {
    const reauth: ChannelRecord = { ...CH1, status: 'reauth_required' };
    expect(channelEvents(change(reauth, { ...reauth, last_sync_at: NOW.toISOString() }))).toEqual([]);
    expect(channelEvents(change(CH1, { ...CH1, followers: 10 }))).toEqual([]);
    expect(channelEvents(change<ChannelRecord>(CH1, undefined))).toEqual([]);
  });
});

describe('relaying events', () => {
  it('puts a post change’s events on the events queue', async () => {
    // Arrange
    const before = publishing();
    const after = withStages(before, { [CH1.id]: failed });

    // Act
    const sent = await relayPostChange(change(before, after));

    // Assert
    expect(sent).toBe(1);
    const calls = sqs.commandCalls(SendMessageBatchCommand).map((c) => c.args[0].input);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.QueueUrl).toBe(process.env.EVENTS_QUEUE_URL);
    const body = JSON.parse(calls[0]?.Entries?.[0]?.MessageBody ?? '') as HeraldEvent;
    expect(body).toEqual(postEvents(change(before, after))[0]);
  });

  it('puts a channel change’s events on the events queue', async () => {
    const sent = await relayChannelChange(change<ChannelRecord>(undefined, CH2));
    expect(sent).toBe(1);
    const [call] = sqs.commandCalls(SendMessageBatchCommand).map((c) => c.args[0].input);
    expect(call?.QueueUrl).toBe(process.env.EVENTS_QUEUE_URL);
    expect(JSON.parse(call?.Entries?.[0]?.MessageBody ?? '')).toMatchObject({
      type: 'channel.connected',
      data: { channel: { id: CH2.id } },
    });
  });

  it('sends nothing for a change without events', async () => {
    expect(await relayChannelChange(change(CH1, { ...CH1, followers: 3 }))).toBe(0);
    expect(sqs.calls()).toHaveLength(0);
  });

  it('fails the relay (so the stream retries) when SQS refuses an event', async () => {
    sqs.on(SendMessageBatchCommand).resolves({
      Failed: [{ Id: '0', Code: 'InternalError', SenderFault: false }],
    });
    await expect(relayChannelChange(change<ChannelRecord>(undefined, CH1))).rejects.toThrow(/InternalError/);
  });
});
