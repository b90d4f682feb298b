import { createHash } from 'node:crypto';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import type { Engagement } from '#adapters/platforms/types';
import { batchGet, conditionFailureItem, isConditionFailure, TABLE_NAME } from '#adapters/table';
import { ddb } from '#shared/clients';
import { logger } from '#shared/logger';

// Analytics storage (docs/architecture/data-model.md):
// - `ORG#<org>` / `STATS`: lifetime counters kept from the table stream — deliveries_total,
//   deliveries_published, deliveries_failed, one `eng_<platform>_<metric>` per platform and metric
//   (flat attributes: ADD cannot create nested map paths), and the string set synced_platforms.
// - `ORG#<org>` / `STATS#DAY#<YYYY-MM-DD>`: posts published / failed that UTC day (TTL 40 days).
// - On both, one `hw_<shard>` per stream shard that counted into the item lately: the position of
//   the last record of that shard counted there, and its time (see applyOrderedStats).
// - `ORG#<org>` / `STATSEEN#<hash>`: one stream change already counted, for changes that arrive
//   without their shard (see applyStats; TTL 3 days, longer than the stream's 24 h retention).
// Post counts by status are not stored: GSI1 (`ORG#<org>#POSTS#<status>`) is counted on read.

export interface StatsDelta {
  deliveries: { total: number; published: number; failed: number };
  /** Per platform: what to add to each engagement total. */
  engagement: Record<string, Partial<Engagement>>;
  /** Platforms that now have synced engagement (a set: adding one twice is harmless). */
  syncedPlatforms: string[];
  /** Posts that reached published / failed on `date` (UTC day). */
  day: { date: string; published: number; failed: number } | null;
}

export interface OrgStats {
  deliveries: { total: number; published: number; failed: number };
  /** Per platform engagement totals. */
  engagement: Record<string, Partial<Engagement>>;
  syncedPlatforms: string[];
}

export interface DayStats {
  published: number;
  failed: number;
}

const ENGAGEMENT_ATTR = /^eng_([a-z]+)_([a-z]+)$/;
const engagementAttr = (platform: string, metric: string) => `eng_${platform}_${metric}`;

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

function toOrgStats(item: Record<string, unknown> | null): OrgStats {
  const engagement: Record<string, Partial<Engagement>> = {};
  const raw = item ?? {};
  for (const [attr, value] of Object.entries(raw)) {
    const m = ENGAGEMENT_ATTR.exec(attr);
    if (!m?.[1] || !m[2]) continue;
    engagement[m[1]] = { ...engagement[m[1]], [m[2]]: num(value) };
  }
  const synced = raw.synced_platforms;
  return {
    deliveries: {
      total: num(raw.deliveries_total),
      published: num(raw.deliveries_published),
      failed: num(raw.deliveries_failed),
    },
    engagement,
    syncedPlatforms: synced instanceof Set ? [...synced].map(String) : [],
  };
}

/** The org counters and the given days' counters, in one BatchGetItem. */
export async function readStats(
  orgId: string,
  days: string[],
): Promise<{ stats: OrgStats; days: Map<string, DayStats> }> {
  const [stats, ...found] = await batchGet([
    keys.orgStats(orgId),
    ...days.map((d) => keys.dayStats(orgId, d)),
  ]);
  const byDay = new Map<string, DayStats>();
  days.forEach((day, i) => {
    const item = found[i];
    if (item) byDay.set(day, { published: num(item.published), failed: num(item.failed) });
  });
  return { stats: toOrgStats(stats ?? null), days: byDay };
}

const MARKER_TTL_SECONDS = 3 * 86_400;
const DAY_TTL_SECONDS = 40 * 86_400;

/** What one change adds to one counter item: numbers to add, string sets to merge. */
type Adds = Map<string, number | Set<string>>;

/** A counter item, and what every write of it sets besides the counters. */
interface Counters {
  key: { pk: string; sk: string };
  sets: Record<string, unknown>;
}

