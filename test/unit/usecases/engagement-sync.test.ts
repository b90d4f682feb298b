import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  type PutCommandInput,
  QueryCommand,
  type QueryCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import type { Connector, Engagement, MetricsContext } from '#adapters/platforms/types';
import { PlatformError } from '#adapters/platforms/types';
import type { EngagementSyncMessage } from '#core/messages';
import type { Platform } from '#core/platforms';
import type { DeliveryRecord } from '#core/posts';
import {
  engagementMessages,
  findEngagementWork,
  POSTS_PER_MESSAGE,
  SYNC_DAYS,
  syncDays,
} from '#usecases/engagement-sync';
import { type SyncResult, syncEngagementBatch } from '#usecases/engagement-sync-worker';
import { type EngagedPost, type PostEngagement, statsDelta } from '#usecases/support/stats';
import {
  channel,
  channelItem,
  fixedId,
  type Item,
  ORG_ID,
  OTHER_ORG_ID,
  post,
  postItem,
  tableReads,
  variant,
} from '../support/fixtures.ts';

// The engagement sync: the finder sends the posts published in the last 7 days in batches to the
// engagement-sync queue; the worker fetches each batch's metrics per channel and stores them on each
// post; the org totals then follow from the post's change (recordBatchStats).

const sent = vi.hoisted(() => [] as EngagementSyncMessage[]);
vi.mock('#adapters/queues', () => ({
  sendEngagementSyncs: async (messages: EngagementSyncMessage[]) => {
    sent.push(...messages);
  },
}));

const connectors = vi.hoisted(() => new Map<string, Connector>());
vi.mock('#adapters/platforms/index', () => ({
  connectorFor: async (platform: string) => {
    const c = connectors.get(platform);
    if (!c) throw new Error(`no connector for ${platform}`);
    return c;
  },
}));

const ddb = mockClient(DynamoDBDocumentClient);

const NOW = new Date('2030-06-10T09:30:00.000Z');
const CH1 = channel(1, 'bluesky');
const CH2 = channel(2, 'mastodon');
const CH3 = channel(3, 'x', OTHER_ORG_ID);

const ENG = (likes: number, impressions = 0): Engagement => ({
  impressions,
  likes,
  comments: 0,
  shares: 0,
  clicks: 0,
});

function published(channelId: string, externalId: string): DeliveryRecord {
  return {
    channel_id: channelId,
    stage: 'published',
    external_id: externalId,
    url: null,
    error: null,
    error_category: null,
    attempts: 1,
    updated_at: '2030-06-09T10:00:00.000Z',
    round: 1,
  };
}

/** A post published at `publishedAt` to the given channels (external id `<post n>-<channel n>`). */
function publishedPost(
  n: number,
  channels: Array<{ id: string; org_id: string }>,
  publishedAt = '2030-06-09T10:00:00.000Z',
  extra: Partial<EngagedPost> = {},
): EngagedPost {
  const orgId = channels[0]?.org_id ?? ORG_ID;
  return {
    ...post({
      id: fixedId('post', n),
      org_id: orgId,
      status: 'published',
      published_at: publishedAt,
      round: 1,
      variants: channels.map((c, i) => variant(c.id, i + 1)),
      deliveries: Object.fromEntries(channels.map((c) => [c.id, published(c.id, `p${n}-${c.id.slice(-2)}`)])),
    }),
    ...extra,
  };
}

const indexed = (p: EngagedPost): Item => ({
  ...keys.post(p.org_id, p.id),
  ...keys.syncWork(p.published_at ?? '', p.org_id, p.id),
});

let written: PutCommandInput[] = [];

/** The table: posts, channels and credentials; the SYNC buckets answer from the posts' published_at. */
function given(posts: EngagedPost[], channels = [CH1, CH2, CH3]) {
  const items: Item[] = [
    ...posts.map((p) => ({ ...postItem(p), ...indexed(p) })),
    ...channels.map(channelItem),
    ...channels.map((c) => ({
      ...keys.channelCredentials(c.org_id, c.id),
      credentials: { token: `t-${c.id}` },
    })),
  ];
  const reads = tableReads(items);
  ddb.on(GetCommand).callsFake(reads.get);
  ddb.on(BatchGetCommand).callsFake(reads.batchGet);
  ddb.on(QueryCommand).callsFake((input: QueryCommandInput) => ({
    Items: items
      .filter((i) => i.gsi2pk === input.ExpressionAttributeValues?.[':p'])
      .map((i) => ({ pk: i.pk, sk: i.sk, gsi2pk: i.gsi2pk, gsi2sk: i.gsi2sk })),
  }));
  ddb.on(PutCommand).callsFake((input: PutCommandInput) => {
    written.push(input);
    return {};
  });
  ddb.on(UpdateCommand).resolves({});
}

