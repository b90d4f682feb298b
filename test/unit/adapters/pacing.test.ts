import {
  DynamoDBDocumentClient,
  GetCommand,
  type GetCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import { APP_PAUSE_CACHE_MS, clearPacingCache, paceDelivery, recordRateLimit } from '#adapters/pacing';
import type { ChannelRecord } from '#core/accounts';
import { bucketOf, PACING } from '#core/pacing';
import type { Platform } from '#core/platforms';
import { channel, channelItem, counters, type Item, ORG_ID } from '../support/fixtures.ts';

// Pacing's storage (adapters/pacing.ts) against an in-memory table with DynamoDB's condition and
// update semantics: what each delivery costs in requests, and that the counted windows hold under
// concurrency and across bucket turns.

const ddb = mockClient(DynamoDBDocumentClient);
const NOW = new Date('2030-06-12T09:00:00.000Z');
const HOUR = 3_600_000;
const id = (k: { pk: string; sk: string }) => `${k.pk} ${k.sk}`;

let table: Map<string, Item>;

beforeEach(() => {
  ddb.reset();
  clearPacingCache();
  const c = counters();
  table = c.items;
  ddb.on(UpdateCommand).callsFake(c.update);
  ddb.on(GetCommand).callsFake((input: GetCommandInput) => {
    const item = table.get(id(input.Key as { pk: string; sk: string }));
    return { Item: item ? structuredClone(item) : undefined };
  });
});

const updates = () => ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);
const gets = () => ddb.commandCalls(GetCommand).map((c) => c.args[0].input);

/** A stored channel of `platform` (its item in the table, as the worker would have read it). */
function stored(n: number, platform: Platform, patch: Partial<ChannelRecord> = {}): ChannelRecord {
  const ch = { ...channel(n, platform), ...patch };
  table.set(id(keys.channel(ORG_ID, ch.id)), channelItem(ch));
  return ch;
}

/** The channel as the next read returns it (its pause included). */
const reread = (ch: ChannelRecord) => {
  const item = table.get(id(keys.channel(ORG_ID, ch.id))) as Item;
  return {
    ...ch,
    pace_until: item.pace_until as string | undefined,
    pace_reason: item.pace_reason as string | undefined,
  };
};

const pace = (ch: ChannelRecord, now = NOW, media = 0) =>
  paceDelivery({ orgId: ORG_ID, channel: ch, media }, now);

describe('paceDelivery on a platform that is not counted (X)', () => {
  it('costs no write, and one cached read of the app pause per container every few seconds', async () => {
    // Arrange
    const ch = stored(1, 'x');

    // Act
    const first = await pace(ch);
    const again = await pace(ch, new Date(NOW.getTime() + APP_PAUSE_CACHE_MS - 1));
    const later = await pace(ch, new Date(NOW.getTime() + APP_PAUSE_CACHE_MS));

    // Assert
    expect([first, again, later]).toEqual([{ go: true }, { go: true }, { go: true }]);
    expect(updates()).toHaveLength(0);
    expect(gets()).toHaveLength(2);
    expect(gets()[0]?.Key).toEqual(keys.paceApp('x'));
  });

  it('a burst that finds the cache cold reads the app pause once', async () => {
    // Arrange
    const chs = Array.from({ length: 40 }, (_, i) => stored(i + 1, 'x'));

    // Act
    const answers = await Promise.all(chs.map((ch) => pace(ch)));

    // Assert
    expect(answers.every((d) => d.go)).toBe(true);
    expect(gets()).toHaveLength(1);
  });

  it("a channel's pause answers from the channel already read: no request at all", async () => {
    // Arrange
    const ch = stored(1, 'x', { pace_until: '2030-06-12T09:05:00.000Z', pace_reason: 'x asked' });

    // Act
    const d = await pace(ch);

    // Assert
    expect(d).toEqual({
      go: false,
      until: new Date('2030-06-12T09:05:00.000Z'),
      reason: 'x asked',
      scope: 'channel',
    });
    expect(ddb.calls()).toHaveLength(0);
  });
});

