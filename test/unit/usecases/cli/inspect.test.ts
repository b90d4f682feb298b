import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  type QueryCommandInput,
  ScanCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import type { ChannelRecord } from '#core/accounts';
import type { DeliveryRecord, PostRecord } from '#core/posts';
import { failingChannels, inspectPost, stuckPosts } from '#usecases/cli/inspect';
import {
  channel,
  channelItem,
  fixedId,
  type Item,
  ORG_ID,
  OTHER_ORG_ID,
  post,
  tableReads,
  variant,
} from '../../support/fixtures.ts';

// The operator's views across organizations, on a small in-memory table whose GSI2 answers from
// the items' gsi2 keys (range conditions included): what is in the index is what the views find,
// and they never Scan.

const ddb = mockClient(DynamoDBDocumentClient);
const NOW = new Date('2030-06-10T09:30:30.000Z');
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000).toISOString();
const MIN = 60;

function table(seed: Item[]) {
  const reads = tableReads(seed);
  ddb.on(GetCommand).callsFake(reads.get);
  ddb.on(BatchGetCommand).callsFake(reads.batchGet);
  ddb.on(QueryCommand).callsFake((input: QueryCommandInput) => {
    if (input.IndexName !== 'gsi2') throw new Error(`unexpected query ${JSON.stringify(input)}`);
    const v = input.ExpressionAttributeValues ?? {};
    const bucket = v[':p'] ?? v[':b'];
    const lo = (v[':from'] ?? v[':after']) as string | undefined;
    const hi = (v[':to'] ?? v[':until']) as string | undefined;
    return {
      Items: seed
        .filter((i) => i.gsi2pk === bucket)
        .filter((i) => (!lo || String(i.gsi2sk) >= lo) && (!hi || String(i.gsi2sk) <= hi))
        .sort((a, b) => String(a.gsi2sk).localeCompare(String(b.gsi2sk)))
        .map((i) => ({ pk: i.pk, sk: i.sk, gsi2pk: i.gsi2pk, gsi2sk: i.gsi2sk })),
    };
  });
}

/** A post's item filed in the due-work index at `entry` (scheduled: its time; publishing: its entry). */
const filed = (p: PostRecord, entry: string | null): Item => ({
  ...keys.post(p.org_id, p.id),
  ...(entry ? keys.dueWork(entry, p.org_id, p.id) : {}),
  entity: 'post',
  ...p,
});

const CH1 = fixedId('channel', 1);
const CH2 = fixedId('channel', 2);

function delivery(channelId: string, extra: Partial<DeliveryRecord>): DeliveryRecord {
  return {
    channel_id: channelId,
    stage: 'queued',
    external_id: null,
    url: null,
    error: null,
    error_category: null,
    attempts: 0,
    updated_at: ago(60 * MIN),
    round: 1,
    ...extra,
  };
}

function publishing(n: number, orgId: string, deliveries: DeliveryRecord[], extra: Partial<PostRecord> = {}) {
  return post({
    id: fixedId('post', n),
    org_id: orgId,
    status: 'publishing',
    round: 1,
    variants: deliveries.map((d, i) => variant(d.channel_id, i + 1)),
    deliveries: Object.fromEntries(deliveries.map((d) => [d.channel_id, d])),
    ...extra,
  });
}

beforeEach(() => ddb.reset());

