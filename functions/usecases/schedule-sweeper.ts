import { openReservations, refundCredits } from '#adapters/ai-credits';
import { raiseDataModelMark } from '#adapters/data-model';
import { dueInBucket, loadPosts, mutatePost } from '#adapters/posts';
import { enqueueDeliveries, sendDispatches } from '#adapters/queues';
import { dispatchedThrough, markDispatched } from '#adapters/sweep-cursor';
import { mapLimit } from '#core/concurrency';
import { DATA_MODEL_VERSION } from '#core/data-model';
import { settledPost } from '#core/delivery';
import { ID_PREFIXES } from '#core/ids';
import type { DeliveryMessage, DispatchMessage } from '#core/messages';
import { type PostRecord, watchEntry } from '#core/posts';
import { LOOKAHEAD_SECONDS, REDISPATCH_SECONDS, WATCHDOG_SECONDS } from '#core/timing';
import { logger } from '#shared/logger';

// The scheduler. The sweeper runs every minute in AWS (every second locally: same code) and reads
// the due-work index (GSI2, minute buckets). What falls due within the lookahead and past the
// dispatch cursor goes onto the dispatch queue with an SQS delay for the sub-minute part — a range
// read of just the new entries, and no write per post: each entry is dispatched once because the
// cursor moves past it. Posts (re)scheduled inside the window already swept are dispatched by the
// stream relay (relay-post-changes.ts). The dispatcher starts the post at its time. Rescheduling
// or deleting a post makes its dispatch stale: the dispatcher only acts on a post still scheduled
// for the very time the message names. The index also holds the open credit reservations of AI
// generations (adapters/ai-credits.ts) at their due time: never dispatched, and refunded by the
// watchdog when one is still open there (its function died before settling it).

/** How far back the watchdog reads the index: entries older than this are out of its sight. */
const LOOKBACK_MINUTES = 30;

/** How far back a sweeper that was stopped catches up (older work is left to an operator). */
const CATCH_UP_MINUTES = 14 * 24 * 60;

/** Buckets read (and posts loaded) at once: bounded, so a burst of buckets cannot flood the table. */
const CONCURRENCY = 16;

const minuteOf = (ms: number) => Math.floor(ms / 60_000);
const bucketsBetween = (fromMs: number, toMs: number) =>
  Array.from(
    { length: Math.max(0, minuteOf(toMs) - minuteOf(fromMs) + 1) },
    (_, i) => new Date((minuteOf(fromMs) + i) * 60_000),
  );

/** Entries of the due-work index in (after, until], every bucket read in parallel. */
async function entriesBetween(after: number, until: number) {
  const window = { after: new Date(after), until: new Date(until) };
  return (await mapLimit(bucketsBetween(after, until), CONCURRENCY, (b) => dueInBucket(b, window))).flat();
}

const isReservation = (e: { postId: string }) => e.postId.startsWith(`${ID_PREFIXES.generation}_`);

/**
 * One sweep. Primary course: every entry due after the cursor and up to now + lookahead → a delayed
 * dispatch message, then the cursor moves to now + lookahead. Then the watchdog: entries that have
 * sat in the index for WATCHDOG_SECONDS or more (at most 30 minutes back) are read — a scheduled
 * post still waiting there lost its dispatch (a message that went to the DLQ) and is dispatched
 * again, at most every REDISPATCH_SECONDS; a publishing post whose watchdog time passed gets the
 * delivery messages that were lost (queued/retrying past due) or abandoned (sending with an expired
 * lease) sent again. Duplicates are harmless downstream. The watchdog runs after the primary course
 * and handles each post on its own: one post it cannot write (a throttled partition, a busy post)
 * is logged and counted in `watchFailed`, and holds back neither the other posts nor anyone's
 * dispatches. `watch: false` skips it (the handler runs it at most every WATCHDOG_EVERY_SECONDS).
 */
export async function sweep(
  now: Date,
  opts: { watch: boolean } = { watch: true },
): Promise<{ dispatched: number; redriven: number; watchFailed: number; refunded: number }> {
  const t = now.getTime();
  const horizon = t + LOOKAHEAD_SECONDS * 1000;
  const cursor = await dispatchedThrough();
  const from = Math.max(t - CATCH_UP_MINUTES * 60_000, cursor ?? t - LOOKBACK_MINUTES * 60_000);

  const dispatches: Array<{ body: DispatchMessage; delaySeconds: number }> = [];
  if (from < horizon) {
    for (const e of await entriesBetween(from, horizon)) {
      if (isReservation(e)) continue;
      dispatches.push({
        body: { org_id: e.orgId, post_id: e.postId, scheduled_at: e.at },
        delaySeconds: Math.max(0, (Date.parse(e.at) - t) / 1000),
      });
    }
    if (dispatches.length) await sendDispatches(dispatches);
    // Only a sweep whose dispatches went out moves the cursor: a failed one is read again next time.
    await markDispatched(horizon, t);
  }
  // The newest code marks the table's data model (once per container; older releases then refuse
  // it): the sweeper runs within a minute of any deploy.
  if (await raiseDataModelMark(now))
    logger.info('data model mark raised', { data_model: DATA_MODEL_VERSION });
  if (!opts.watch) return { dispatched: dispatches.length, redriven: 0, watchFailed: 0, refunded: 0 };
  const watched = await watchdog(now).catch((err: Error) => {
    logger.error('watchdog failed', { error: err });
    return { dispatches: [], redrive: [], failed: 1, refunded: 0 };
  });
  if (watched.dispatches.length) await sendDispatches(watched.dispatches);
  if (watched.redrive.length) await enqueueDeliveries(watched.redrive);
  return {
    dispatched: dispatches.length + watched.dispatches.length,
    redriven: watched.redrive.length,
    watchFailed: watched.failed,
    refunded: watched.refunded,
  };
}

