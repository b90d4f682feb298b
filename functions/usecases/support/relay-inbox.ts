import { linkInboxItemsToPosts } from '#adapters/inbox';
import { clearInboxPollBackoff, deleteInboxPoll, ensureInboxPoll } from '#adapters/inbox-polls';
import { type PostRef, putPostRefs } from '#adapters/post-refs';
import type { TableChange } from '#adapters/stream-records';
import type { ChannelRecord } from '#core/accounts';
import { INBOX, type InboxItemRecord, toInboxItem } from '#core/inbox';
import type { PostRecord } from '#core/posts';
import { type Change, event, type Outbox } from '#usecases/support/relay-post-changes';

// The inbox's part of the stream relay (usecases/stream-relay.ts): what keeps the poller's index
// in step with the channels, Herald's published parts findable by their platform ids, and the
// `inbox.received` event. Each is safe to repeat: a relay retried after a failure puts the same
// poll state (conditionally), the same refs, and the same event id.

/**
 * A channel that is live gets a poll state if it has none (a conditional put: one that exists
 * keeps its cursor), so channels connected before the inbox existed join at their next change; a
 * reconnected one has its backoff cleared; a disconnected one loses it (and its place in the poll
 * index).
 */
export async function relayChannelInbox(change: Change<ChannelRecord>, now: Date): Promise<void> {
  const after = change.new;
  if (!after) return;
  if (after.status === 'disconnected') {
    if (change.old?.status !== 'disconnected') await deleteInboxPoll(after.org_id, after.id);
    return;
  }
  if (after.status !== 'live' || INBOX[after.platform].none) return;
  const created = await ensureInboxPoll(after, now);
  // A reconnect (a new grant) does not wait out the backoff the old grant's refusals earned.
  const reconnected = !!change.old && after.connection_id !== change.old.connection_id;
  if (!created && reconnected) await clearInboxPollBackoff(after.org_id, after.id, now);
}

/** The parts of a delivery that gained a platform id in this change: root, thread items, first comment. */
export function newPostRefs(before: PostRecord | undefined, after: PostRecord | undefined): PostRef[] {
  if (!after) return [];
  const refs: PostRef[] = [];
  for (const d of Object.values(after.deliveries ?? {})) {
    const was = before?.deliveries?.[d.channel_id];
    const pairs: Array<[string | null | undefined, string | null | undefined]> = [
      [d.external_id, was?.external_id],
      ...(d.thread ?? []).map((p, i): [string | null, string | null | undefined] => [
        p.external_id,
        was?.thread?.[i]?.external_id,
      ]),
      [d.first_comment?.external_id, was?.first_comment?.external_id],
    ];
    for (const [id, old] of pairs)
      if (id && id !== old)
        refs.push({ orgId: after.org_id, channelId: d.channel_id, externalId: id, postId: after.id });
  }
  return refs;
}

/** How long before the part's write a comment on it may say it was made (the platform's clock against ours). */
const CLOCK_SKEW_MS = 10 * 60_000;

/**
 * A comment polled between the part's publish and its ref (this relay's write a moment later) was
 * stored without its post_id: each channel's items of that window are given it now.
 */
async function linkEarlyItems(refs: readonly PostRef[], timeMs: number): Promise<void> {
  const byChannel = new Map<string, { orgId: string; postOf: Map<string, string> }>();
  for (const r of refs) {
    const key = `${r.orgId}|${r.channelId}`;
    const entry = byChannel.get(key) ?? { orgId: r.orgId, postOf: new Map() };
    entry.postOf.set(r.externalId, r.postId);
    byChannel.set(key, entry);
  }
  await Promise.all(
    [...byChannel].map(([key, e]) =>
      linkInboxItemsToPosts(e.orgId, key.slice(key.indexOf('|') + 1), e.postOf, timeMs - CLOCK_SKEW_MS),
    ),
  );
}

/** An item's creation (never its later changes) is its one `inbox.received`, the id derived from the change. */
export function inboxEvents(change: Change<InboxItemRecord>) {
  if (change.old || !change.new) return [];
  return [event(change, 'inbox.received', change.new.org_id, { item: toInboxItem(change.new) })];
}

/** The inbox's share of one change of the stream: by entity, the three above. */
export async function relayInboxChange(change: TableChange, outbox: Outbox): Promise<void> {
  const base = { eventId: change.eventId, timeMs: change.timeMs };
  if (change.entity === 'channel')
    await relayChannelInbox(
      { ...base, old: change.old as ChannelRecord | undefined, new: change.new as ChannelRecord | undefined },
      new Date(),
    );
  else if (change.entity === 'post') {
    const refs = newPostRefs(change.old as PostRecord | undefined, change.new as PostRecord | undefined);
    if (refs.length) {
      await putPostRefs(refs, new Date());
      await linkEarlyItems(refs, change.timeMs);
    }
  } else if (change.entity === 'inbox_item')
    outbox.events.push(
      ...inboxEvents({
        ...base,
        old: change.old as InboxItemRecord | undefined,
        new: change.new as InboxItemRecord | undefined,
      }),
    );
}
