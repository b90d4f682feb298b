import { getInboxItem, replaceReply } from '#adapters/inbox-replies';
import { replyDeadLettered } from '#core/inbox-replies';
import type { InboxReplyMessage } from '#core/messages';

/** Writes before giving up on an item that keeps changing under it (other replies, status). */
const WRITES = 12;

/**
 * A reply whose messages failed processing again and again (a crash, not a platform answer) lands
 * in the DLQ: marked `failed` (system), so the item says so, rather than `queued` forever.
 */
export async function replyDeadLetter(msg: InboxReplyMessage, now: Date = new Date()): Promise<boolean> {
  let item = await getInboxItem(msg.org_id, msg.item_id);
  for (let i = 0; i < WRITES && item; i++) {
    const index = (item.replies ?? []).findIndex((r) => r.id === msg.reply_id);
    const r = item.replies[index];
    const next = r && replyDeadLettered(r);
    if (!r || !next) return false;
    const res = await replaceReply(item, index, next, now);
    if ('written' in res) return true;
    item = res.current;
  }
  return false;
}