/** A connector whose metrics answer `values[externalId]` and record what they were asked. */
function metricsConnector(values: Record<string, Engagement>, asked: MetricsContext[] = []): Connector {
  return {
    publish: async () => {
      throw new Error('not used');
    },
    reconcile: async () => null,
    metrics: async (ctx) => {
      asked.push(ctx);
      return Object.fromEntries(ctx.externalIds.flatMap((id) => (values[id] ? [[id, values[id]]] : [])));
    },
  };
}

/** One whole run: the finder, then the worker on every message it sent (results summed). */
async function syncEngagement(now: Date): Promise<SyncResult> {
  sent.length = 0;
  await findEngagementWork(now);
  const total: SyncResult = { posts: 0, channels: 0, updated: 0, skipped: 0, failed: 0 };
  for (const msg of [...sent]) {
    const r = await syncEngagementBatch(msg, now);
    for (const k of Object.keys(total) as Array<keyof SyncResult>) total[k] += r[k];
  }
  return total;
}

const writtenPost = (postId: string) =>
  written.find((w) => w.Item?.id === postId)?.Item as (EngagedPost & Item) | undefined;

beforeEach(() => {
  sent.length = 0;
  ddb.reset();
  connectors.clear();
  written = [];
});

describe('syncDays', () => {
  it('is the last 7 UTC days, oldest first, today last', () => {
    expect(syncDays(NOW)).toEqual([
      '2030-06-04',
      '2030-06-05',
      '2030-06-06',
      '2030-06-07',
      '2030-06-08',
      '2030-06-09',
      '2030-06-10',
    ]);
    expect(SYNC_DAYS).toBe(7);
  });
});

