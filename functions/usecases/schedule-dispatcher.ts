import { loadPosts } from '#adapters/posts';
import { enqueueDeliveries, QueueSendError, sendDelayed } from '#adapters/queues';
import { isDone } from '#core/delivery';
import { type DeliveryMessage, type DispatchMessage, MAX_DELAY_SECONDS } from '#core/messages';
import { type PostRecord, pendingChannels } from '#core/posts';

// The dispatcher: the second half of the scheduler (the sweeper is schedule-sweeper.ts).

export type DispatchOutcome = 'started' | 'resumed' | 'stale' | 'deferred';

/**
 * Dispatch: at a post's scheduled time, one delivery message per channel it has not published to
 * yet, naming the round it starts and the time it is for. It writes nothing: the first delivery
 * worker to claim starts the post (scheduled → publishing) in its claim, so a post costs no write
 * between "scheduled" and its first claim. A post rescheduled (to another time), deleted or
 * started meanwhile gets nothing (`stale`); its messages would find nothing to claim anyway — except
 * a post this very dispatch started, whose channels still queued are sent (`resumed`). SQS
 * delays have one-second resolution: the last fraction is waited here, and a message that arrives
 * more than a second early (a chained delay) is sent on again.
 *
 * A queue batch is dispatched together: its posts are read in one BatchGetItem (consistent) and
 * their delivery messages sent together, so a burst costs a read and a send per ten posts rather
 * than per post. An outcome per message, in order; a message whose part failed is an Error (its
 * record goes back to the queue; a dispatch repeated is harmless downstream). Only the posts with a
 * delivery message SQS did not take fail.
 */
export async function dispatchAll(
  msgs: DispatchMessage[],
  clock: () => Date = () => new Date(),
): Promise<Array<DispatchOutcome | Error>> {
  const outcomes: Array<DispatchOutcome | Error> = msgs.map(() => 'stale');
  const due: number[] = [];
  await Promise.all(
    msgs.map(async (msg, i) => {
      const wait = Date.parse(msg.scheduled_at) - clock().getTime();
      if (wait <= 1000) return void due.push(i);
      try {
        await sendDelayed('schedule', msg, Math.min(MAX_DELAY_SECONDS, wait / 1000));
        outcomes[i] = 'deferred';
      } catch (err) {
        outcomes[i] = err as Error;
      }
    }),
  );
  if (!due.length) return outcomes;
  try {
    const posts = new Map<string, PostRecord>();
    for (const p of await loadPosts(due.map((i) => ({ orgId: msgs[i]!.org_id, postId: msgs[i]!.post_id }))))
      posts.set(`${p.org_id}/${p.id}`, p);
    type Send = { i: number; at?: string; messages: DeliveryMessage[]; outcome: DispatchOutcome };
    const sends = due.flatMap((i): Send[] => {
      const msg = msgs[i] as DispatchMessage;
      const post = posts.get(`${msg.org_id}/${msg.post_id}`);
      if (post?.status === 'scheduled' && post.scheduled_at === msg.scheduled_at)
        return [
          { i, at: msg.scheduled_at, messages: deliveryMessages(post, msg.scheduled_at), outcome: 'started' },
        ];
      if (post && startedBy(post, msg)) {
        const messages = pendingChannels(post).map((channel_id) => ({
          org_id: post.org_id,
          post_id: post.id,
          channel_id,
          round: post.round,
        }));
        return messages.length ? [{ i, messages, outcome: 'resumed' }] : [];
      }
      return [];
    });
    // The last fraction of a second: the batch waits for its latest time (all are within a second).
    const latest = Math.max(...sends.map((s) => (s.at ? Date.parse(s.at) : 0)));
    const wait = latest - clock().getTime();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const owners = sends.flatMap((s) => s.messages.map(() => s.i));
    const failed = new Set<number>();
    let sendError: Error | undefined;
    try {
      await enqueueDeliveries(sends.flatMap((s) => s.messages));
    } catch (err) {
      if (!(err instanceof QueueSendError)) throw err;
      // Only the posts with a message not sent go back; each of those is dispatched again.
      sendError = err;
      for (const j of err.unsent) failed.add(owners[j] as number);
    }
    for (const s of sends) outcomes[s.i] = failed.has(s.i) ? (sendError as Error) : s.outcome;
  } catch (err) {
    for (const i of due) outcomes[i] = err as Error;
  }
  return outcomes;
}

/**
 * The post was started by this very dispatch's round (its first claim): the dispatch came back
 * because some of its messages were not sent (the call failed, or a crash), so the channels still
 * queued are sent now rather than left to the watchdog. A duplicate costs a claim that skips.
 */
function startedBy(post: PostRecord, msg: DispatchMessage): boolean {
  return (
    post.status === 'publishing' &&
    post.dispatched?.for === msg.scheduled_at &&
    post.dispatched.round === post.round
  );
}

/** A snapshot only saves the claim one read: attached only while small (messages stay small). */
const SNAPSHOT_MAX_BYTES = 16 * 1024;

function deliveryMessages(post: PostRecord, at: string): DeliveryMessage[] {
  const round = post.round + 1;
  const pending = post.variants.filter((v) => {
    const d = post.deliveries[v.channel_id];
    return !d || !isDone(d);
  });
  // One channel: its claim is the post's next write, so it is tried against this read (no read in
  // the worker). With more, their claims race to start the post: a snapshot would cost the losers
  // a failed conditional write, so they read.
  const small = Buffer.byteLength(JSON.stringify(post), 'utf8') <= SNAPSHOT_MAX_BYTES;
  const snapshot = pending.length === 1 && small ? { snapshot: post } : {};
  return pending.map((v) => ({
    org_id: post.org_id,
    post_id: post.id,
    channel_id: v.channel_id,
    round,
    start: at,
    ...snapshot,
  }));
}
