import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { MARK_KEEP_MS, markAttr, position } from '#adapters/stats';
import { claimDelivery, deliveryFailed, deliverySucceeded, withDelivery } from '#core/delivery';
import { type PostRecord, startPublishing } from '#core/posts';
import type { Change } from '#usecases/support/relay-post-changes';
import {
  type EngagedPost,
  type PostEngagement,
  recordBatchStats,
  recordStats,
  type StreamedChange,
  statsDelta,
} from '#usecases/support/stats';
import { condition, update } from '../../support/expressions.ts';
import { fixedId, type Item, ORG_ID, OTHER_ORG_ID, post, variant } from '../../support/fixtures.ts';

// Analytics counters kept from the table stream: deliveries per (post, channel), the per-day
// timeline and engagement totals, each change counted once however often the stream repeats it.

const ddb = mockClient(DynamoDBDocumentClient);

const CH1 = fixedId('channel', 1);
const CH2 = fixedId('channel', 2);
const T0 = new Date('2030-06-01T12:00:00.000Z');
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);
const STATS = `ORG#${ORG_ID} STATS`;
const DAY = (d: string) => `ORG#${ORG_ID} STATS#DAY#${d}`;

let seq = 0;
const change = <T>(before: T | undefined, after: T | undefined, eventId = `ev-${++seq}`): Change<T> => ({
  eventId,
  timeMs: T0.getTime(),
  old: before,
  new: after,
});

const twoChannels = (): PostRecord => post({ variants: [variant(CH1, 1), variant(CH2, 2)] });

/** A delivery of the post's current round reaches an outcome (claimed, then sent), as the worker writes it. */
function deliver(p: PostRecord, channelId: string, outcome: 'published' | 'failed', now: Date): PostRecord {
  const claim = claimDelivery(p, channelId, p.round, `claim-${channelId}`, now);
  if (claim.kind !== 'claimed') throw new Error(`cannot claim ${channelId}: ${claim.kind}`);
  const d = claim.post.deliveries[channelId];
  if (!d) throw new Error('no delivery');
  const next =
    outcome === 'published'
      ? deliverySucceeded(d, { externalId: `ext-${channelId}`, url: null }, now)
      : deliveryFailed(d, { category: 'user_content', message: 'rejected', retryable: false }, now);
  return withDelivery(claim.post, next, now);
}

/**
 * TransactWriteItems as DynamoDB runs it on the stats items: a conditional Put (attribute_not_exists)
 * and `SET … ADD …` updates, all or nothing. `items` holds the table, keyed `pk sk`.
 */
function statsTable() {
  const items = new Map<string, Item>();
  const id = (k: Record<string, unknown>) => `${String(k.pk)} ${String(k.sk)}`;
  ddb.on(TransactWriteCommand).callsFake((input: TransactWriteCommandInput) => {
    const writes = input.TransactItems ?? [];
    const reasons = writes.map((w) => {
      if (!w.Put) return { Code: 'None' };
      expect(w.Put.ConditionExpression).toBe('attribute_not_exists(pk)');
      return items.has(id(w.Put.Item ?? {})) ? { Code: 'ConditionalCheckFailed' } : { Code: 'None' };
    });
    if (reasons.some((r) => r.Code !== 'None')) {
      throw new TransactionCanceledException({
        message: 'Transaction cancelled',
        $metadata: {},
        CancellationReasons: reasons,
      });
    }
    for (const w of writes) {
      if (w.Put) items.set(id(w.Put.Item ?? {}), { ...w.Put.Item });
      if (!w.Update) continue;
      const {
        Key,
        UpdateExpression,
        ExpressionAttributeNames: names = {},
        ExpressionAttributeValues: values = {},
      } = w.Update;
      const item: Item = { ...(items.get(id(Key ?? {})) ?? { ...Key }) };
      for (const m of (UpdateExpression ?? '').matchAll(/(SET|ADD) (.*?)(?= SET | ADD |$)/g)) {
        for (const part of (m[2] ?? '').split(', ')) {
          const [n = '', v = ''] = part.split(m[1] === 'SET' ? ' = ' : ' ');
          const attr = names[n] ?? n;
          const value = values[v];
          if (m[1] === 'SET') item[attr] = value;
          else if (value instanceof Set)
            item[attr] = new Set([...((item[attr] as Set<string>) ?? []), ...value]);
          else item[attr] = Number(item[attr] ?? 0) + Number(value);
        }
      }
      items.set(id(Key ?? {}), item);
    }
    return {};
  });
  return items;
}