describe('syncEngagement', () => {
  it('reads the SYNC#<day> bucket of each of the last 7 days from the due-work index', async () => {
    given([]);
    await syncEngagement(NOW);
    const asked = ddb.commandCalls(QueryCommand).map((c) => c.args[0].input);
    expect(asked.map((q) => q.IndexName)).toEqual(Array(7).fill('gsi2'));
    expect(asked.map((q) => q.ExpressionAttributeValues?.[':p'])).toEqual(
      syncDays(NOW).map((d) => `SYNC#${d}`),
    );
  });

  it('asks each channel once for all its published posts and stores the engagement on each post', async () => {
    // Arrange: two posts on CH1 (bluesky), one of them also on CH2 (mastodon), published on different days.
    const p1 = publishedPost(1, [CH1, CH2], '2030-06-04T08:00:00.000Z');
    const p2 = publishedPost(2, [CH1], '2030-06-10T08:00:00.000Z');
    given([p1, p2]);
    const bluesky: MetricsContext[] = [];
    const mastodon: MetricsContext[] = [];
    connectors.set('bluesky', metricsConnector({ 'p1-01': ENG(3, 40), 'p2-01': ENG(1) }, bluesky));
    connectors.set('mastodon', metricsConnector({ 'p1-02': ENG(5) }, mastodon));

    // Act
    const result = await syncEngagement(NOW);

    // Assert: one metrics call per channel, with its credentials and external ids.
    expect(bluesky).toHaveLength(1);
    expect(bluesky[0]).toMatchObject({
      channel: { id: CH1.id, handle: CH1.handle, platform: 'bluesky' },
      credentials: { token: `t-${CH1.id}` },
    });
    expect(bluesky[0]?.externalIds.sort()).toEqual(['p1-01', 'p2-01']);
    expect(mastodon[0]?.externalIds).toEqual(['p1-02']);
    // One versioned write per post, with every channel's values.
    expect(written).toHaveLength(2);
    expect(writtenPost(p1.id)?.engagement).toEqual({
      [CH1.id]: { platform: 'bluesky', ...ENG(3, 40), synced_at: NOW.toISOString() },
      [CH2.id]: { platform: 'mastodon', ...ENG(5), synced_at: NOW.toISOString() },
    });
    expect(written.find((w) => w.Item?.id === p1.id)).toMatchObject({
      ConditionExpression: 'version = :v',
      ExpressionAttributeValues: { ':v': p1.version },
      Item: { version: p1.version + 1, status: 'published' },
    });
    expect(result).toEqual({ posts: 2, channels: 2, updated: 2, skipped: 0, failed: 0 });
  });

  it('leaves a post alone when its values did not change (no write, no stream record)', async () => {
    const stored: PostEngagement = { platform: 'bluesky', ...ENG(3), synced_at: '2030-06-09T00:00:00.000Z' };
    given([publishedPost(1, [CH1], undefined, { engagement: { [CH1.id]: stored } })]);
    connectors.set('bluesky', metricsConnector({ 'p1-01': ENG(3) }));
    const result = await syncEngagement(NOW);
    expect(written).toHaveLength(0);
    expect(result.updated).toBe(0);
  });

  it('tolerates a failing platform: the others are still synced, the failure is counted', async () => {
    // Arrange: mastodon answers 429; bluesky works.
    given([publishedPost(1, [CH1]), publishedPost(2, [CH2])]);
    connectors.set('bluesky', metricsConnector({ 'p1-01': ENG(2) }));
    connectors.set('mastodon', {
      ...metricsConnector({}),
      metrics: async () => {
        throw new PlatformError('rate_limited', 'slow down', { retryAfterSeconds: 60 });
      },
    });

    // Act
    const result = await syncEngagement(NOW);

    // Assert
    expect(written.map((w) => w.Item?.id)).toEqual([fixedId('post', 1)]);
    expect(result).toMatchObject({ updated: 1, failed: 1 });
  });

  it('fails the run on an error that is not the platform’s (a bug must not pass silently)', async () => {
    given([publishedPost(1, [CH1])]);
    connectors.set('bluesky', {
      ...metricsConnector({}),
      metrics: async () => Promise.reject(new TypeError('boom')),
    });
    await expect(syncEngagement(NOW)).rejects.toThrow('boom');
  });

  it('skips platforms without metrics and channels that need re-authorization', async () => {
    const reauth = { ...channel(4, 'bluesky'), status: 'reauth_required' as const };
    given([publishedPost(1, [CH2]), publishedPost(2, [reauth])], [CH2, reauth]);
    const asked: MetricsContext[] = [];
    connectors.set('bluesky', metricsConnector({ 'p2-04': ENG(1) }, asked));
    const { metrics: _none, ...noMetrics } = metricsConnector({});
    connectors.set('mastodon', noMetrics);

    const result = await syncEngagement(NOW);

    expect(asked).toHaveLength(0);
    expect(written).toHaveLength(0);
    expect(result).toMatchObject({ channels: 2, skipped: 2, failed: 0 });
  });

  it('groups by organization too: the same platform in two orgs is two channels', async () => {
    given([publishedPost(1, [CH1]), publishedPost(2, [CH3])]);
    connectors.set('bluesky', metricsConnector({ 'p1-01': ENG(1) }));
    connectors.set('x', metricsConnector({ 'p2-03': ENG(2) }));
    const result = await syncEngagement(NOW);
    expect(result).toMatchObject({ channels: 2, updated: 2 });
    expect(writtenPost(fixedId('post', 2))?.org_id).toBe(OTHER_ORG_ID);
  });

  it("hands the connector the channel's token source (renewals go through the credentials' lease)", async () => {
    given([publishedPost(1, [CH1])]);
    let seen: unknown;
    connectors.set('bluesky', {
      ...metricsConnector({}),
      metrics: async (ctx) => {
        seen = ctx.tokens.credentials;
        return {};
      },
    });
    await syncEngagement(NOW);
    expect(seen).toEqual(expect.any(Object));
  });

  it('stores clean numbers: non-negative integers, a missing metric as 0', async () => {
    given([publishedPost(1, [CH1])]);
    connectors.set(
      'bluesky',
      metricsConnector({ 'p1-01': { impressions: 10.6, likes: -1, comments: Number.NaN } as Engagement }),
    );
    await syncEngagement(NOW);
    expect(writtenPost(fixedId('post', 1))?.engagement?.[CH1.id]).toMatchObject({
      impressions: 11,
      likes: 0,
      comments: 0,
      shares: 0,
      clicks: 0,
    });
  });

  it('the stored change adds exactly new − previous to the org totals (delta math)', async () => {
    // Arrange: 3 likes and 40 impressions stored; the platform now says 8 likes and 100 impressions.
    const stored: PostEngagement = {
      platform: 'bluesky',
      ...ENG(3, 40),
      synced_at: '2030-06-09T00:00:00.000Z',
    };
    const before = publishedPost(1, [CH1], undefined, { engagement: { [CH1.id]: stored } });
    given([before]);
    connectors.set('bluesky', metricsConnector({ 'p1-01': ENG(8, 100) }));

    // Act: the sync writes the post; the stream then carries (before, after) to the counters (recordBatchStats).
    await syncEngagement(NOW);
    const after = writtenPost(before.id);
    const delta = statsDelta({ eventId: 'ev', timeMs: NOW.getTime(), old: before, new: after });

    // Assert
    expect(delta.engagement).toEqual({
      bluesky: { impressions: 60, likes: 5, comments: 0, shares: 0, clicks: 0 },
    });
    expect(delta.syncedPlatforms).toEqual(['bluesky']);
    expect(delta.deliveries).toEqual({ total: 0, published: 0, failed: 0 });
    expect(delta.day).toBeNull();
  });

  it('ignores posts that are not published and deliveries without a platform id', async () => {
    const failedPost: EngagedPost = { ...publishedPost(1, [CH1]), status: 'failed' };
    const noId = publishedPost(2, [CH1]);
    const d = noId.deliveries[CH1.id];
    if (d) d.external_id = null;
    given([failedPost, noId]);
    const asked: MetricsContext[] = [];
    connectors.set('bluesky' satisfies Platform, metricsConnector({}, asked));
    const result = await syncEngagement(NOW);
    expect(asked).toHaveLength(0);
    expect(result).toMatchObject({ posts: 2, channels: 0 });
  });
});

