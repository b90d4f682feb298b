import { describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import type { DeliveryMessage, HeraldEvent } from '#core/messages';
import type { DeliveryRecord, PostRecord } from '#core/posts';
import { startPublishing } from '#core/posts';
import { handler as relay } from '#handlers/stream-relay';
import { deliver } from '#usecases/delivery-worker';
import { sweep } from '#usecases/schedule-sweeper';
import { fixedId, ORG_ID, org, orgItem, post, postItem } from '../support/fixtures.ts';
import { deliveriesWritten, type Item, type RequestView } from './support/dynamo.ts';
import {
  advance,
  connected,
  credentialsFor,
  EVENTS_QUEUE,
  platformPosts,
  pumpStream,
  storedPost,
  useWorld,
} from './support/world.ts';

// Many channels per post: every channel's delivery is state of its own, so the channels of one post
// do not contend. N deliveries of one post claimed and recorded at once all publish, with failed
// conditional writes bounded by N (not ≈ N²/2), and a delivery's outcome, written after the
// platform accepted, never loses to a sibling channel's write.

const world = useWorld();
const { table, sqs } = world;

const N = 25;

/** The delivery a post write (a whole-item Put, or one delivery's UpdateItem) carries for `channelId`. */
const deliveryWritten = (v: RequestView, channelId: string) =>
  deliveriesWritten(v).find((d) => d.channel_id === channelId) as DeliveryRecord | undefined;

/** The org, N connected Mastodon channels, and a post to all of them (`patch`: its state). */
function given(patch: (p: PostRecord) => PostRecord) {
  const chans = Array.from({ length: N }, (_, i) =>
    connected(100 + i, 'mastodon', credentialsFor(world.fakes, 'mastodon')),
  );
  const p = patch(
    post({
      id: fixedId('post', 1),
      variants: chans.map((c, i) => ({
        id: fixedId('variant', 100 + i),
        channel_id: c.channel.id,
        body: `Said once on channel ${i}`,
        media: [],
        options: {},
      })),
    }),
  );
  table.seed(orgItem(org()), ...chans.flatMap((c) => c.items), postItem(p));
  return { post: p, channels: chans.map((c) => c.channel.id) };
}

/** Writes DynamoDB refused on their condition (each billed as a write). */
const failedConditions = () => table.calls.filter((c) => c.outcome === 'ConditionalCheckFailed').length;

describe('a post to many channels', () => {
  it(`${N} deliveries of a dispatched post claimed at once: all published, no ConcurrentChangeError, ≤ N failed conditional writes`, async () => {
    // Arrange: a post due now; each channel's dispatch message starts it (the first to land does).
    const due = new Date(Date.now() - 1000).toISOString();
    const g = given((p) => ({ ...p, status: 'scheduled', scheduled_at: due }));
    const msgs: DeliveryMessage[] = g.channels.map((channel_id) => ({
      org_id: ORG_ID,
      post_id: g.post.id,
      channel_id,
      round: 1,
      start: due,
    }));

    // Act
    const outcomes = await Promise.allSettled(msgs.map((m) => deliver(m)));

    // Assert
    expect(
      outcomes.filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason)),
    ).toEqual([]);
    expect(outcomes.map((o) => (o as PromiseFulfilledResult<string>).value)).toEqual(
      msgs.map(() => 'published'),
    );
    const stored = storedPost(table, g.post.id);
    expect(stored.status).toBe('published');
    expect(Object.values(stored.deliveries).map((d) => d.stage)).toEqual(msgs.map(() => 'published'));
    expect(platformPosts(world.fakes, 'mastodon')).toHaveLength(N);
    expect(failedConditions()).toBeLessThanOrEqual(N);
    // The stream relay, over every image those writes made: one post.published, the N deliveries counted.
    expect((await pumpStream(table, relay)).stuck).toEqual([]);
    const events = sqs.sentTo(EVENTS_QUEUE).map((m) => m.body as HeraldEvent);
    expect(events.filter((e) => e.type === 'post.published')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'delivery.failed')).toEqual([]);
    expect(table.get(keys.orgStats(ORG_ID))).toMatchObject({ deliveries_published: N });
  });

  it("an outcome written after the platform accepted never loses to sibling channels' writes", async () => {
    // Arrange: the post is publishing; a sibling channel's write lands before every write of the
    // first channel's outcome (its read-modify-write would never win).
    const g = given((p) => ({
      ...p,
      status: 'scheduled',
      scheduled_at: new Date(Date.now() - 1000).toISOString(),
    }));
    const [first, sibling] = g.channels as [string, string];
    const started = await deliver({
      org_id: ORG_ID,
      post_id: g.post.id,
      channel_id: sibling,
      round: 1,
      start: g.post.scheduled_at as string,
    });
    expect(started).toBe('published');
    let landed = 0;
    table.interpose(
      (v) => deliveryWritten(v, first)?.stage === 'published',
      () => {
        const key = keys.post(ORG_ID, g.post.id);
        const current = table.get<PostRecord & Item>(key) as PostRecord & Item;
        const d = current.deliveries[sibling] as DeliveryRecord;
        landed++;
        table.seed({
          ...current,
          version: current.version + 1,
          deliveries: {
            ...current.deliveries,
            [sibling]: { ...d, updated_at: new Date(Date.now() + landed).toISOString() },
          },
        });
      },
    );

    // Act
    const outcome = await deliver({ org_id: ORG_ID, post_id: g.post.id, channel_id: first, round: 1 });

    // Assert
    expect(outcome).toBe('published');
    const stored = storedPost(table, g.post.id);
    expect(stored.deliveries[first]).toMatchObject({ stage: 'published', attempts: 1 });
    expect(stored.deliveries[first]?.claim_id).toBeUndefined();
    expect(platformPosts(world.fakes, 'mastodon')).toHaveLength(2);
  });

  it('a worker that died between the last delivery and the post status: the watchdog publishes the post', async () => {
    // Arrange: every delivery published, the post still publishing (its settling write never made).
    const g = given((p) => {
      const started = startPublishing(p, new Date(Date.now() - 1000));
      const deliveries = Object.fromEntries(
        Object.entries(started.deliveries).map(([id, d]) => [
          id,
          { ...d, stage: 'published' as const, external_id: `ext-${id}`, attempts: 1 },
        ]),
      );
      return { ...started, deliveries };
    });

    // Act: the sweeper's watchdog, past the watch time.
    advance(6 * 60_000);
    const res = await sweep(new Date());

    // Assert
    expect(res.redriven).toBe(0);
    const stored = storedPost(table, g.post.id);
    expect(stored).toMatchObject({ status: 'published', watch_at: null });
    expect(stored.published_at).not.toBeNull();
  });
});