beforeEach(() => {
  ddb.reset();
});

describe('statsDelta', () => {
  it('counts each new (post, channel) delivery once in total when the post starts publishing', () => {
    const draft = twoChannels();
    expect(statsDelta(change(draft, startPublishing(draft, T0)))).toEqual({
      deliveries: { total: 2, published: 0, failed: 0 },
      engagement: {},
      syncedPlatforms: [],
      day: null,
    });
  });

  it('counts a delivery entering published, and the post entering published on its published_at day', () => {
    // Arrange: one channel already published, the other publishes now, late in the UTC day.
    const late = new Date('2030-06-01T23:59:00.000Z');
    const one = deliver(startPublishing(twoChannels(), T0), CH1, 'published', at(1));
    const both = deliver(one, CH2, 'published', late);

    // Act
    const delta = statsDelta(change(one, both));

    // Assert
    expect(both.status).toBe('published');
    expect(delta.deliveries).toEqual({ total: 0, published: 1, failed: 0 });
    expect(delta.day).toEqual({ date: '2030-06-01', published: 1, failed: 0 });
  });

  it('counts a delivery entering failed, and the post entering failed that day', () => {
    const one = deliver(startPublishing(twoChannels(), T0), CH1, 'published', at(1));
    const failed = deliver(one, CH2, 'failed', at(2));
    const delta = statsDelta(change(one, failed));
    expect(failed.status).toBe('failed');
    expect(delta.deliveries).toEqual({ total: 0, published: 0, failed: 1 });
    expect(delta.day).toEqual({ date: '2030-06-01', published: 0, failed: 1 });
  });

  it('takes a failed delivery back out of failed when republishing re-queues it', () => {
    // Arrange: CH1 published, CH2 failed; publishing again re-queues CH2 only.
    const failed = deliver(
      deliver(startPublishing(twoChannels(), T0), CH1, 'published', at(1)),
      CH2,
      'failed',
      at(2),
    );
    const again = startPublishing(failed, at(3));

    // Act
    const delta = statsDelta(change(failed, again));

    // Assert
    expect(again.deliveries[CH2]?.stage).toBe('queued');
    expect(delta.deliveries).toEqual({ total: 0, published: 0, failed: -1 });
    expect(delta.day).toBeNull();
  });

  it('counts nothing for progress that is not an outcome (claiming, retrying)', () => {
    const publishing = startPublishing(twoChannels(), T0);
    const claim = claimDelivery(publishing, CH1, 1, 'c', at(1));
    if (claim.kind !== 'claimed') throw new Error('not claimed');
    expect(statsDelta(change(publishing, claim.post)).deliveries).toEqual({
      total: 0,
      published: 0,
      failed: 0,
    });
  });

  it('counts nothing when a post is deleted: the counters are history', () => {
    const published = deliver(startPublishing(post(), T0), CH1, 'published', at(1));
    expect(statsDelta(change<PostRecord>(published, undefined))).toEqual({
      deliveries: { total: 0, published: 0, failed: 0 },
      engagement: {},
      syncedPlatforms: [],
      day: null,
    });
  });

  it('adds the difference between the stored engagement before and after, per platform', () => {
    // Arrange
    const e = (platform: PostEngagement['platform'], likes: number, impressions: number): PostEngagement => ({
      platform,
      impressions,
      likes,
      comments: 0,
      shares: 1,
      clicks: 0,
      synced_at: T0.toISOString(),
    });
    const base = deliver(
      deliver(startPublishing(twoChannels(), T0), CH1, 'published', at(1)),
      CH2,
      'published',
      at(1),
    );
    const before: EngagedPost = { ...base, engagement: { [CH1]: e('bluesky', 3, 100) } };
    const after: EngagedPost = {
      ...base,
      engagement: { [CH1]: e('bluesky', 5, 90), [CH2]: e('mastodon', 2, 0) },
    };

    // Act
    const delta = statsDelta(change(before, after));

    // Assert: bluesky moved by the difference (impressions may go down), mastodon counts in full.
    expect(delta.engagement).toEqual({
      bluesky: { impressions: -10, likes: 2, comments: 0, shares: 0, clicks: 0 },
      mastodon: { impressions: 0, likes: 2, comments: 0, shares: 1, clicks: 0 },
    });
    expect(delta.syncedPlatforms).toEqual(['bluesky', 'mastodon']);
    expect(delta.deliveries).toEqual({ total: 0, published: 0, failed: 0 });
  });
});

