import { createHash } from 'node:crypto';
import {
  enqueueDeliveries,
  publishEvents,
  sendDispatches,
  sendInboxReplies,
  sendRemovals,
} from '#adapters/queues';
import { type ChannelRecord, toChannel } from '#core/accounts';
import { deterministicId } from '#core/ids';
import type {
  DeliveryMessage,
  DispatchMessage,
  HeraldEvent,
  InboxReplyMessage,
  UnpublishMessage,
} from '#core/messages';
import { type PostRecord, pendingChannels, toPost } from '#core/posts';
import { LOOKAHEAD_SECONDS } from '#core/timing';
import { removing } from '#core/unpublish';
import type { EventType } from '#core/webhooks';

/**
 * Primary course: an item changed in the table (DynamoDB Streams). When a post starts a new publish
 * round, one delivery message per pending channel goes onto the delivery queue; post, delivery and
 * channel transitions become events on the event stream. The table write is the only step on the
 * request path, so a crash after it cannot strand a post or lose an event: the stream record stays
 * until this relay has handled it (at least once; ids are derived from the change, so a retry
 * repeats the same messages and events).
 */
export function deliveriesToEnqueue(
  oldPost: PostRecord | undefined,
  newPost: PostRecord | undefined,
): DeliveryMessage[] {
  if (newPost?.status !== 'publishing') return [];
  if (oldPost && oldPost.status === 'publishing' && oldPost.round === newPost.round) return [];
  // Started by a dispatch: the dispatcher sent this round's messages before the post changed.
  if (newPost.dispatched?.round === newPost.round) return [];
  return pendingChannels(newPost).map((channel_id) => ({
    org_id: newPost.org_id,
    post_id: newPost.id,
    channel_id,
    round: newPost.round,
  }));
}

/**
 * A post (re)scheduled for a time the sweeper has already swept past (it dispatches up to
 * LOOKAHEAD_SECONDS ahead, once a minute in AWS) is dispatched from here; the sweeper dispatches
 * everything later. A duplicate dispatch is harmless: the dispatcher acts on a post still
 * scheduled for the message's time only.
 */
export function dispatchesToSend(
  oldPost: PostRecord | undefined,
  newPost: PostRecord | undefined,
  now: number,
): Array<{ body: DispatchMessage; delaySeconds: number }> {
  const at = newPost?.scheduled_at;
  if (newPost?.status !== 'scheduled' || !at) return [];
  if (oldPost?.status === 'scheduled' && oldPost.scheduled_at === at) return [];
  if (Date.parse(at) > now + NEAR_SECONDS * 1000) return [];
  return [
    {
      body: { org_id: newPost.org_id, post_id: newPost.id, scheduled_at: at },
      delaySeconds: Math.max(0, (Date.parse(at) - now) / 1000),
    },
  ];
}

/** The sweeper's lookahead plus its period in AWS: anything later, a sweep still dispatches. */
const NEAR_SECONDS = LOOKAHEAD_SECONDS + 60;

export interface Change<T> {
  /** The stream record's id: unique per change. */
  eventId: string;
  timeMs: number;
  old: T | undefined;
  new: T | undefined;
}

export function event(
  change: Change<unknown>,
  type: EventType,
  orgId: string,
  data: Record<string, unknown>,
  suffix = '',
): HeraldEvent {
  const seed = createHash('sha256').update(`${change.eventId}|${type}|${suffix}`).digest();
  return {
    id: deterministicId('message', change.timeMs, seed),
    type,
    timestamp: new Date(change.timeMs).toISOString(),
    org_id: orgId,
    data,
  };
}

export function postEvents(change: Change<PostRecord>): HeraldEvent[] {
  const { old: before, new: after } = change;
  if (!after) return [];
  const out: HeraldEvent[] = [];
  if (after.status !== before?.status && (after.status === 'published' || after.status === 'failed')) {
    out.push(
      event(change, after.status === 'published' ? 'post.published' : 'post.failed', after.org_id, {
        post: toPost(after),
      }),
    );
  }
  const resource = toPost(after);
  for (const d of Object.values(after.deliveries)) {
    const prev = before?.deliveries[d.channel_id];
    if (d.stage === 'failed' && !(prev?.stage === 'failed' && prev.round === d.round)) {
      const delivery = resource.deliveries.find((x) => x.channel_id === d.channel_id);
      out.push(
        event(
          change,
          'delivery.failed',
          after.org_id,
          { post_id: after.id, channel_id: d.channel_id, delivery },
          d.channel_id,
        ),
      );
    }
  }
  return out;
}

