import { mutatePost } from '#adapters/posts';
import { sendDelayed } from '#adapters/queues';
import { type DispatchMessage, MAX_DELAY_SECONDS } from '#core/messages';
import { startPublishing } from '#core/posts';

// The dispatcher: the second half of the scheduler (the sweeper is schedule-sweeper.ts).

/**
 * Dispatch: the post starts publishing at its scheduled time (SQS delays have one-second
 * resolution; the last fraction is waited here). A dispatch for a time more than 15 minutes away
 * (a chained delay) is sent on again.
 */
export async function dispatch(
  msg: DispatchMessage,
  clock: () => Date = () => new Date(),
): Promise<'started' | 'stale' | 'deferred'> {
  const wait = Date.parse(msg.scheduled_at) - clock().getTime();
  if (wait > 1000) {
    await sendDelayed('schedule', msg, Math.min(MAX_DELAY_SECONDS, wait / 1000));
    return 'deferred';
  }
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const res = await mutatePost(msg.org_id, msg.post_id, (post) =>
    post.status === 'scheduled' && post.scheduled_at === msg.scheduled_at
      ? startPublishing(post, clock())
      : null,
  );
  return res && res.after !== res.before ? 'started' : 'stale';
}
