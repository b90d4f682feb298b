import type { ChannelSyncMessage } from '#core/messages';
import { findDueChannels } from '#usecases/channel-sync';
import { type SyncResult, syncDueEntry } from '#usecases/channel-sync-worker';
import type { FakeSqs } from '../faults/support/sqs.ts';

// The channel sync as the stack runs it, in one call for the use-case tests: the finder, the
// workers on every message it sent (each batch's messages at once, as the Lambda handler runs
// them), and the finder's next run, which reports what the workers counted for the alarm line.

export const CHANNEL_SYNC_QUEUE = process.env.CHANNEL_SYNC_QUEUE_URL as string;

const none = (): Record<SyncResult, number> => ({
  synced: 0,
  refreshed: 0,
  retrying: 0,
  reauth_required: 0,
  operator: 0,
  selection_expired: 0,
  skipped: 0,
});

/** One round of the sync at `now`: how the workers' looks ended, by result. */
export async function syncDueChannels(sqs: FakeSqs, now = new Date()): Promise<Record<SyncResult, number>> {
  const counts = none();
  await findDueChannels(now);
  for (let batch = sqs.receive(CHANNEL_SYNC_QUEUE); batch.length; batch = sqs.receive(CHANNEL_SYNC_QUEUE)) {
    const results = await Promise.all(
      batch.map((m) => syncDueEntry(JSON.parse(m.body) as ChannelSyncMessage, now)),
    );
    for (const r of results) counts[r]++;
    sqs.delete(batch.map((m) => m.id));
  }
  await findDueChannels(now);
  return counts;
}