const orgCounters = (orgId: string): Counters => ({ key: keys.orgStats(orgId), sets: { entity: 'stats' } });

const dayCounters = (orgId: string, date: string): Counters => ({
  key: keys.dayStats(orgId, date),
  sets: {
    entity: 'stats_day',
    ttl: Math.floor(Date.parse(`${date}T00:00:00Z`) / 1000) + DAY_TTL_SECONDS,
  },
});

function orgAdds(delta: StatsDelta): Adds {
  const adds: Adds = new Map();
  const add = (attr: string, n: number | undefined) => {
    if (n) adds.set(attr, n);
  };
  add('deliveries_total', delta.deliveries.total);
  add('deliveries_published', delta.deliveries.published);
  add('deliveries_failed', delta.deliveries.failed);
  for (const [platform, metrics] of Object.entries(delta.engagement)) {
    for (const [metric, value] of Object.entries(metrics)) add(engagementAttr(platform, metric), value);
  }
  if (delta.syncedPlatforms.length) adds.set('synced_platforms', new Set(delta.syncedPlatforms));
  return adds;
}

function dayAdds(day: NonNullable<StatsDelta['day']>): Adds {
  const adds: Adds = new Map();
  if (day.published) adds.set('published', day.published);
  if (day.failed) adds.set('failed', day.failed);
  return adds;
}

