import { getPost } from '#adapters/posts';
import { enqueueDeliveries, sendDelayed } from '#adapters/queues';
import { type DeliveryMessage, type DispatchMessage, MAX_DELAY_SECONDS } from '#core/messages';

// The dispatcher: the second half of the scheduler (the sweeper is schedule-sweeper.ts).

/**
 * Dispatch: at a post's scheduled time, one delivery message per channel it has not published to
 * yet, naming the round it starts and the time it is for. It writes nothing: the first delivery
 * worker to claim starts the post (scheduled → publishing) in its claim, so a post costs no write
 * between "scheduled" and its first claim. A post rescheduled (to another time), deleted or
 * started meanwhile gets nothing (`stale`); its messages would find nothing to claim anyway. SQS
 * delays have one-second resolution: the last fraction is waited here, and a message that arrives
 * more than a second early (a chained delay) is sent on again.
 */
export async function dispatch(
  msg: DispatchMessage,
  clock: () => Date = () => new Date(),
): Promise<'started' | 'stale' | 'deferred'> {
  const at = msg.scheduled_at;
  const wait = Date.parse(at) - clock().getTime();
  if (wait > 1000) {
    await sendDelayed('schedule', msg, Math.min(MAX_DELAY_SECONDS, wait / 1000));
    return 'deferred';
  }
  const post = await getPost(msg.org_id, msg.post_id);
  if (!post || post.status !== 'scheduled' || post.scheduled_at !== at) return 'stale';
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const round = post.round + 1;
  const messages: DeliveryMessage[] = post.variants
    .filter((v) => post.deliveries[v.channel_id]?.stage !== 'published')
    .map((v) => ({ org_id: post.org_id, post_id: post.id, channel_id: v.channel_id, round, start: at }));
  await enqueueDeliveries(messages);
  return 'started';
}