describe('stuckPosts', () => {
  it('finds, across organizations, a missed schedule, an expired lease and a long retry; not what is on time or recent', async () => {
    // Arrange
    const missed = post({ id: fixedId('post', 1), status: 'scheduled', scheduled_at: ago(45 * MIN) });
    const recent = post({ id: fixedId('post', 2), status: 'scheduled', scheduled_at: ago(5 * MIN) });
    const crashed = publishing(3, OTHER_ORG_ID, [
      delivery(CH1, {
        stage: 'sending',
        attempts: 1,
        claim_id: 'claim-1',
        attempt_started_at: ago(42 * MIN),
        lease_until: ago(40 * MIN),
      }),
      delivery(CH2, { stage: 'published', external_id: 'x', url: 'https://x', attempts: 1 }),
    ]);
    const retrying = publishing(
      4,
      ORG_ID,
      [delivery(CH1, { stage: 'retrying', attempts: 3, error_category: 'rate_limited', error: 'slow down' })],
      { dispatched: { for: ago(3 * 3600), at: ago(3 * 3600), round: 1 } },
    );
    const healthy = publishing(5, ORG_ID, [
      delivery(CH1, { stage: 'sending', attempts: 1, claim_id: 'c', lease_until: ago(-60) }),
    ]);
    table([
      filed(missed, missed.scheduled_at),
      filed(recent, recent.scheduled_at),
      filed(crashed, ago(42 * MIN)),
      // Re-filed by a long retry wait: its entry is later than the round's start.
      filed(retrying, ago(50 * MIN)),
      filed(healthy, ago(2 * MIN)),
    ]);

    // Act
    const res = await stuckPosts({ now: NOW, olderThanMs: 30 * MIN * 1000, lookbackMs: 2 * 3600_000 });

    // Assert
    expect(res.stuck.map((f) => [f.org_id, f.post_id, f.channel_id, f.why, f.since])).toEqual([
      [ORG_ID, retrying.id, CH1, 'retrying', ago(3 * 3600)],
      [ORG_ID, missed.id, null, 'not_started', ago(45 * MIN)],
      [OTHER_ORG_ID, crashed.id, CH1, 'lease_expired', ago(40 * MIN)],
    ]);
    expect(res.stuck[0]).toMatchObject({ attempts: 3, error_category: 'rate_limited', error: 'slow down' });
    expect(res).toMatchObject({ posts_read: 5, buckets_read: 121, older_than_seconds: 1800 });
    expect(ddb.commandCalls(ScanCommand)).toHaveLength(0);
  });

  it('reads one minute bucket per minute of the lookback, and nothing older than it', async () => {
    const old = post({ id: fixedId('post', 1), status: 'scheduled', scheduled_at: ago(3 * 3600) });
    table([filed(old, old.scheduled_at)]);

    const within = await stuckPosts({ now: NOW, olderThanMs: 0, lookbackMs: 4 * 3600_000 });
    const short = await stuckPosts({ now: NOW, olderThanMs: 0, lookbackMs: 3600_000 });

    expect(within.stuck.map((f) => f.post_id)).toEqual([old.id]);
    expect(short.stuck).toEqual([]);
    expect(short.buckets_read).toBe(61);
    const buckets = ddb
      .commandCalls(QueryCommand)
      .slice(-61)
      .map((c) => String(c.args[0].input.ExpressionAttributeValues?.[':p']));
    expect(new Set(buckets).size).toBe(61);
    expect(buckets).toContain('DUE#2030-06-10T08:30');
    expect(buckets).toContain('DUE#2030-06-10T09:30');
  });

  it('lists a post whose deliveries are all final but which still says publishing (its last worker died)', async () => {
    const unsettled = publishing(1, ORG_ID, [
      delivery(CH1, { stage: 'published', attempts: 1, updated_at: ago(40 * MIN) }),
      delivery(CH2, { stage: 'failed', attempts: 5, updated_at: ago(35 * MIN) }),
    ]);
    table([filed(unsettled, ago(45 * MIN))]);

    const res = await stuckPosts({ now: NOW, olderThanMs: 30 * MIN * 1000, lookbackMs: 3600_000 });

    expect(res.stuck).toEqual([
      expect.objectContaining({ why: 'unsettled', since: ago(35 * MIN), channel_id: null }),
    ]);
  });
});

