import { dueInBucket, mutatePost } from '#adapters/posts';
import { enqueueDeliveries, sendDispatches } from '#adapters/queues';
import { markSwept, sweptThrough } from '#adapters/sweep-cursor';
import type { DeliveryMessage, DispatchMessage } from '#core/messages';
import { REDISPATCH_SECONDS, WATCHDOG_SECONDS } from '#core/timing';

// The scheduler. The sweeper runs every minute in AWS (every second locally: same code) and reads
// the due-work index (GSI2, minute buckets); what falls due within the lookahead goes onto the
// dispatch queue with an SQS delay for the sub-minute part, and the dispatcher moves the post to
// publishing at its time. Rescheduling or deleting a post makes its dispatch stale: the dispatcher
// only acts on a post still scheduled for the very time the message names.

export const LOOKAHEAD_SECONDS = 120;

const LOOKBACK_MINUTES = 30;

/** How far back a sweeper that was stopped catches up (older work is left to an operator). */
const CATCH_UP_MINUTES = 14 * 24 * 60;

const CONCURRENCY = 16;

async function inParallel<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

/**
 * One sweep. Primary course: for every due-work entry from the last 30 minutes (or, after the
 * sweeper stopped, from where it got to, at most 14 days back) up to now + lookahead — a scheduled post not
 * yet dispatched for its time → mark it dispatched and send a delayed dispatch message; a publishing
 * post whose watchdog time passed → re-send delivery messages that were lost (queued/retrying past
 * due) or abandoned (sending with an expired lease). Duplicates are harmless downstream.
 */
export async function sweep(now: Date): Promise<{ dispatched: number; redriven: number }> {
  const minute = Math.floor(now.getTime() / 60_000);
  // Normally the last 30 minutes; after a stop, from where the last sweep got to.
  const swept = await sweptThrough();
  const first = Math.max(minute - CATCH_UP_MINUTES, Math.min(minute - LOOKBACK_MINUTES, swept ?? minute));
  const last = Math.floor((now.getTime() + LOOKAHEAD_SECONDS * 1000) / 60_000);
  const buckets = Array.from({ length: last - first + 1 }, (_, i) => new Date((first + i) * 60_000));
  const found: Array<Awaited<ReturnType<typeof dueInBucket>>> = [];
  await inParallel(buckets, async (b) => {
    found.push(await dueInBucket(b));
  });
  const entries = found.flat().filter((e) => Date.parse(e.at) <= now.getTime() + LOOKAHEAD_SECONDS * 1000);

  const dispatches: Array<{ body: DispatchMessage; delaySeconds: number }> = [];
  const redrive: DeliveryMessage[] = [];
  await inParallel(entries, async (e) => {
    // Collected per attempt and kept only once the write went through (a conflict re-runs the change).
    let dispatch: (typeof dispatches)[number] | undefined;
    let lost: DeliveryMessage[] = [];
    const res = await mutatePost(e.orgId, e.postId, (post) => {
      dispatch = undefined;
      lost = [];
      // The post's own time decides, not the entry's: a dispatched post's entry sits past its time
      // (REDISPATCH_AFTER_SECONDS), and is only seen again when that dispatch was lost.
      const at = post.scheduled_at;
      if (post.status === 'scheduled' && at && Date.parse(at) <= now.getTime() + LOOKAHEAD_SECONDS * 1000) {
        const fresh =
          post.dispatched?.for === at &&
          Date.parse(post.dispatched.at) > now.getTime() - REDISPATCH_SECONDS * 1000;
        if (fresh) return null;
        dispatch = {
          body: { org_id: post.org_id, post_id: post.id, scheduled_at: at },
          delaySeconds: (Date.parse(at) - now.getTime()) / 1000,
        };
        return { ...post, dispatched: { for: at, at: now.toISOString() } };
      }
      if (post.status === 'publishing' && post.watch_at && Date.parse(post.watch_at) <= now.getTime()) {
        for (const d of Object.values(post.deliveries)) {
          if (d.round !== post.round) continue;
          const stale =
            (d.stage === 'queued' || d.stage === 'retrying') &&
            Date.parse(d.next_attempt_at ?? d.updated_at) < now.getTime() - 60_000;
          const abandoned =
            d.stage === 'sending' && (!d.lease_until || Date.parse(d.lease_until) < now.getTime());
          if (stale || abandoned)
            lost.push({
              org_id: post.org_id,
              post_id: post.id,
              channel_id: d.channel_id,
              round: post.round,
            });
        }
        return { ...post, watch_at: new Date(now.getTime() + WATCHDOG_SECONDS * 1000).toISOString() };
      }
      return null;
    });
    if (!res || res.after === res.before) return;
    if (dispatch) dispatches.push(dispatch);
    redrive.push(...lost);
  });
  if (dispatches.length) await sendDispatches(dispatches);
  if (redrive.length) await enqueueDeliveries(redrive);
  // Only a sweep that went through moves the cursor: a failed one is read again next time.
  await markSwept(minute);
  return { dispatched: dispatches.length, redriven: redrive.length };
}
