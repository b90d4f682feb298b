import { GetCommand, UpdateCommand, type UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import {
  conditionFailureItem,
  type Item,
  isConditionFailure,
  type Key,
  TABLE_NAME,
  updateIf,
} from '#adapters/table';
import type { ChannelRecord } from '#core/accounts';
import {
  compaction,
  countedLimits,
  decide,
  laterPause,
  liveFrom,
  PACE_ITEM_LIFETIME_MS,
  type PaceDecision,
  type PaceLimit,
  type PaceScope,
  type Pause,
  pauseAfter,
  type RateLimitRefusal,
  secondsUntil,
  type WindowCounts,
} from '#core/pacing';
import type { Platform } from '#core/platforms';
import { ddb } from '#shared/clients';
import { logger } from '#shared/logger';

// Where pacing lives, so every delivery worker sees it (many Lambda containers on AWS, one process
// locally), and what it costs (core/pacing.ts decides; docs/api/posts.md, "Pacing and rate limits"):
//
//   channel pause     `pace_until` / `pace_reason` on the channel item, which the worker reads
//                     anyway (getChannelWithCredentials): checking it costs nothing; written only
//                     after the platform refused the account (one UpdateItem per 429).
//   app pause         `PACEAPP#<platform>` / `PACE`: `pause_until`, written only after the platform
//                     refused the app; read at most once per container per platform every
//                     APP_PAUSE_CACHE_MS (an eventually consistent GetItem), or checked inside the
//                     slot write for a platform whose app limit is counted (YouTube).
//   counters          one item per scope with a counted limit — `PACE#<org>#<channel>` / `PACE` or
//                     the app item — holding, per limit, `<id>_<bucket>` counts, their total
//                     `<id>_t` and oldest bucket `<id>_o`. Taking a slot is one conditional
//                     UpdateItem (1 WRU: the item stays under 1 KB); when a bucket has aged out, the
//                     refused write returns the item (ALL_OLD) and a second write drops the old
//                     buckets and takes the slot, conditioned on what it read. Only the counted
//                     limits (Instagram, YouTube, Mastodon media) write; every other platform's
//                     delivery costs no pacing write at all.

/** How long a container trusts the app pause it read: a pause another container records is obeyed within this. */
export const APP_PAUSE_CACHE_MS = 5_000;

const appPauses = new Map<Platform, { pause: Pause | null; readAt: number }>();
/** Reads under way: a burst that finds the cache cold reads once, not once per delivery. */
const reading = new Map<Platform, Promise<Pause | null>>();

/** Forgets the cached app pauses (tests). */
export function clearPacingCache(): void {
  appPauses.clear();
  reading.clear();
}

export interface PaceRequest {
  orgId: string;
  /** The channel as the worker read it (its `pace_until` is the channel's pause). */
  channel: Pick<ChannelRecord, 'id' | 'platform' | 'pace_until' | 'pace_reason'>;
  /** Media items of the variant (the cost of a per-media limit). */
  media: number;
}

/**
 * Whether one delivery may be sent now. Call it right before the connector publishes (after a
 * recovering delivery's reconcile found nothing): a `go` has taken the delivery's slot in every
 * counted window, so call it once per send. `go: false` says until when and why; nothing was
 * written, and the delivery waits without spending an attempt (core/pacing.ts deferredDelivery).
 */
export async function paceDelivery(req: PaceRequest, now: Date = new Date()): Promise<PaceDecision> {
  const { platform } = req.channel;
  const channelPause = req.channel.pace_until
    ? { until: req.channel.pace_until, reason: req.channel.pace_reason ?? `${platform} rate limit` }
    : null;
  const paused = decide({ platform, channelPause, media: 0 }, now);
  if (!paused.go) return paused;

  const forApp = countedLimits(platform, 'app', req.media);
  if (!forApp.length) {
    const appPause = await cachedAppPause(platform, now);
    const d = decide({ platform, appPause, media: 0 }, now);
    if (!d.go) return d;
  }
  const forChannel = countedLimits(platform, 'channel', req.media);
  if (forChannel.length) {
    const d = await takeSlots({
      scope: 'channel',
      key: keys.paceChannel(req.orgId, req.channel.id),
      platform,
      media: req.media,
      now,
    });
    if (!d.go) return d;
  }
  // A platform counted for both scopes would keep the channel's slot when the app has none
  // (counted one too many: the safe side). None is today.
  if (forApp.length)
    return takeSlots({ scope: 'app', key: keys.paceApp(platform), platform, media: req.media, now });
  return { go: true };
}

/**
 * After a failed attempt: a rate_limited refusal pauses its scope (the channel, or the whole
 * platform app when the connector said so) until the time the platform named, or the platform's
 * default. Returns the pause — pass `retryAfterSeconds` as the failed attempt's retry hint so it
 * comes back when the pause ends — or null for any other failure (nothing written).
 */
export async function recordRateLimit(
  req: { orgId: string; channel: Pick<ChannelRecord, 'id' | 'platform'>; refusal: RateLimitRefusal },
  now: Date = new Date(),
): Promise<{ scope: PaceScope; until: Date; reason: string; retryAfterSeconds: number } | null> {
  const { platform } = req.channel;
  const found = pauseAfter(platform, req.refusal, now);
  if (!found) return null;
  const { scope, pause } = found;
  if (scope === 'channel') await pauseChannel(req.orgId, req.channel.id, pause);
  else await pauseApp(platform, pause, now);
  logger.warn('platform rate limit: scope paused', {
    platform,
    scope,
    channel_id: req.channel.id,
    until: pause.until,
  });
  return {
    scope,
    until: new Date(pause.until),
    reason: pause.reason,
    retryAfterSeconds: secondsUntil(pause.until, now),
  };
}

/**
 * The pause in force on the channel or its platform app now (null: none), for readers that take no
 * slot (the inbox poller): the channel's own pause costs nothing, the app's is the cached read.
 */
export async function pauseInForce(
  channel: Pick<ChannelRecord, 'platform' | 'pace_until' | 'pace_reason'>,
  now: Date = new Date(),
): Promise<Pause | null> {
  const own = channel.pace_until
    ? { until: channel.pace_until, reason: channel.pace_reason ?? `${channel.platform} rate limit` }
    : null;
  return laterPause(own, await cachedAppPause(channel.platform, now), now);
}

// ---- pauses -------------------------------------------------------------------------------------

/** Extends the channel's pause (a shorter one never replaces a longer one). */
async function pauseChannel(orgId: string, channelId: string, pause: Pause): Promise<void> {
  await updateIf({
    Key: keys.channel(orgId, channelId),
    UpdateExpression: 'SET #pu = :u, #pr = :r',
    ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(#pu) OR #pu < :u)',
    ExpressionAttributeNames: { '#pu': 'pace_until', '#pr': 'pace_reason' },
    ExpressionAttributeValues: { ':u': pause.until, ':r': pause.reason },
  });
}

async function pauseApp(platform: Platform, pause: Pause, now: Date): Promise<void> {
  await updateIf({
    Key: keys.paceApp(platform),
    UpdateExpression: 'SET #pu = :u, #pr = :r, #e = :e, #ttl = :ttl',
    ConditionExpression: 'attribute_not_exists(#pu) OR #pu < :u',
    ExpressionAttributeNames: { '#pu': 'pause_until', '#pr': 'pause_reason', '#e': 'entity', '#ttl': 'ttl' },
    ExpressionAttributeValues: {
      ':u': pause.until,
      ':r': pause.reason,
      ':e': 'pace',
      ':ttl': expiry(Math.max(now.getTime(), Date.parse(pause.until))),
    },
  });
  const cached = appPauses.get(platform);
  appPauses.set(platform, { pause: laterPause(cached?.pause, pause, now), readAt: now.getTime() });
}

/** The platform app's pause as read at most APP_PAUSE_CACHE_MS ago (null: none in force). */
async function cachedAppPause(platform: Platform, now: Date): Promise<Pause | null> {
  const cached = appPauses.get(platform);
  if (cached && now.getTime() - cached.readAt < APP_PAUSE_CACHE_MS && now.getTime() >= cached.readAt)
    return laterPause(cached.pause, null, now);
  let read = reading.get(platform);
  if (!read) {
    read = (async () => {
      try {
        const res = await ddb.send(
          new GetCommand({
            TableName: TABLE_NAME,
            Key: keys.paceApp(platform),
            ProjectionExpression: '#pu, #pr',
            ExpressionAttributeNames: { '#pu': 'pause_until', '#pr': 'pause_reason' },
          }),
        );
        const pause = pauseOf(res.Item);
        appPauses.set(platform, { pause, readAt: now.getTime() });
        return pause;
      } finally {
        reading.delete(platform);
      }
    })();
    reading.set(platform, read);
  }
  return laterPause(await read, null, now);
}

function pauseOf(item: Item | undefined): Pause | null {
  if (!item || typeof item.pause_until !== 'string') return null;
  return { until: item.pause_until, reason: String(item.pause_reason ?? 'rate limited') };
}

// ---- counted windows ----------------------------------------------------------------------------

/**
 * Takes the delivery's slot in every counted window of one scope: one conditional UpdateItem when
 * the windows have room and no bucket has aged out; otherwise the refused write's ALL_OLD item
 * decides (wait, or drop the aged buckets and take the slot in a second write conditioned on what
 * was read). Concurrent takers at a bucket's turn retry a few times at most.
 */
async function takeSlots(args: {
  scope: PaceScope;
  key: Key;
  platform: Platform;
  media: number;
  now: Date;
}): Promise<PaceDecision> {
  const { scope, key, platform, media, now } = args;
  const limits = countedLimits(platform, scope, media);
  const withPause = scope === 'app';
  let seen: Item | undefined;
  for (let round = 0; round < 6; round++) {
    let input: Omit<UpdateCommandInput, 'TableName'>;
    if (seen === undefined) input = firstTake(key, limits, withPause, now);
    else {
      const counts = countsOf(seen, limits);
      const pause = withPause ? pauseOf(seen) : null;
      if (withPause) appPauses.set(platform, { pause, readAt: now.getTime() });
      const d = decide({ platform, media, counts: { [scope]: counts }, appPause: pause }, now);
      if (!d.go) return d;
      input = informedTake(key, limits, counts, withPause, now);
    }
    try {
      await ddb.send(
        new UpdateCommand({
          ...input,
          TableName: TABLE_NAME,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { go: true };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      seen = conditionFailureItem(err) ?? {};
    }
  }
  throw new Error(`pacing: the ${platform} ${scope} counters kept changing; try again`);
}

type Taken = Array<{ limit: PaceLimit; cost: number }>;

/** ADD the cost to the current bucket and the total, while the total (aged buckets included) leaves room. */
function firstTake(
  key: Key,
  limits: Taken,
  withPause: boolean,
  now: Date,
): Omit<UpdateCommandInput, 'TableName'> {
  const x = expression(withPause, now);
  const adds: string[] = [];
  const sets: string[] = [];
  for (const [i, { limit, cost }] of limits.entries()) {
    const c = compaction(limit, undefined, cost, now);
    const [t, o, b] = x.names(i, limit, c.current);
    x.values[`:c${i}`] = cost;
    x.values[`:max${i}`] = limit.limit - cost;
    x.values[`:from${i}`] = liveFrom(limit.window, c.current);
    x.values[`:cur${i}`] = c.current;
    adds.push(`${t} :c${i}`, `${b} :c${i}`);
    sets.push(`${o} = if_not_exists(${o}, :cur${i})`);
    x.conditions.push(`(attribute_not_exists(${t}) OR ${t} <= :max${i})`);
    x.conditions.push(`(attribute_not_exists(${o}) OR ${o} >= :from${i})`);
  }
  return x.input(key, `ADD ${adds.join(', ')} SET ${[...sets, ...x.sets].join(', ')}`);
}

/** With the item read: drop the aged buckets (each as read) and take the slot, while the live total leaves room. */
function informedTake(
  key: Key,
  limits: Taken,
  counts: Record<string, WindowCounts>,
  withPause: boolean,
  now: Date,
): Omit<UpdateCommandInput, 'TableName'> {
  const x = expression(withPause, now);
  const adds: string[] = [];
  const sets: string[] = [];
  const removes: string[] = [];
  x.values[':zero'] = 0;
  for (const [i, { limit, cost }] of limits.entries()) {
    const c = compaction(limit, counts[limit.id], cost, now);
    const [t, o, b] = x.names(i, limit, c.current);
    x.values[`:c${i}`] = cost;
    x.values[`:d${i}`] = cost - c.expiredSum;
    x.values[`:o${i}`] = c.oldest;
    x.values[`:bound${i}`] = c.bound;
    adds.push(`${b} :c${i}`);
    sets.push(`${t} = if_not_exists(${t}, :zero) + :d${i}`, `${o} = :o${i}`);
    x.conditions.push(`(attribute_not_exists(${t}) OR ${t} <= :bound${i})`);
    for (const [j, [bucket, n]] of c.expired.entries()) {
      const name = `#x${i}_${j}`;
      x.attrNames[name] = `${limit.id}_${bucket}`;
      x.values[`:xv${i}_${j}`] = n;
      removes.push(name);
      x.conditions.push(`${name} = :xv${i}_${j}`);
    }
  }
  const update = `ADD ${adds.join(', ')} SET ${[...sets, ...x.sets].join(', ')}${
    removes.length ? ` REMOVE ${removes.join(', ')}` : ''
  }`;
  return x.input(key, update);
}

/** The parts every take shares: the item's entity and TTL, and the app's pause condition. */
function expression(withPause: boolean, now: Date) {
  const attrNames: Record<string, string> = { '#e': 'entity', '#ttl': 'ttl' };
  const values: Record<string, unknown> = { ':e': 'pace', ':ttl': expiry(now.getTime()) };
  const conditions: string[] = [];
  if (withPause) {
    attrNames['#pu'] = 'pause_until';
    values[':now'] = now.toISOString();
    conditions.push('(attribute_not_exists(#pu) OR #pu <= :now)');
  }
  return {
    attrNames,
    values,
    conditions,
    sets: ['#e = :e', '#ttl = :ttl'],
    /** The placeholders of limit `i`'s total, oldest bucket and current bucket. */
    names(i: number, limit: PaceLimit, current: number): [string, string, string] {
      attrNames[`#t${i}`] = `${limit.id}_t`;
      attrNames[`#o${i}`] = `${limit.id}_o`;
      attrNames[`#b${i}`] = `${limit.id}_${current}`;
      return [`#t${i}`, `#o${i}`, `#b${i}`];
    },
    input(key: Key, update: string): Omit<UpdateCommandInput, 'TableName'> {
      return {
        Key: key,
        UpdateExpression: update,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: attrNames,
        ExpressionAttributeValues: values,
      };
    },
  };
}

/** The stored windows of `limits`, from an item's `<id>_t`, `<id>_o` and `<id>_<bucket>` attributes. */
function countsOf(item: Item, limits: Taken): Record<string, WindowCounts> {
  const out: Record<string, WindowCounts> = {};
  for (const { limit } of limits) {
    const buckets = new Map<number, number>();
    const prefix = `${limit.id}_`;
    for (const [k, v] of Object.entries(item)) {
      if (!k.startsWith(prefix)) continue;
      const rest = k.slice(prefix.length);
      if (/^\d+$/.test(rest)) buckets.set(Number(rest), Number(v));
    }
    const oldest = item[`${prefix}o`];
    out[limit.id] = {
      total: Number(item[`${prefix}t`] ?? 0),
      oldest: typeof oldest === 'number' ? oldest : null,
      buckets,
    };
  }
  return out;
}

/** The TTL (epoch seconds) of a pacing item written at `from`. */
function expiry(from: number): number {
  return Math.ceil((from + PACE_ITEM_LIFETIME_MS) / 1000);
}
