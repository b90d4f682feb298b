import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { isConditionFailure, TABLE_NAME } from '#adapters/table';
import { mapLimit } from '#core/concurrency';
import type { InboxItemRecord } from '#core/inbox';
import { ddb } from '#shared/clients';

// Inbox items (entity `inbox_item`, core/inbox.ts): one per (channel, platform id), under the
// organization, newest first by id; by status in gsi1; expiring by TTL after the retention.

const WRITE_CONCURRENCY = 8;

/** The item as stored: its keys, its status entry, its expiry. */
export function inboxItemOf(r: InboxItemRecord, ttlSeconds: number): Record<string, unknown> {
  return {
    ...keys.inboxItem(r.org_id, r.id),
    ...keys.inboxByStatus(r.org_id, r.status, r.id),
    entity: 'inbox_item',
    ...r,
    ttl: ttlSeconds,
  };
}

/**
 * Writes the items not already there (a conditional put each: an item two polls read is written
 * once, and so emits one `inbox.received` from the stream). Returns the ones this call created.
 * `ttlSeconds`: when each expires (epoch seconds), from its received_at and the retention.
 */
export async function putNewInboxItems(
  records: readonly InboxItemRecord[],
  ttlOf: (r: InboxItemRecord) => number,
): Promise<InboxItemRecord[]> {
  const created = await mapLimit([...records], WRITE_CONCURRENCY, async (r) => {
    try {
      await ddb.send(
        new PutCommand({
          TableName: TABLE_NAME,
          Item: inboxItemOf(r, ttlOf(r)),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  });
  return records.filter((_, i) => created[i]);
}
