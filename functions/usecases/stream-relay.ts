import type { DynamoDBRecord } from 'aws-lambda';
import { decodeRecord, type TableChange } from '#adapters/stream-records';
import type { ChannelRecord } from '#core/accounts';
import type { PostRecord } from '#core/posts';
import type { WebhookEndpointRecord } from '#core/webhooks';
import { logger } from '#shared/logger';
import { relayChannelChange, relayPostChange } from '#usecases/support/relay-post-changes';
import { recordStats } from '#usecases/support/stats';
import { startLadderOnChange } from '#usecases/support/webhook-ladder-start';

// The stream relay: each change of a post, channel or webhook endpoint becomes its deliveries,
// events, stats and failure-ladder start. (Which entities reach it at all is the stream filter
// in the manifest, lib/operations.ts.)

async function relay(change: TableChange): Promise<void> {
  const base = { eventId: change.eventId, timeMs: change.timeMs };
  if (change.entity === 'post') {
    const c = {
      ...base,
      old: change.old as PostRecord | undefined,
      new: change.new as PostRecord | undefined,
    };
    await Promise.all([relayPostChange(c), recordStats(c)]);
  } else if (change.entity === 'channel') {
    await relayChannelChange({
      ...base,
      old: change.old as ChannelRecord | undefined,
      new: change.new as ChannelRecord | undefined,
    });
  } else if (change.entity === 'webhook_endpoint') {
    await startLadderOnChange(
      change.old as WebhookEndpointRecord | undefined,
      change.new as WebhookEndpointRecord | undefined,
    );
  }
}

/**
 * Records of one item are relayed in order; different items concurrently (a batch of 100 posts
 * starting to publish must not wait on each other). On failure the earliest failed record is
 * reported: the stream resumes from it, and records after it are relayed again (ids derived from
 * the change make that harmless).
 */
export async function relayStreamBatch(
  records: readonly DynamoDBRecord[],
): Promise<{ batchItemFailures: Array<{ itemIdentifier: string }> }> {
  const groups = new Map<string, TableChange[]>();
  for (const change of records.map(decodeRecord))
    groups.set(change.item, [...(groups.get(change.item) ?? []), change]);
  const failed: string[] = [];
  await Promise.all(
    [...groups.values()].map(async (changes) => {
      for (const c of changes) {
        try {
          await relay(c);
        } catch (err) {
          logger.error('relay failed', { error: err as Error, sequence: c.sequence });
          failed.push(c.sequence);
          return;
        }
      }
    }),
  );
  const first = failed.sort((a, b) => (BigInt(a || '0') < BigInt(b || '0') ? -1 : 1))[0];
  return { batchItemFailures: first ? [{ itemIdentifier: first }] : [] };
}