/**
 * unpublishPost's outbox: each delivery that turned `removing` in this change gets its removal
 * message (a retry's own message is the worker's: the delivery was removing already).
 */
export function removalsToSend(
  oldPost: PostRecord | undefined,
  newPost: PostRecord | undefined,
): UnpublishMessage[] {
  if (!newPost) return [];
  return Object.values(newPost.deliveries)
    .filter((d) => d.stage === 'removing' && oldPost?.deliveries[d.channel_id]?.stage !== 'removing')
    .map((d) => ({ org_id: newPost.org_id, post_id: newPost.id, channel_id: d.channel_id }));
}

/**
 * `post.unpublished`: the change that ends the post's last removal (no delivery `removing` any
 * more, where the post before had one). Removals asked for while others run end together: one event.
 */
export function unpublishEvents(change: Change<PostRecord>): HeraldEvent[] {
  if (!change.new || !removing(change.old) || removing(change.new)) return [];
  return [event(change, 'post.unpublished', change.new.org_id, { post: toPost(change.new) })];
}

export function channelEvents(change: Change<ChannelRecord>): HeraldEvent[] {
  const { old: before, new: after } = change;
  if (!after) return [];
  // Every connection fires once: a new channel, or a reconnect (a new connection id; the stream
  // record id keeps a retried relay to the same event id).
  const connected =
    !before || (after.connection_id !== undefined && after.connection_id !== before.connection_id);
  if (connected && after.status === 'live')
    return [event(change, 'channel.connected', after.org_id, { channel: toChannel(after) })];
  if (after.status === 'reauth_required' && before?.status !== 'reauth_required') {
    return [event(change, 'channel.reauth_required', after.org_id, { channel: toChannel(after) })];
  }
  return [];
}

/**
 * What relaying changes sends, collected: a stream batch's changes go out together (one SQS request
 * per ten messages of each queue, not one per change). Alone, a change's relay sends its own.
 */
export class Outbox {
  readonly deliveries: DeliveryMessage[] = [];
  readonly dispatches: Array<{ body: DispatchMessage; delaySeconds: number }> = [];
  readonly events: HeraldEvent[] = [];
  readonly removals: UnpublishMessage[] = [];
  readonly inboxReplies: InboxReplyMessage[] = [];

  get size(): number {
    return (
      this.deliveries.length +
      this.dispatches.length +
      this.events.length +
      this.removals.length +
      this.inboxReplies.length
    );
  }

  async send(): Promise<void> {
    await Promise.all([
      this.deliveries.length ? enqueueDeliveries(this.deliveries) : undefined,
      this.dispatches.length ? sendDispatches(this.dispatches) : undefined,
      this.events.length ? publishEvents(this.events) : undefined,
      this.removals.length ? sendRemovals(this.removals) : undefined,
      this.inboxReplies.length ? sendInboxReplies(this.inboxReplies) : undefined,
    ]);
  }
}

export async function relayPostChange(change: Change<PostRecord>, outbox?: Outbox): Promise<number> {
  const box = outbox ?? new Outbox();
  const before = box.size;
  box.deliveries.push(...deliveriesToEnqueue(change.old, change.new));
  box.dispatches.push(...dispatchesToSend(change.old, change.new, Date.now()));
  box.events.push(...postEvents(change));
  box.removals.push(...removalsToSend(change.old, change.new));
  box.events.push(...unpublishEvents(change));
  if (!outbox) await box.send();
  return box.size - before;
}

export async function relayChannelChange(change: Change<ChannelRecord>, outbox?: Outbox): Promise<number> {
  const box = outbox ?? new Outbox();
  const before = box.size;
  box.events.push(...channelEvents(change));
  if (!outbox) await box.send();
  return box.size - before;
}
