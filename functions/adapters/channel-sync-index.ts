import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { keys, parseWorkEntry } from '#adapters/keys';
import { advanceThrough, pages, TABLE_NAME, updateIf } from '#adapters/table';
import { utcDaysBetween } from '#core/utc-days';
import { ddb } from '#shared/clients';

// The channel-sync index (gsi2 `CHSYNC#<day>`, sort key `<time>#<org>#<id>`): channels at their
// next_sync_at, sessions holding a grant at their expiry. The finder reads it oldest first and
// remembers in one cursor item the last entry it sent, so a run reads only what fell due since,
// and where the cursor was at times past: an entry still there long after the cursor passed it
// (its message lost, or dead-lettered) is moved to the present, in front of the cursor, and sent
// again.

export interface SyncEntry {
  /** The table key of the item the entry belongs to (a channel or a connection session). */
  pk: string;
  sk: string;
  orgId: string;
  id: string;
  /** Its time in the index. */
  at: string;
  /** Its sort key in the index (what the cursor holds). */
  position: string;
}

function entryOf(item: Record<string, unknown>): SyncEntry | undefined {
  const e = parseWorkEntry(item.gsi2sk);
  return e
    ? {
        pk: String(item.pk),
        sk: String(item.sk),
        orgId: e.orgId,
        id: e.id,
        at: e.at,
        position: String(item.gsi2sk),
      }
    : undefined;
}

/** The highest sort key of an entry at `time` or before. */
export const positionAt = (time: Date): string => `${time.toISOString()}#~`;

/**
 * The entries after `after` (exclusive; null: from `sinceMs`'s day on) up to `until` (a position),
 * oldest first, in pages of at most `pageSize`. Stop iterating to stop reading.
 */
export async function* syncEntriesAfter(args: {
  after: string | null;
  until: string;
  sinceMs: number;
  pageSize: number;
}): AsyncGenerator<SyncEntry[]> {
  const { after, until } = args;
  const afterMs = after ? Date.parse(after.slice(0, 24)) : Number.NaN;
  const fromMs = Number.isFinite(afterMs) ? Math.max(afterMs, args.sinceMs) : args.sinceMs;
  for (const day of utcDaysBetween(fromMs, Date.parse(until.slice(0, 24)))) {
    const bounded = after?.startsWith(day) ?? false;
    const input = bounded
      ? {
          KeyConditionExpression: 'gsi2pk = :b AND gsi2sk BETWEEN :after AND :until',
          ExpressionAttributeValues: {
            ':b': keys.channelSyncBucket(day).gsi2pk,
            ':after': after,
            ':until': until,
          },
        }
      : {
          KeyConditionExpression: 'gsi2pk = :b AND gsi2sk <= :until',
          ExpressionAttributeValues: { ':b': keys.channelSyncBucket(day).gsi2pk, ':until': until },
        };
    for await (const page of pages({
      IndexName: 'gsi2',
      ScanIndexForward: true,
      Limit: args.pageSize,
      ...input,
    })) {
      const entries = (page.Items ?? [])
        .map(entryOf)
        .filter((e): e is SyncEntry => e !== undefined && e.position !== after);
      if (entries.length) yield entries;
    }
  }
}

/**
 * Moves an entry to `at` (the item keeps its own next_sync_at or expiry): only if it is still
 * where it was read (a sync, reconnect or disconnect meanwhile wins). False otherwise.
 */
export function moveSyncEntry(entry: SyncEntry, at: string): Promise<boolean> {
  const to = keys.channelSync(at, entry.orgId, entry.id);
  return updateIf({
    Key: { pk: entry.pk, sk: entry.sk },
    UpdateExpression: 'SET gsi2pk = :pk, gsi2sk = :sk',
    ConditionExpression: 'gsi2sk = :was',
    ExpressionAttributeValues: { ':pk': to.gsi2pk, ':sk': to.gsi2sk, ':was': entry.position },
  });
}

export interface SyncCursor {
  /** The position of the last entry sent; null before the first run. */
  through: string | null;
  /** Where the cursor was at times past ([ms since the epoch, position]), oldest first. */
  marks: Array<[number, string]>;
}

export async function readSyncCursor(): Promise<SyncCursor> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.channelSyncCursor(), ConsistentRead: true }),
  );
  const through = res.Item?.through;
  const marks = Array.isArray(res.Item?.marks) ? (res.Item.marks as Array<[number, string]>) : [];
  return { through: typeof through === 'string' ? through : null, marks };
}

/** Moves the cursor forward to `position` (never back: a slower finder may finish later). */
export async function advanceSyncCursor(position: string): Promise<void> {
  await advanceThrough(keys.channelSyncCursor(), 'channel_sync_cursor', position);
}

/** Keeps where the cursor was when (a lost update only makes a later resend later). */
export async function saveSyncMarks(marks: Array<[number, string]>): Promise<void> {
  await updateIf({
    Key: keys.channelSyncCursor(),
    UpdateExpression: 'SET marks = :m, entity = :e',
    ExpressionAttributeValues: { ':m': marks, ':e': 'channel_sync_cursor' },
  });
}