describe('recordRateLimit: a 429 pauses its scope', () => {
  it("pauses the channel on its own item until the platform's time; a shorter pause never shortens it", async () => {
    // Arrange
    const ch = stored(1, 'x');

    // Act
    const long = await recordRateLimit(
      { orgId: ORG_ID, channel: ch, refusal: { category: 'rate_limited', retryAfterSeconds: 900 } },
      NOW,
    );
    const short = await recordRateLimit(
      { orgId: ORG_ID, channel: ch, refusal: { category: 'rate_limited', retryAfterSeconds: 60 } },
      NOW,
    );
    const next = await pace(reread(ch), new Date(NOW.getTime() + 120_000));

    // Assert
    expect(long).toMatchObject({
      scope: 'channel',
      until: new Date('2030-06-12T09:15:00.000Z'),
      retryAfterSeconds: 900,
    });
    expect(short?.retryAfterSeconds).toBe(60);
    expect(updates().map((u) => u.Key)).toEqual([keys.channel(ORG_ID, ch.id), keys.channel(ORG_ID, ch.id)]);
    expect(reread(ch).pace_until).toBe('2030-06-12T09:15:00.000Z');
    expect(next).toMatchObject({ go: false, scope: 'channel', until: new Date('2030-06-12T09:15:00.000Z') });
    // The other channels of the platform are not held back.
    expect(await pace(stored(2, 'x'), new Date(NOW.getTime() + 120_000))).toEqual({ go: true });
  });

  it("the app's limit pauses every channel of the platform, seen by this container at once and by others on their next read", async () => {
    // Arrange
    const a = stored(1, 'linkedin');
    const b = stored(2, 'linkedin');
    expect(await pace(a)).toEqual({ go: true });

    // Act
    const p = await recordRateLimit(
      {
        orgId: ORG_ID,
        channel: a,
        refusal: { category: 'rate_limited', retryAfterSeconds: 3600, scope: 'app' },
      },
      NOW,
    );
    const here = await pace(b, new Date(NOW.getTime() + 1000));
    clearPacingCache(); // another container
    const there = await pace(b, new Date(NOW.getTime() + 2000));
    const afterwards = await pace(b, new Date(NOW.getTime() + HOUR + APP_PAUSE_CACHE_MS));

    // Assert
    expect(p?.scope).toBe('app');
    expect(updates().map((u) => u.Key)).toEqual([keys.paceApp('linkedin')]);
    expect(table.get(id(keys.paceApp('linkedin')))).toMatchObject({
      pause_until: '2030-06-12T10:00:00.000Z',
      entity: 'pace',
    });
    expect(here).toMatchObject({ go: false, scope: 'app', until: new Date('2030-06-12T10:00:00.000Z') });
    expect(there).toMatchObject({ go: false, scope: 'app' });
    expect(afterwards).toEqual({ go: true });
  });

  it('writes nothing for a failure that is not a rate limit', async () => {
    const ch = stored(1, 'x');
    const p = await recordRateLimit(
      { orgId: ORG_ID, channel: ch, refusal: { category: 'system', retryAfterSeconds: 30 } },
      NOW,
    );
    expect(p).toBeNull();
    expect(ddb.calls()).toHaveLength(0);
  });
});

describe('paceDelivery on a counted window (Instagram: 50 per rolling 24 hours per account)', () => {
  it('one conditional write per delivery; the 51st waits and costs one refused write', async () => {
    // Arrange
    const ch = stored(1, 'instagram');

    // Act
    const answers = [];
    for (let i = 0; i < 51; i++) answers.push(await pace(ch, new Date(NOW.getTime() + i * 50)));

    // Assert
    expect(answers.slice(0, 50).every((d) => d.go)).toBe(true);
    expect(answers[50]).toMatchObject({ go: false, scope: 'channel' });
    expect(updates()).toHaveLength(51);
    expect(updates().every((u) => u.Key?.pk === `PACE#${ORG_ID}#${ch.id}`)).toBe(true);
    expect(gets()).toHaveLength(1); // the app pause, once (Instagram's app scope is not counted)
    const item = table.get(id(keys.paceChannel(ORG_ID, ch.id))) as Item;
    expect(item.p24h_t).toBe(50);
    expect(JSON.stringify(updates()[0]).length).toBeLessThan(1024);
  });

  it('takes exactly the room left when many workers ask at once', async () => {
    // Arrange
    const ch = stored(1, 'instagram');

    // Act
    const answers = await Promise.all(Array.from({ length: 80 }, () => pace(ch)));

    // Assert
    expect(answers.filter((d) => d.go)).toHaveLength(50);
    expect((table.get(id(keys.paceChannel(ORG_ID, ch.id))) as Item).p24h_t).toBe(50);
    expect(gets()).toHaveLength(1);
  });

  it('drops the buckets that aged out in a second write, conditioned on what it read, and takes the slot', async () => {
    // Arrange: 50 posts yesterday morning fill the window; a day and two hours later they no longer count
    const ch = stored(1, 'instagram');
    for (let i = 0; i < 50; i++) await pace(ch, new Date(NOW.getTime() + i * 1000));
    ddb.resetHistory();
    const later = new Date(NOW.getTime() + 26 * HOUR);

    // Act
    const d = await pace(ch, later);

    // Assert
    expect(d).toEqual({ go: true });
    expect(updates()).toHaveLength(2);
    expect(updates()[1]?.UpdateExpression).toContain('REMOVE');
    const item = table.get(id(keys.paceChannel(ORG_ID, ch.id))) as Item;
    const window = PACING.instagram.limits[0]?.window;
    if (!window) throw new Error('no window');
    expect(item.p24h_t).toBe(1);
    expect(item[`p24h_${bucketOf(window, NOW.getTime())}`]).toBeUndefined();
    expect(item[`p24h_${bucketOf(window, later.getTime())}`]).toBe(1);
    expect(item.p24h_o).toBe(bucketOf(window, later.getTime()));
  });

  it('partly aged windows keep counting what is still live', async () => {
    // Arrange: 30 posts 23 h ago and 20 posts now = 50; two hours later the first 30 have aged out
    const ch = stored(1, 'instagram');
    for (let i = 0; i < 30; i++) await pace(ch, new Date(NOW.getTime() - 23 * HOUR));
    for (let i = 0; i < 20; i++) await pace(ch, NOW);

    // Act
    const full = await pace(ch, new Date(NOW.getTime() + 30 * 60_000));
    const room = [];
    for (let i = 0; i < 31; i++) room.push(await pace(ch, new Date(NOW.getTime() + 2 * HOUR + 1000)));

    // Assert
    expect(full.go).toBe(false);
    expect(room.filter((d) => d.go)).toHaveLength(30);
    expect((table.get(id(keys.paceChannel(ORG_ID, ch.id))) as Item).p24h_t).toBe(50);
  });
});