/** `SET` the fields and `ADD` the counters, with placeholders for every name and value. */
function counterUpdate(sets: Record<string, unknown>, adds: Adds) {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const setParts = Object.entries(sets).map(([attr, value], i) => {
    names[`#s${i}`] = attr;
    values[`:s${i}`] = value;
    return `#s${i} = :s${i}`;
  });
  const addParts = [...adds]
    .filter(([, value]) => value !== 0)
    .map(([attr, value], i) => {
      names[`#a${i}`] = attr;
      values[`:a${i}`] = value;
      return `#a${i} :a${i}`;
    });
  const expression = [
    setParts.length ? `SET ${setParts.join(', ')}` : '',
    addParts.length ? `ADD ${addParts.join(', ')}` : '',
  ];
  return {
    UpdateExpression: expression.filter(Boolean).join(' '),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

// ---- counting in stream order (one write per counter item and batch) -----------------------------

/** A change's delta at its place in its shard: sequence numbers grow along a shard. */
export interface OrderedDelta {
  sequence: string;
  /** When the change was written (the stream record's creation time). */
  timeMs: number;
  delta: StatsDelta;
}

/** A counter item that could not be written: the earliest record it still has to count. */
export interface Uncounted {
  sequence: string;
  error: unknown;
}

/**
 * How long a shard's mark is kept after the last record it counted: longer than any record can
 * come back (the stream keeps records 24 h, and the relay's mapping hands over none older).
 */
export const MARK_KEEP_MS = 25 * 3_600_000;

const MARK_PREFIX = 'hw_';

/** The attribute holding a shard's mark (a digest: shard ids are long, and an item is billed by size). */
export const markAttr = (shardId: string) =>
  `${MARK_PREFIX}${createHash('sha256').update(shardId).digest('base64url').slice(0, 10)}`;

/**
 * A sequence number as a string that sorts like the number (DynamoDB compares strings byte by
 * byte; sequence numbers have 21 to 40 digits): the digit count in two digits, then the digits.
 */
export function position(sequence: string): string {
  if (!/^\d{1,99}$/.test(sequence)) throw new Error(`not a stream sequence number: ${sequence}`);
  const digits = sequence.replace(/^0+(?=\d)/, '');
  return `${String(digits.length).padStart(2, '0')}${digits}`;
}

/** A mark: the last record's position, a space, its time in epoch seconds. */
const markOf = (sequence: string, timeMs: number) => `${position(sequence)} ${Math.floor(timeMs / 1000)}`;

function readMark(value: unknown): { sequence: bigint; timeMs: number } | null {
  if (typeof value !== 'string') return null;
  const [at, seconds] = value.split(' ');
  if (!at || !seconds) return null;
  return { sequence: BigInt(at.slice(2)), timeMs: Number(seconds) * 1000 };
}

function sum(entries: Array<{ adds: Adds }>): Adds {
  const total: Adds = new Map();
  for (const { adds } of entries) {
    for (const [attr, value] of adds) {
      const had = total.get(attr);
      if (typeof value === 'number') total.set(attr, (typeof had === 'number' ? had : 0) + value);
      else total.set(attr, new Set([...(had instanceof Set ? had : []), ...value]));
    }
  }
  return total;
}

/**
 * Adds the records of one shard to one counter item, each record once, in one UpdateItem. The
 * item keeps a mark per shard: the last record counted there. Records at or before it were
 * counted (a shard's records arrive in order, and a batch is retried from its earliest failed
 * record), so the write holds only if the mark is before the batch's first record; else the
 * refused write returns the item, and the records after its mark are written, on the condition
 * that the mark is still the one read. An applied write whose answer was lost (and that the SDK
 * retries) is recognised the same way: its mark is there, nothing is added twice.
 */
async function countInOrder(
  target: Counters,
  shardId: string,
  entries: Array<{ sequence: string; timeMs: number; adds: Adds }>,
  nowMs: number,
): Promise<void> {
  const attr = markAttr(shardId);
  let seen: string | null | undefined; // undefined: not read yet; null: no mark
  for (;;) {
    const after = seen === undefined || seen === null ? null : readMark(seen);
    const pending = entries.filter((e) => !after || BigInt(e.sequence) > after.sequence);
    if (!pending.length) return;
    const first = pending.reduce((a, b) => (BigInt(b.sequence) < BigInt(a.sequence) ? b : a));
    const last = pending.reduce((a, b) => (BigInt(b.sequence) > BigInt(a.sequence) ? b : a));
    const update = counterUpdate(
      { ...target.sets, [attr]: markOf(last.sequence, last.timeMs) },
      sum(pending),
    );
    update.ExpressionAttributeNames['#hw'] = attr;
    const condition =
      seen === undefined
        ? 'attribute_not_exists(#hw) OR #hw < :first'
        : seen === null
          ? 'attribute_not_exists(#hw)'
          : '#hw = :seen';
    if (seen === undefined) update.ExpressionAttributeValues[':first'] = position(first.sequence);
    else if (seen !== null) update.ExpressionAttributeValues[':seen'] = seen;
    try {
      const res = await ddb.send(
        new UpdateCommand({
          TableName: TABLE_NAME,
          Key: target.key,
          ...update,
          ConditionExpression: condition,
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      await dropStaleMarks(target, attr, res.Attributes ?? {}, nowMs);
      return;
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      const mark = conditionFailureItem(err)?.[attr];
      seen = typeof mark === 'string' ? mark : null;
    }
  }
}

/**
 * Removes the marks of shards that counted nothing here for longer than MARK_KEEP_MS (shards close
 * and new ones open every few hours), each only if it is still the mark read, so the item stays
 * small: DynamoDB bills a write by the item's size in whole KB. Best effort: a mark left behind
 * costs bytes, never a count.
 */
async function dropStaleMarks(target: Counters, own: string, item: Record<string, unknown>, nowMs: number) {
  const stale = Object.entries(item).filter(([attr, value]) => {
    if (!attr.startsWith(MARK_PREFIX) || attr === own) return false;
    const mark = readMark(value);
    return mark !== null && mark.timeMs < nowMs - MARK_KEEP_MS;
  });
  if (!stale.length) return;
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  stale.forEach(([attr, value], i) => {
    names[`#m${i}`] = attr;
    values[`:m${i}`] = value;
  });
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: target.key,
        UpdateExpression: `REMOVE ${stale.map((_, i) => `#m${i}`).join(', ')}`,
        ConditionExpression: stale.map((_, i) => `#m${i} = :m${i}`).join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
  } catch (err) {
    logger.warn('stale stats marks not removed', { error: err as Error, key: target.key });
  }
}

/**
 * Adds the deltas of one organization's changes from one stream shard (a batch's records, in any
 * order) to its counters, each change exactly once however often the shard hands it over: one
 * UpdateItem per counter item (the org's, and one per UTC day with a post outcome), each guarded
 * by the shard's mark on that item (countInOrder). No transaction and no item per change. The
 * items are written independently; for each that failed, the earliest record it has still to
 * count is returned, for the stream to resume from.
 */
export async function applyOrderedStats(
  orgId: string,
  shardId: string,
  changes: readonly OrderedDelta[],
  nowMs = Date.now(),
): Promise<Uncounted[]> {
  const targets = new Map<string, { counters: Counters; entries: Array<OrderedDelta & { adds: Adds }> }>();
  const enter = (counters: Counters, change: OrderedDelta, adds: Adds) => {
    if (!adds.size) return;
    const id = counters.key.sk;
    const target = targets.get(id) ?? { counters, entries: [] };
    target.entries.push({ ...change, adds });
    targets.set(id, target);
  };
  for (const change of changes) {
    enter(orgCounters(orgId), change, orgAdds(change.delta));
    const day = change.delta.day;
    if (day) enter(dayCounters(orgId, day.date), change, dayAdds(day));
  }
  const results = await Promise.allSettled(
    [...targets.values()].map((t) => countInOrder(t.counters, shardId, t.entries, nowMs)),
  );
  return [...targets.values()].flatMap((t, i) => {
    const r = results[i];
    if (!r || r.status === 'fulfilled') return [];
    const earliest = t.entries.reduce((a, b) => (BigInt(b.sequence) < BigInt(a.sequence) ? b : a));
    return [{ sequence: earliest.sequence, error: r.reason }];
  });
}

// ---- counting with a marker per change (changes without their shard) -----------------------------

function transactUpdate(counters: Counters, adds: Adds) {
  return { Update: { TableName: TABLE_NAME, Key: counters.key, ...counterUpdate(counters.sets, adds) } };
}

const reasonsOf = (err: unknown) =>
  err instanceof TransactionCanceledException ? (err.CancellationReasons ?? []).map((r) => r.Code) : null;

/**
 * Adds `delta` to the org's counters exactly once per `changeHash`: one TransactWriteItems puts the
 * marker (only if absent) and applies every ADD, so either all of a change is counted or none of
 * it. Returns false when the marker was already there: a stream retry of a change already counted.
 * Concurrent transactions on the same STATS item (two shards of one org) are retried here. The
 * relay counts this way only a batch that does not name its shard (applyOrderedStats needs it).
 */
export async function applyStats(
  orgId: string,
  changeHash: string,
  delta: StatsDelta,
  changeTimeMs: number,
): Promise<boolean> {
  const org = orgAdds(delta);
  const day = delta.day ? dayAdds(delta.day) : new Map();
  const updates = [
    org.size ? transactUpdate(orgCounters(orgId), org) : null,
    delta.day && day.size ? transactUpdate(dayCounters(orgId, delta.day.date), day) : null,
  ].filter((u): u is NonNullable<typeof u> => u !== null);
  if (!updates.length) return false;
  const marker = {
    Put: {
      TableName: TABLE_NAME,
      Item: {
        ...keys.statsMarker(orgId, changeHash),
        entity: 'stats_marker',
        ttl: Math.floor(changeTimeMs / 1000) + MARKER_TTL_SECONDS,
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
  for (let attempt = 0; ; attempt++) {
    try {
      await ddb.send(new TransactWriteCommand({ TransactItems: [marker, ...updates] }));
      return true;
    } catch (err) {
      const reasons = reasonsOf(err);
      if (reasons?.[0] === 'ConditionalCheckFailed') return false;
      if (!reasons?.includes('TransactionConflict') || attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, Math.random() * 25 * 2 ** attempt));
    }
  }
}
