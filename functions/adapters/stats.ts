import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import type { Engagement } from '#adapters/platforms/types';
import { batchGet, TABLE_NAME } from '#adapters/table';
import { ddb } from '#shared/clients';

// Analytics storage (README, "Data model"):
// - `ORG#<org>` / `STATS`: lifetime counters kept from the table stream — deliveries_total,
//   deliveries_published, deliveries_failed, one `eng_<platform>_<metric>` per platform and metric
//   (flat attributes: ADD cannot create nested map paths), and the string set synced_platforms.
// - `ORG#<org>` / `STATS#DAY#<YYYY-MM-DD>`: posts published / failed that UTC day (TTL 40 days).
// - `ORG#<org>` / `STATSEEN#<hash>`: one stream change already counted (TTL 3 days, longer than
//   the stream's 24 h retention, so every retry of a record still finds it).
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

type UpdateParts = {
  adds: string[];
  sets: string[];
  names: Record<string, string>;
  values: Record<string, unknown>;
};

function addTo(parts: UpdateParts, attr: string, value: number | Set<string>): void {
  if (typeof value === 'number' && value === 0) return;
  const i = parts.adds.length;
  parts.names[`#a${i}`] = attr;
  parts.values[`:a${i}`] = value;
  parts.adds.push(`#a${i} :a${i}`);
}

function updateItem(key: { pk: string; sk: string }, parts: UpdateParts) {
  const clauses = [parts.sets.length ? `SET ${parts.sets.join(', ')}` : '', `ADD ${parts.adds.join(', ')}`];
  return {
    Update: {
      TableName: TABLE_NAME,
      Key: key,
      UpdateExpression: clauses.filter(Boolean).join(' '),
      ExpressionAttributeNames: parts.names,
      ExpressionAttributeValues: parts.values,
    },
  };
}

function statsUpdate(orgId: string, delta: StatsDelta) {
  const parts: UpdateParts = {
    adds: [],
    sets: ['#entity = :entity'],
    names: { '#entity': 'entity' },
    values: { ':entity': 'stats' },
  };
  addTo(parts, 'deliveries_total', delta.deliveries.total);
  addTo(parts, 'deliveries_published', delta.deliveries.published);
  addTo(parts, 'deliveries_failed', delta.deliveries.failed);
  for (const [platform, metrics] of Object.entries(delta.engagement)) {
    for (const [metric, value] of Object.entries(metrics))
      addTo(parts, engagementAttr(platform, metric), value);
  }
  if (delta.syncedPlatforms.length) addTo(parts, 'synced_platforms', new Set(delta.syncedPlatforms));
  return parts.adds.length ? updateItem(keys.orgStats(orgId), parts) : null;
}

function dayUpdate(orgId: string, day: NonNullable<StatsDelta['day']>) {
  const parts: UpdateParts = {
    adds: [],
    sets: ['#entity = :entity', '#ttl = :ttl'],
    names: { '#entity': 'entity', '#ttl': 'ttl' },
    values: {
      ':entity': 'stats_day',
      ':ttl': Math.floor(Date.parse(`${day.date}T00:00:00Z`) / 1000) + DAY_TTL_SECONDS,
    },
  };
  addTo(parts, 'published', day.published);
  addTo(parts, 'failed', day.failed);
  return parts.adds.length ? updateItem(keys.dayStats(orgId, day.date), parts) : null;
}

const reasonsOf = (err: unknown) =>
  err instanceof TransactionCanceledException ? (err.CancellationReasons ?? []).map((r) => r.Code) : null;

/**
 * Adds `delta` to the org's counters exactly once per `changeHash`: one TransactWriteItems puts the
 * marker (only if absent) and applies every ADD, so either all of a change is counted or none of
 * it. Returns false when the marker was already there: a stream retry of a change already counted.
 * Concurrent transactions on the same STATS item (two shards of one org) are retried here.
 */
export async function applyStats(
  orgId: string,
  changeHash: string,
  delta: StatsDelta,
  changeTimeMs: number,
): Promise<boolean> {
  const updates = [statsUpdate(orgId, delta), delta.day ? dayUpdate(orgId, delta.day) : null].filter(
    (u): u is NonNullable<typeof u> => u !== null,
  );
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
