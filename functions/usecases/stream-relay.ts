import type { DynamoDBRecord } from 'aws-lambda';
import { decodeRecord, type TableChange } from '#adapters/stream-records';
import type { ChannelRecord } from '#core/accounts';
import type { InboxItemRecord } from '#core/inbox';
import type { PostRecord } from '#core/posts';
import type { WebhookEndpointRecord } from '#core/webhooks';
import { logger } from '#shared/logger';
import { channelStatusChanged } from '#shared/metrics';
import { relayInboxChange } from '#usecases/support/relay-inbox';
import { relayInboxReplies } from '#usecases/support/relay-inbox-replies';
import { Outbox, relayChannelChange, relayPostChange } from '#usecases/support/relay-post-changes';
import { type EngagedPost, recordBatchStats } from '#usecases/support/stats';
import { startLadderOnChange } from '#usecases/support/webhook-ladder-start';

// The stream relay: each change of a post, channel or webhook endpoint becomes its deliveries,
// events and failure-ladder start; a batch's post changes together become the analytics counters. (Which entities reach it at all is the stream filter
// in the manifest, lib/operations.ts.)

async function relay(change: TableChange, outbox: Outbox): Promise<void> {
  const base = { eventId: change.eventId, timeMs: change.timeMs };
  if (change.entity === 'inbox_item')
    relayInboxReplies(
      {
        ...base,
        old: change.old as InboxItemRecord | undefined,
        new: change.new as InboxItemRecord | undefined,
      },
      outbox,
    );
  await relayInboxChange(change, outbox);
  if (change.entity === 'post') {
    await relayPostChange(
      { ...base, old: change.old as PostRecord | undefined, new: change.new as PostRecord | undefined },
      outbox,
    );
  } else if (change.entity === 'channel') {
    await relayChannelChange(
      { ...base, old: change.old as ChannelRecord | undefined, new: change.new as ChannelRecord | undefined },
      outbox,
    );
  } else if (change.entity === 'webhook_endpoint') {
    await startLadderOnChange(
      change.old as WebhookEndpointRecord | undefined,
      change.new as WebhookEndpointRecord | undefined,
    );
  }
}

/**
 * Records of one item are relayed in order; different items concurrently, and what they send goes
 * out together at the end (one SQS request per ten messages of a queue) (a batch of 100 posts
 * starting to publish must not wait on each other). The counters are kept for the whole batch at
 * once, next to it: one write per organization and counter item, exactly once per record by the
 * shard's marks (`shardId`: Lambda names it in a batch of a mapping with a tumbling window). On
 * failure the earliest failed record is reported: the stream resumes from it, and records after
 * it are relayed again (ids derived from the change, and the counters' marks, make that harmless).
 */
export async function relayStreamBatch(
  records: readonly DynamoDBRecord[],
  shardId?: string,
): Promise<{ batchItemFailures: Array<{ itemIdentifier: string }> }> {
  const changes = records.map(decodeRecord);
  const groups = new Map<string, TableChange[]>();
  for (const change of changes) groups.set(change.item, [...(groups.get(change.item) ?? []), change]);
  const failed: string[] = [];
  const posts = changes
    .filter((c) => c.entity === 'post')
    .map((c) => ({
      eventId: c.eventId,
      timeMs: c.timeMs,
      sequence: c.sequence,
      old: c.old as EngagedPost | undefined,
      new: c.new as EngagedPost | undefined,
    }));
  // The batch's messages and events are collected and sent together once every change is relayed.
  const outbox = new Outbox();
  const sends: string[] = [];
  const [, uncounted] = await Promise.all([
    Promise.all(
      [...groups.values()].map(async (list) => {
        for (const c of list) {
          try {
            const before = outbox.size;
            await relay(c, outbox);
            if (outbox.size > before) sends.push(c.sequence);
          } catch (err) {
            logger.error('relay failed', { error: err as Error, sequence: c.sequence });
            failed.push(c.sequence);
            return;
          }
        }
      }),
    ),
    recordBatchStats(posts, shardId),
  ]);
  try {
    await outbox.send();
  } catch (err) {
    // Not sent (or partly): the changes that had something to send are relayed again.
    logger.error('relay send failed', { error: err as Error });
    failed.push(...sends);
  }
  for (const u of uncounted) {
    logger.error('stats not counted', { error: u.error as Error, sequence: u.sequence });
    failed.push(u.sequence);
  }
  const first = failed.sort((a, b) => (BigInt(a || '0') < BigInt(b || '0') ? -1 : 1))[0];
  countStatusChanges(changes, first);
  return { batchItemFailures: first ? [{ itemIdentifier: first }] : [] };
}

/**
 * Every channel change whose status differs from the one before is one ChannelStatusChanged line;
 * whoever wrote it (a delivery, the channel sync, a reconnect, a disconnect), the stream sees each
 * change once. Only the records before the first failed one: the stream resumes from that one, and
 * the records from it on are counted when they are relayed again.
 */
function countStatusChanges(changes: readonly TableChange[], firstFailed: string | undefined): void {
  for (const c of changes) {
    if (c.entity !== 'channel' || (firstFailed !== undefined && !before(c.sequence, firstFailed))) continue;
    const was = c.old as ChannelRecord | undefined;
    const now = c.new as ChannelRecord | undefined;
    if (!was || !now || was.status === now.status) continue;
    channelStatusChanged({
      orgId: now.org_id,
      channelId: now.id,
      platform: now.platform,
      from: was.status,
      status: now.status,
    });
  }
}

const before = (a: string, b: string) => BigInt(a || '0') < BigInt(b || '0');