describe('the finder and the worker', () => {
  it('sends the keys of the recent posts, POSTS_PER_MESSAGE to a message, an organization together, reading no post', async () => {
    const refs = [
      ...Array.from({ length: POSTS_PER_MESSAGE + 1 }, (_, i) => ({
        orgId: ORG_ID,
        postId: fixedId('post', i + 1),
      })),
      { orgId: OTHER_ORG_ID, postId: fixedId('post', 500) },
    ].reverse();
    const messages = engagementMessages(refs);
    expect(messages.map((m) => m.posts.length)).toEqual([POSTS_PER_MESSAGE, 2]);
    expect(messages.flatMap((m) => m.posts)).toHaveLength(refs.length);
    expect(new Set(messages[0]?.posts.map((p) => p.org_id))).toEqual(new Set([ORG_ID]));

    given([publishedPost(1, [CH1]), publishedPost(2, [CH3])]);
    const result = await findEngagementWork(NOW);
    expect(result).toEqual({ posts: 2, sent: 1 });
    expect(sent).toEqual([
      {
        posts: [
          { org_id: ORG_ID, post_id: fixedId('post', 1) },
          { org_id: OTHER_ORG_ID, post_id: fixedId('post', 2) },
        ].sort((a, b) => a.org_id.localeCompare(b.org_id)),
      },
    ]);
    expect(ddb.commandCalls(BatchGetCommand)).toHaveLength(0);
  });

  it('is harmless on redelivery: the same numbers read again write nothing, so nothing is counted twice', async () => {
    // Arrange: the first delivery stores the numbers.
    const p1 = publishedPost(1, [CH1]);
    given([p1]);
    connectors.set('bluesky', metricsConnector({ 'p1-01': ENG(4, 9) }));
    const msg: EngagementSyncMessage = { posts: [{ org_id: ORG_ID, post_id: p1.id }] };
    expect(await syncEngagementBatch(msg, NOW)).toMatchObject({ updated: 1 });
    const stored = writtenPost(p1.id);
    if (!stored) throw new Error('not written');

    // Act: the message comes back (a lost delete, a timeout) and the platform answers the same.
    written = [];
    given([stored as EngagedPost]);
    const again = await syncEngagementBatch(msg, new Date(NOW.getTime() + 60_000));

    // Assert: no write, so no stream record and no delta for the relay to add.
    expect(again).toMatchObject({ updated: 0 });
    expect(written).toHaveLength(0);
  });
});