describe('recordStats (a change on its own, with a marker: batches that do not name their shard)', () => {
  it('counts a change once however often the stream delivers it (marker condition)', async () => {
    // Arrange
    const items = statsTable();
    const one = deliver(startPublishing(twoChannels(), T0), CH1, 'published', at(1));
    const both = deliver(one, CH2, 'published', at(2));
    const c = change(one, both, 'ev-dup');

    // Act: the record, then two retries of it.
    await recordStats(c);
    await recordStats(c);
    await recordStats({ ...c });

    // Assert: three transactions tried, one applied.
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(3);
    expect(items.get(STATS)).toMatchObject({ deliveries_published: 1 });
    expect(items.get(DAY('2030-06-01'))).toMatchObject({ published: 1 });
  });

  it('puts the marker, the org counters and the day counters in one transaction, each with its TTL', async () => {
    // Arrange
    statsTable();
    const failed = deliver(startPublishing(post(), T0), CH1, 'failed', at(1));

    // Act
    await recordStats(change(startPublishing(post(), T0), failed));

    // Assert
    const [call] = ddb.commandCalls(TransactWriteCommand);
    const [marker, stats, day] = call?.args[0].input.TransactItems ?? [];
    expect(marker?.Put?.Item).toMatchObject({
      pk: `ORG#${ORG_ID}`,
      sk: expect.stringMatching(/^STATSEEN#[\w-]{43}$/),
      ttl: T0.getTime() / 1000 + 3 * 86_400,
    });
    expect(marker?.Put?.ConditionExpression).toBe('attribute_not_exists(pk)');
    expect(stats?.Update?.Key).toEqual({ pk: `ORG#${ORG_ID}`, sk: 'STATS' });
    expect(day?.Update?.Key).toEqual({ pk: `ORG#${ORG_ID}`, sk: 'STATS#DAY#2030-06-01' });
    const names = day?.Update?.ExpressionAttributeNames ?? {};
    const ttl = Object.keys(names).find((n) => names[n] === 'ttl') ?? '';
    expect(day?.Update?.ExpressionAttributeValues?.[ttl.replace('#', ':')]).toBe(
      Date.parse('2030-06-01T00:00:00Z') / 1000 + 40 * 86_400,
    );
  });

  it('keeps exact counts over a whole life: fail, republish, publish (and retried records)', async () => {
    // Arrange: every write of the post, as the stream carries it.
    const items = statsTable();
    const draft = twoChannels();
    const s1 = startPublishing(draft, T0);
    const s2 = deliver(s1, CH1, 'published', at(1));
    const s3 = deliver(s2, CH2, 'failed', at(2)); // post failed
    const s4 = startPublishing(s3, at(60)); // republish: CH2 re-queued
    const s5 = deliver(s4, CH2, 'failed', at(61)); // fails again
    const s6 = startPublishing(s5, new Date('2030-06-02T08:00:00.000Z'));
    const s7 = deliver(s6, CH2, 'published', new Date('2030-06-02T08:01:00.000Z')); // post published
    const states = [undefined, draft, s1, s2, s3, s4, s5, s6, s7];
    const changes = states.slice(1).map((s, i) => change(states[i], s));

    // Act: every change, and each one delivered twice.
    for (const c of changes) {
      await recordStats(c);
      await recordStats(c);
    }

    // Assert: two (post, channel) deliveries, both ended published, none failed.
    expect(items.get(STATS)).toMatchObject({
      deliveries_total: 2,
      deliveries_published: 2,
      deliveries_failed: 0,
    });
    expect(items.get(DAY('2030-06-01'))).toMatchObject({ failed: 2 });
    expect(items.get(DAY('2030-06-01'))?.published).toBeUndefined();
    expect(items.get(DAY('2030-06-02'))).toMatchObject({ published: 1 });
  });

  it('writes nothing for a change that counts nothing', async () => {
    statsTable();
    const publishing = startPublishing(post(), T0);
    await recordStats(change(publishing, { ...publishing, version: publishing.version + 1 }));
    await recordStats(change<PostRecord>(publishing, undefined));
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
  });

  it('retries a transaction that lost a race on the STATS item (another shard of the org)', async () => {
    // Arrange
    const conflict = new TransactionCanceledException({
      message: 'Transaction cancelled',
      $metadata: {},
      CancellationReasons: [{ Code: 'None' }, { Code: 'TransactionConflict' }],
    });
    ddb.on(TransactWriteCommand).rejectsOnce(conflict).resolves({});
    const draft = twoChannels();

    // Act
    await recordStats(change(draft, startPublishing(draft, T0)));

    // Assert
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(2);
  });

  it('fails (so the stream retries the record) on any other error', async () => {
    ddb.on(TransactWriteCommand).rejects(new Error('DynamoDB unavailable'));
    const draft = twoChannels();
    await expect(recordStats(change(draft, startPublishing(draft, T0)))).rejects.toThrow(
      'DynamoDB unavailable',
    );
  });

  it('adds synced engagement to the per-platform totals and marks the platform synced', async () => {
    // Arrange
    const items = statsTable();
    const published = deliver(startPublishing(post(), T0), CH1, 'published', at(1));
    const e = (likes: number): PostEngagement => ({
      platform: 'bluesky',
      impressions: 0,
      likes,
      comments: 1,
      shares: 0,
      clicks: 0,
      synced_at: T0.toISOString(),
    });
    const first: EngagedPost = { ...published, version: 5, engagement: { [CH1]: e(3) } };
    const second: EngagedPost = { ...first, version: 6, engagement: { [CH1]: e(7) } };

    // Act
    await recordStats(change<EngagedPost>(published, first));
    await recordStats(change<EngagedPost>(first, second));

    // Assert
    expect(items.get(STATS)).toMatchObject({ eng_bluesky_likes: 7, eng_bluesky_comments: 1 });
    expect(items.get(STATS)?.synced_platforms).toEqual(new Set(['bluesky']));
  });
});

// ---- the ordered path: a batch of one shard, one write per organization and counter item --------

const SHARD = 'shardId-00000001900000000000-aaaaaaaa';
const OTHER_SHARD = 'shardId-00000001900000000000-bbbbbbbb';

/**
 * UpdateItem as DynamoDB runs it (conditions and update expressions evaluated over the items, a
 * refused condition answering ConditionalCheckFailed with the item when asked for ALL_OLD).
 * `failing` refuses writes of the given sort keys with an error, once each.
 */
function orderedTable(failing: string[] = []) {
  const items = new Map<string, Item>();
  const id = (k: Record<string, unknown>) => `${String(k.pk)} ${String(k.sk)}`;
  const refuse = [...failing];
  ddb.on(UpdateCommand).callsFake((input: UpdateCommandInput) => {
    const key = input.Key ?? {};
    const at = refuse.indexOf(String(key.sk));
    if (at >= 0) {
      refuse.splice(at, 1);
      throw new Error('DynamoDB unavailable');
    }
    const current = items.get(id(key));
    const names = input.ExpressionAttributeNames;
    const values = input.ExpressionAttributeValues;
    if (input.ConditionExpression && !condition(input.ConditionExpression, names, values)(current ?? {})) {
      throw new ConditionalCheckFailedException({
        message: 'The conditional request failed',
        $metadata: {},
        ...(input.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && current
          ? { Item: structuredClone(current) as never }
          : {}),
      });
    }
    const { next } = update({ ...current, ...key }, input.UpdateExpression ?? '', names, values);
    items.set(id(key), next);
    return input.ReturnValues === 'ALL_NEW' ? { Attributes: structuredClone(next) } : {};
  });
  return items;
}

let position_ = 0;
/** The changes as one shard carries them: sequence numbers in order. */
const streamed = <T extends PostRecord>(before: T | undefined, after: T | undefined): StreamedChange => ({
  ...change(before, after),
  sequence: String(++position_).padStart(21, '0'),
});

/** Every write of a post from draft to published on both channels (one failing first), as the stream has them. */
function life(p: PostRecord = twoChannels()): StreamedChange[] {
  const s1 = startPublishing(p, T0);
  const s2 = deliver(s1, CH1, 'published', at(1));
  const s3 = deliver(s2, CH2, 'failed', at(2)); // post failed
  const s4 = startPublishing(s3, at(60)); // republish: CH2 re-queued
  const s5 = deliver(s4, CH2, 'published', new Date('2030-06-02T08:01:00.000Z')); // post published
  const states = [undefined, p, s1, s2, s3, s4, s5];
  return states.slice(1).map((s, i) => streamed(states[i], s));
}

/** The delivery counters of an item (an attribute never written counts 0, as readStats reads it). */
const counts = (item: Item | undefined) => ({
  deliveries_total: Number(item?.deliveries_total ?? 0),
  deliveries_published: Number(item?.deliveries_published ?? 0),
  deliveries_failed: Number(item?.deliveries_failed ?? 0),
});
const LIFE_COUNTS = { deliveries_total: 2, deliveries_published: 2, deliveries_failed: 0 };

describe('recordBatchStats (a batch of one shard)', () => {
  it('writes each counter item once per batch: one UpdateItem each, no transaction, no marker items', async () => {
    // Arrange
    const items = orderedTable();

    // Act
    const failed = await recordBatchStats(life(), SHARD);

    // Assert: the org's STATS and the two days with an outcome, one write each.
    expect(failed).toEqual([]);
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
    expect(ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input.Key?.sk)).toEqual([
      'STATS',
      'STATS#DAY#2030-06-01',
      'STATS#DAY#2030-06-02',
    ]);
    expect(counts(items.get(STATS))).toEqual(LIFE_COUNTS);
    expect(items.get(DAY('2030-06-01'))).toMatchObject({ failed: 1 });
    expect(items.get(DAY('2030-06-02'))).toMatchObject({ published: 1 });
    expect([...items.keys()].some((k) => k.includes('STATSEEN#'))).toBe(false);
  });

  it('keeps the exact counts whatever the stream repeats: whole batches again, retries from any record', async () => {
    // Arrange: the life in three batches; each batch handed over again in full, then again from
    // each of its records (as after a failure reported there).
    const items = orderedTable();
    const changes = life();
    const batches = [changes.slice(0, 2), changes.slice(2, 4), changes.slice(4)];

    // Act
    for (const batch of batches) {
      await recordBatchStats(batch, SHARD);
      await recordBatchStats(batch, SHARD);
      for (let from = 1; from < batch.length; from++) await recordBatchStats(batch.slice(from), SHARD);
    }

    // Assert
    expect(counts(items.get(STATS))).toEqual(LIFE_COUNTS);
    expect(items.get(DAY('2030-06-01'))).toMatchObject({ failed: 1 });
    expect(items.get(DAY('2030-06-02'))).toMatchObject({ published: 1 });
  });

  it('counts the records after the mark when a batch overlaps what was counted (a longer batch on retry)', async () => {
    // Arrange: the first two changes counted; then a batch that starts at the second.
    const items = orderedTable();
    const changes = life();
    await recordBatchStats(changes.slice(0, 2), SHARD);

    // Act
    await recordBatchStats(changes.slice(1), SHARD);

    // Assert: refused once (the mark is past the batch's first record), then written from the mark.
    const stats = ddb.commandCalls(UpdateCommand).filter((c) => c.args[0].input.Key?.sk === 'STATS');
    expect(stats.map((c) => c.args[0].input.ConditionExpression)).toEqual([
      'attribute_not_exists(#hw) OR #hw < :first',
      'attribute_not_exists(#hw) OR #hw < :first',
      '#hw = :seen',
    ]);
    expect(counts(items.get(STATS))).toEqual(LIFE_COUNTS);
  });

  it('reports the earliest record of an item whose write failed; the retry from it counts that item alone', async () => {
    // Arrange: the day item of the failure refuses once; STATS goes through.
    const items = orderedTable(['STATS#DAY#2030-06-01']);
    const changes = life();

    // Act
    const failed = await recordBatchStats(changes, SHARD);
    const from = changes.findIndex((c) => c.sequence === failed[0]?.sequence);
    const again = await recordBatchStats(changes.slice(from), SHARD);

    // Assert: the post's failure (the fourth change) is what the day item had to count.
    expect(failed.map((f) => f.sequence)).toEqual([changes[3]?.sequence]);
    expect(again).toEqual([]);
    expect(counts(items.get(STATS))).toEqual(LIFE_COUNTS);
    expect(items.get(DAY('2030-06-01'))).toMatchObject({ failed: 1 });
    expect(items.get(DAY('2030-06-02'))).toMatchObject({ published: 1 });
  });

  it('keeps one mark per shard: records of another shard are counted whatever their sequence numbers', async () => {
    // Arrange: two posts of the org, changing on different shards (sequence numbers of different
    // shards do not compare: the second shard's are lower).
    const items = orderedTable();
    const first = life({ ...twoChannels(), id: fixedId('post', 1) });
    position_ = 0;
    const second = life({ ...twoChannels(), id: fixedId('post', 2) });

    // Act
    await recordBatchStats(first, SHARD);
    await recordBatchStats(second, OTHER_SHARD);
    await recordBatchStats(second, OTHER_SHARD);

    // Assert
    expect(counts(items.get(STATS))).toEqual({
      deliveries_total: 4,
      deliveries_published: 4,
      deliveries_failed: 0,
    });
    expect(Object.keys(items.get(STATS) ?? {}).filter((k) => k.startsWith('hw_'))).toEqual(
      expect.arrayContaining([markAttr(SHARD), markAttr(OTHER_SHARD)]),
    );
  });

  it('writes each organization of a batch apart, and a failure of one does not hold the other back', async () => {
    // Arrange
    const items = orderedTable();
    const ours = life();
    const theirs = life({ ...twoChannels(), id: fixedId('post', 9), org_id: OTHER_ORG_ID });
    ddb
      .on(UpdateCommand, { Key: { pk: `ORG#${OTHER_ORG_ID}`, sk: 'STATS' } })
      .rejectsOnce(new Error('DynamoDB unavailable'));

    // Act
    const failed = await recordBatchStats([...ours, ...theirs], SHARD);

    // Assert
    expect(failed.map((f) => f.sequence)).toEqual([theirs[1]?.sequence]);
    expect(counts(items.get(STATS))).toEqual(LIFE_COUNTS);
  });

  it('drops the marks of shards that counted nothing for longer than the stream keeps records', async () => {
    // Arrange: an old shard's mark, 26 h old, and a recent one's.
    const items = orderedTable();
    const old = markAttr('shardId-old');
    const recent = markAttr('shardId-recent');
    const seconds = (ms: number) => Math.floor(ms / 1000);
    items.set(STATS, {
      pk: `ORG#${ORG_ID}`,
      sk: 'STATS',
      deliveries_total: 5,
      [old]: `${position('7')} ${seconds(Date.now() - MARK_KEEP_MS - 3_600_000)}`,
      [recent]: `${position('9')} ${seconds(Date.now() - 3_600_000)}`,
    });

    // Act
    const draft = twoChannels();
    await recordBatchStats([streamed(draft, startPublishing(draft, T0))], SHARD);

    // Assert
    const stats = items.get(STATS) ?? {};
    expect(stats.deliveries_total).toBe(7);
    expect(stats[old]).toBeUndefined();
    expect(stats[recent]).toBeDefined();
    expect(stats[markAttr(SHARD)]).toBeDefined();
  });

  it('writes nothing for a batch whose changes count nothing', async () => {
    orderedTable();
    const publishing = startPublishing(post(), T0);
    await recordBatchStats(
      [streamed(publishing, { ...publishing, version: 2 }), streamed<PostRecord>(publishing, undefined)],
      SHARD,
    );
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
  });
});

describe('position', () => {
  it('sorts sequence numbers as numbers, whatever their length and leading zeros', () => {
    const seqs = [
      '000000000000000000009',
      '000000000000000000010',
      '4421584500000000017450439091',
      `1${'0'.repeat(39)}`,
    ];
    const sorted = [...seqs].map(position).sort();
    expect(sorted).toEqual(seqs.map(position));
    expect(position('000000000000000000010')).toBe('0210');
  });
});