describe('paceDelivery on a per-media window (Mastodon: 30 uploads per 30 minutes)', () => {
  it('a text post writes nothing; posts with images count each image', async () => {
    // Arrange
    const ch = stored(1, 'mastodon');

    // Act
    const text = await pace(ch, NOW, 0);
    const withImages = [];
    for (let i = 0; i < 8; i++) withImages.push(await pace(ch, NOW, 4));

    // Assert: 7 × 4 = 28 fit, the 8th (32) waits
    expect(text).toEqual({ go: true });
    expect(withImages.filter((d) => d.go)).toHaveLength(7);
    expect(withImages[7]).toMatchObject({ go: false, scope: 'channel' });
    expect(updates()).toHaveLength(8);
  });

  it('its fullest counter item (a media in each of 31 minute buckets) stays under 1 KB: 1 WRU a write', async () => {
    // Arrange / Act
    const ch = stored(1, 'mastodon');
    for (let i = 0; i < 31; i++) await pace(ch, new Date(NOW.getTime() + i * 60_000), 1);

    // Assert: DynamoDB's item size (names plus values; a number is 1 byte + 1 per two significant digits)
    const item = table.get(id(keys.paceChannel(ORG_ID, ch.id))) as Item;
    const key = keys.paceChannel(ORG_ID, ch.id);
    const numberSize = (v: number) => 1 + Math.ceil(String(Math.abs(v)).replace(/^0+|0+$/g, '').length / 2);
    const size = Object.entries({ ...item, ...key }).reduce(
      (n, [k, v]) => n + k.length + (typeof v === 'number' ? numberSize(v) : String(v).length),
      0,
    );
    expect(Object.keys(item).filter((k) => /^m30m_\d+$/.test(k)).length).toBeGreaterThanOrEqual(30);
    expect(size).toBeLessThan(1024);
  });
});

describe('paceDelivery on a counted app (YouTube: 100 uploads per Pacific day per project)', () => {
  it('counts every channel of the platform on one item; the 101st waits for Pacific midnight', async () => {
    // Arrange
    const channels = Array.from({ length: 101 }, (_, i) => stored(i + 1, 'youtube'));

    // Act
    const answers = [];
    for (const ch of channels) answers.push(await pace(ch));

    // Assert
    expect(answers.filter((d) => d.go)).toHaveLength(100);
    expect(answers[100]).toMatchObject({
      go: false,
      scope: 'app',
      until: new Date('2030-06-13T07:00:00.000Z'),
    });
    expect(gets()).toHaveLength(0); // the app pause is checked by the slot write itself
    expect(new Set(updates().map((u) => u.Key?.pk))).toEqual(new Set(['PACEAPP#youtube']));
  });

  it("an app pause recorded after a refusal turns the next slot write back, with the pause's time", async () => {
    // Arrange
    const ch = stored(1, 'youtube');
    expect(await pace(ch)).toEqual({ go: true });
    await recordRateLimit(
      { orgId: ORG_ID, channel: ch, refusal: { category: 'rate_limited', scope: 'app' } },
      new Date(NOW.getTime() + 1000),
    );

    // Act
    const d = await pace(stored(2, 'youtube'), new Date(NOW.getTime() + 2000));

    // Assert: no time given, so the quota's reset (Pacific midnight)
    expect(d).toMatchObject({ go: false, scope: 'app', until: new Date('2030-06-13T07:00:00.000Z') });
    const item = table.get(id(keys.paceApp('youtube'))) as Item;
    expect(item.up1d_t).toBe(1);
    expect(item.pause_until).toBe('2030-06-13T07:00:00.000Z');
  });
});