/** Entries at least WATCHDOG_SECONDS old (and at most 30 minutes): posts that should have moved on. */
async function watchdog(now: Date) {
  const t = now.getTime();
  const all = await entriesBetween(t - LOOKBACK_MINUTES * 60_000, t - WATCHDOG_SECONDS * 1000);
  const entries = all.filter((e) => !isReservation(e));
  const reservations = all.filter(isReservation);
  const dispatches: Array<{ body: DispatchMessage; delaySeconds: number }> = [];
  const redrive: DeliveryMessage[] = [];
  let failed = 0;
  let refunded = 0;
  if (!all.length) return { dispatches, redrive, failed, refunded };
  const [posts, open] = await Promise.all([
    entries.length ? loadPosts(entries.map((e) => ({ orgId: e.orgId, postId: e.postId }))) : [],
    reservations.length ? openReservations(reservations.map((e) => ({ orgId: e.orgId, id: e.postId }))) : [],
  ]);
  await mapLimit(open, CONCURRENCY, async (r) => {
    try {
      if (await refundCredits(r.org_id, r.period, r.id, r.credits)) refunded += 1;
    } catch (err) {
      // Its entry stays: refunded on the next run.
      failed += 1;
      logger.error('watchdog: reservation not refunded', {
        org_id: r.org_id,
        generation_id: r.id,
        error: err as Error,
      });
    }
  });
  await mapLimit(posts, CONCURRENCY, async (seen) => {
    if (!needsWatch(seen, t)) return;
    try {
      const found = await watchPost(seen, now);
      if (found?.dispatch) dispatches.push(found.dispatch);
      if (found) redrive.push(...found.lost);
    } catch (err) {
      // This post only: it is looked at again on the next run (its index entry stays).
      failed += 1;
      logger.error('watchdog: post not handled', {
        org_id: seen.org_id,
        post_id: seen.id,
        error: err as Error,
      });
    }
  });
  return { dispatches, redrive, failed, refunded };
}

/** One watched post: re-dispatched, or its lost deliveries found and its watchdog time moved on. */
async function watchPost(seen: PostRecord, now: Date) {
  const t = now.getTime();
  let dispatch: { body: DispatchMessage; delaySeconds: number } | undefined;
  let lost: DeliveryMessage[] = [];
  const res = await mutatePost(seen.org_id, seen.id, (post) => {
    dispatch = undefined;
    lost = [];
    if (!needsWatch(post, t)) return null;
    if (post.status === 'scheduled' && post.scheduled_at) {
      dispatch = {
        body: { org_id: post.org_id, post_id: post.id, scheduled_at: post.scheduled_at },
        delaySeconds: 0,
      };
      return { ...post, dispatched: { for: post.scheduled_at, at: now.toISOString() } };
    }
    // Every delivery final but the post still publishing: the worker that wrote the last one
    // died before settling the post (delivery-worker.ts, settle). Settled here.
    const settled = settledPost(post, now);
    if (settled && settled.status !== 'publishing') return settled;
    for (const d of Object.values(post.deliveries)) {
      if (d.round !== post.round) continue;
      const stale =
        (d.stage === 'queued' || d.stage === 'retrying') &&
        Date.parse(d.next_attempt_at ?? d.updated_at) < t - 60_000;
      const abandoned = d.stage === 'sending' && (!d.lease_until || Date.parse(d.lease_until) < t);
      if (stale || abandoned)
        lost.push({ org_id: post.org_id, post_id: post.id, channel_id: d.channel_id, round: post.round });
    }
    const watchAt = new Date(t + WATCHDOG_SECONDS * 1000).toISOString();
    return { ...post, watch_at: watchAt, watch_entry: watchEntry(post, watchAt) };
  });
  if (!res || res.after === res.before) return undefined;
  return { dispatch, lost };
}

/**
 * A scheduled post past due by WATCHDOG_SECONDS whose dispatch was not re-sent lately, or a
 * publishing post whose watchdog time passed.
 */
function needsWatch(post: PostRecord, t: number): boolean {
  if (post.status === 'scheduled' && post.scheduled_at) {
    if (Date.parse(post.scheduled_at) > t - WATCHDOG_SECONDS * 1000) return false;
    const recent =
      post.dispatched?.for === post.scheduled_at &&
      Date.parse(post.dispatched.at) > t - REDISPATCH_SECONDS * 1000;
    return !recent;
  }
  return post.status === 'publishing' && Boolean(post.watch_at) && Date.parse(post.watch_at as string) <= t;
}
