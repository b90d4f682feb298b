import type { InboxItemRecord } from '#core/inbox';
import type { InboxReplyMessage } from '#core/messages';
import type { Change, Outbox } from '#usecases/support/relay-post-changes';

/**
 * replyToInboxItem's outbox: each reply an item gained `queued` in this change gets its message
 * to the inbox reply worker. The reply is written before anything is sent, and the stream record
 * stays until this relay has handled it, so a crash after the write strands no reply; a relay
 * repeated after a failure sends the same message again, which the worker's claim makes harmless.
 * A retry's message is the worker's own (the reply was there before this change).
 */
export function repliesToSend(
  oldItem: InboxItemRecord | undefined,
  newItem: InboxItemRecord | undefined,
): InboxReplyMessage[] {
  if (!newItem) return [];
  const before = new Set((oldItem?.replies ?? []).map((r) => r.id));
  return (newItem.replies ?? [])
    .filter((r) => r.stage === 'queued' && !before.has(r.id))
    .map((r) => ({ org_id: newItem.org_id, item_id: newItem.id, reply_id: r.id }));
}

export function relayInboxReplies(change: Change<InboxItemRecord>, outbox: Outbox): number {
  const messages = repliesToSend(change.old, change.new);
  outbox.inboxReplies.push(...messages);
  return messages.length;
}
