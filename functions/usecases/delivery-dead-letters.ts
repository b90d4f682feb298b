import { getChannel } from '#adapters/channels';
import { mutatePost } from '#adapters/posts';
import { isDone, withDelivery, withUnknownOutcome } from '#core/delivery';
import type { DeliveryMessage } from '#core/messages';
import { deliveryFailed } from '#shared/metrics';

/**
 * A delivery message that failed processing again and again (a crash, not a platform answer) lands
 * in the DLQ; it must not be silently lost. Primary course: mark that delivery failed (system), so
 * the post ends failed, the failure is visible on getPost, and `delivery.failed` is emitted; the
 * write that marks it also counts it (DeliveryFailed, category system), once.
 */
export async function deadLetter(msg: DeliveryMessage, now: Date = new Date()): Promise<boolean> {
  const res = await mutatePost(msg.org_id, msg.post_id, (post) => {
    const d = post.deliveries[msg.channel_id];
    if (!d || d.round !== msg.round || isDone(d) || d.stage === 'failed') return null;
    const error = 'The delivery could not be processed and was moved to the dead-letter queue.';
    return withDelivery(
      post,
      {
        ...d,
        stage: 'failed',
        error: d.unresolved_since ? withUnknownOutcome(error) : error,
        error_category: 'system',
        lease_until: undefined,
        claim_id: undefined,
        updated_at: now.toISOString(),
      },
      now,
    );
  });
  const marked = Boolean(res && res.after !== res.before);
  if (res && marked) {
    // Only for the metric's platform: a failed read must not send the message back (the delivery
    // is marked already, and would never be counted).
    const channel = await getChannel(msg.org_id, msg.channel_id).catch(() => null);
    const d = res.after.deliveries[msg.channel_id];
    deliveryFailed(
      {
        orgId: msg.org_id,
        postId: msg.post_id,
        channelId: msg.channel_id,
        platform: channel?.platform ?? 'unknown',
        attempt: d?.attempts,
      },
      'system',
      d?.error ?? 'dead-lettered',
    );
  }
  return marked;
}
