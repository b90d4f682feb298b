import type { DeliveryMessage } from '#adapters/delivery-queue';
import { enqueueDeliveries } from '#adapters/delivery-queue';
import { type PostRecord, pendingChannels } from '#core/posts';

/**
 * Primary course: a post item changed in the table (DynamoDB Streams). When the change starts a new
 * publish round, one delivery message per pending channel goes onto the delivery queue.
 * The table write is the only step on the request path, so a crash after it cannot strand a post:
 * the stream record stays until this relay has enqueued it (at least once).
 */
export function deliveriesToEnqueue(
  oldPost: PostRecord | undefined,
  newPost: PostRecord | undefined,
): DeliveryMessage[] {
  if (newPost?.status !== 'publishing') return [];
  if (oldPost && oldPost.status === 'publishing' && oldPost.round === newPost.round) return [];
  return pendingChannels(newPost).map((channel_id) => ({
    org_id: newPost.org_id,
    post_id: newPost.id,
    channel_id,
    round: newPost.round,
  }));
}

export async function relayPostChange(
  oldPost: PostRecord | undefined,
  newPost: PostRecord | undefined,
): Promise<number> {
  const messages = deliveriesToEnqueue(oldPost, newPost);
  if (messages.length) await enqueueDeliveries(messages);
  return messages.length;
}
