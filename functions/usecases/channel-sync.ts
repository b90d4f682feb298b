import { takeAppRefusals } from '#adapters/app-refusals';
import {
  advanceSyncCursor,
  moveSyncEntry,
  positionAt,
  readSyncCursor,
  type SyncEntry,
  saveSyncMarks,
  syncEntriesAfter,
} from '#adapters/channel-sync-index';
import { sendChannelSyncs } from '#adapters/queues';
import { mapLimit } from '#core/concurrency';
import type { ChannelSyncMessage } from '#core/messages';
import { platformAppRefused } from '#shared/metrics';

// The channel sync's finder: the part that scales the sync with the number of channels (the look at
// each channel is the worker's, usecases/channel-sync-worker.ts). Every 5 minutes in AWS (every 2 s
// in the local stack) it reads the sync index oldest first from where its last run stopped and
// sends one message per due entry to the channel-sync queue, which a bounded number of worker
// batches consume. Oldest first is nearest expiry first: a token's entry sits 30 minutes (or half
// its life) before it expires. When more is due than the workers get through, what is left waits
// in the index, still in that order, ahead of anything due later. Nothing is lost: the cursor
// moves only past entries that were sent, and an entry still in the index long after it was sent
// is sent again. Nothing is done twice: a worker looks only at a channel that is still due (a
// duplicate finds it synced), and a renewal takes the credentials' lease at the version it read,
// so two workers on one channel spend its refresh token once.

/** Days of the sync index a run reads back: a channel overdue by up to a week is still found. */
const LOOKBACK_DAYS = 7;
/**
 * Entries one run sends at most: about what the workers (lib/operations.ts: 8 batches of 10 at
 * once, a second or less per channel) get through before the next run. More than that stays in
 * the index, in order, so the queue never holds more than one run's work.
 */
export const MAX_SENT_PER_RUN = 20_000;
/** An entry the cursor passed this long ago and still in the index lost its message: sent again. */
export const RESEND_AFTER_MS = 15 * 60_000;
/** How often the cursor's position is noted for that (so a resend comes at most this much later). */
const MARK_EVERY_MS = 60_000;
/** Entries read (and sent, and moved) per step; the cursor moves after each step. */
const PAGE = 500;
const PARALLEL = 8;

export interface FindResult {
  /** Entries sent to the workers this run. */
  sent: number;
  /** Entries found still waiting long after they were sent, moved to be sent again. */
  resent: number;
  /** Platforms reported as refusing the operator's app (one alarm line each). */
  alarms: number;
}

const messageOf = (e: SyncEntry): ChannelSyncMessage => ({ org_id: e.orgId, id: e.id, at: e.at });

/**
 * The finder. Primary course: report what the workers counted as refused for the operator's app
 * since the last run (one alarm line per platform); move entries sent long ago and still waiting in
 * front of the cursor; send the entries due since the cursor, oldest first, page by page, moving
 * the cursor past each page once it is sent. Stops at `limit` (MAX_SENT_PER_RUN) or at
 * `deadlineMs`: the rest is the next run's.
 */
export async function findDueChannels(
  now: Date,
  opts: { deadlineMs?: number; limit?: number } = {},
): Promise<FindResult> {
  const limit = opts.limit ?? MAX_SENT_PER_RUN;
  const timeUp = () => opts.deadlineMs !== undefined && Date.now() >= opts.deadlineMs;
  const [refused, { through: cursor, marks }] = await Promise.all([takeAppRefusals(), readSyncCursor()]);
  for (const { platform, channels, error } of refused) platformAppRefused(platform, channels, error);

  const sinceMs = now.getTime() - LOOKBACK_DAYS * 86_400_000;
  // Where the cursor was RESEND_AFTER_MS ago: an entry at or before it, still in the index, was
  // sent that long ago and its message lost or dead-lettered. Moved to now, it is in front of the
  // cursor and sent below.
  const passed = marks.filter(([at]) => at <= now.getTime() - RESEND_AFTER_MS).at(-1);
  let resent = 0;
  if (passed) {
    for await (const page of syncEntriesAfter({ after: null, until: passed[1], sinceMs, pageSize: PAGE })) {
      const moved = await mapLimit(page, PARALLEL, (e) => moveSyncEntry(e, now.toISOString()));
      resent += moved.filter(Boolean).length;
      if (resent >= limit || timeUp()) break;
    }
  }

  let sent = 0;
  let position = cursor;
  if (!timeUp()) {
    const pages = syncEntriesAfter({ after: cursor, until: positionAt(now), sinceMs, pageSize: PAGE });
    for await (const page of pages) {
      const batch = page.slice(0, limit - sent);
      const chunks: SyncEntry[][] = [];
      for (let i = 0; i < batch.length; i += 50) chunks.push(batch.slice(i, i + 50));
      await mapLimit(chunks, PARALLEL, (chunk) => sendChannelSyncs(chunk.map(messageOf)));
      position = (batch.at(-1) as SyncEntry).position;
      await advanceSyncCursor(position);
      sent += batch.length;
      if (sent >= limit || timeUp()) break;
    }
  }
  // Every entry up to `position` has been sent by now: noted (at most once a minute), it is the
  // resend bound of the run RESEND_AFTER_MS from now.
  const last = marks.at(-1);
  if (position && (!last || now.getTime() - last[0] >= MARK_EVERY_MS)) {
    const kept = marks.filter(([at]) => at > now.getTime() - RESEND_AFTER_MS);
    await saveSyncMarks([...(passed ? [passed] : []), ...kept, [now.getTime(), position]]);
  }
  return { sent, resent, alarms: refused.length };
}