describe('failingChannels', () => {
  const synced = (c: ChannelRecord, nextSyncAt: string, extra: Partial<ChannelRecord> = {}): Item => ({
    ...channelItem({ ...c, next_sync_at: nextSyncAt, ...extra }),
    ...keys.channelSync(nextSyncAt, c.org_id, c.id),
  });

  it('lists reauth_required and failing syncs of every organization; not healthy channels, nor sessions in the index', async () => {
    const reauth = synced(channel(1, 'linkedin'), ago(-30 * MIN), {
      status: 'reauth_required',
      last_error: 'The token used in the request has been revoked by the user',
      last_sync_at: ago(30 * MIN),
    });
    const flaky = synced(channel(2, 'mastodon', OTHER_ORG_ID), ago(-2 * 3600), {
      sync_failures: 3,
      last_error: 'HTTP 503',
    });
    const overdue = synced(channel(3, 'x', OTHER_ORG_ID), ago(3 * 86_400), { status: 'reauth_required' });
    const healthy = synced(channel(4), ago(-3600));
    const session: Item = {
      ...keys.connection(ORG_ID, fixedId('connection', 1)),
      ...keys.connectionCleanup(ago(-MIN), ORG_ID, fixedId('connection', 1)),
      entity: 'connection',
    };
    // Due tomorrow: beyond where a failing channel can be, so not read.
    const later = synced(channel(5), ago(-20 * 3600), { status: 'reauth_required' });
    table([reauth, flaky, overdue, healthy, session, later]);

    const res = await failingChannels({ now: NOW });

    expect(res.channels.map((c) => [c.org_id, c.channel_id, c.platform, c.why])).toEqual([
      [ORG_ID, fixedId('channel', 1), 'linkedin', 'reauth_required'],
      [OTHER_ORG_ID, fixedId('channel', 2), 'mastodon', 'sync_failing'],
      [OTHER_ORG_ID, fixedId('channel', 3), 'x', 'reauth_required'],
    ]);
    expect(res.channels[0]).toMatchObject({
      status: 'reauth_required',
      last_error: 'The token used in the request has been revoked by the user',
      last_sync_at: ago(30 * MIN),
    });
    expect(res.channels[1]).toMatchObject({ sync_failures: 3, last_error: 'HTTP 503' });
    expect(res.channels_read).toBe(4);
    expect(ddb.commandCalls(ScanCommand)).toHaveLength(0);
  });
});

describe('inspectPost', () => {
  it("answers the API's post and each delivery's stage, attempts, error, next attempt, claim and platform", async () => {
    const p = publishing(1, ORG_ID, [
      delivery(CH1, {
        stage: 'sending',
        attempts: 2,
        claim_id: 'claim-9',
        attempt_started_at: ago(120),
        lease_until: ago(30),
        error_category: 'platform_error',
        error: 'HTTP 502',
      }),
      delivery(CH2, { stage: 'retrying', attempts: 1, next_attempt_at: ago(-300) }),
    ]);
    table([filed(p, ago(200)), channelItem(channel(1, 'bluesky')), channelItem(channel(2, 'mastodon'))]);

    const res = await inspectPost(ORG_ID, p.id, NOW);

    expect(res.org_id).toBe(ORG_ID);
    expect(res.post).toMatchObject({
      id: p.id,
      status: 'publishing',
      variants: [{ channel_id: CH1 }, { channel_id: CH2 }],
    });
    expect(res.deliveries).toEqual([
      expect.objectContaining({
        channel_id: CH1,
        platform: 'bluesky',
        stage: 'sending',
        attempts: 2,
        error_category: 'platform_error',
        error: 'HTTP 502',
        claim: { id: 'claim-9', lease_until: ago(30), expired: true, attempt_started_at: ago(120) },
      }),
      expect.objectContaining({
        channel_id: CH2,
        platform: 'mastodon',
        stage: 'retrying',
        next_attempt_at: ago(-300),
        claim: null,
      }),
    ]);
  });

  it('answers not found for an unknown post or one of another organization', async () => {
    const p = publishing(1, ORG_ID, [delivery(CH1, {})]);
    table([filed(p, ago(200))]);
    await expect(inspectPost(OTHER_ORG_ID, p.id)).rejects.toMatchObject({ code: 'resource_not_found' });
    await expect(inspectPost(ORG_ID, 'post_nope')).rejects.toMatchObject({ code: 'resource_not_found' });
  });
});
