import { describe, expect, it } from 'vitest';
import type { DeliveryMessage, DispatchMessage } from '#core/messages';
import { handler as worker } from '#handlers/delivery-worker';
import { handler as dispatcher } from '#handlers/schedule-dispatcher';
import { fixedId, ORG_ID, org, orgItem, post, postItem } from '../support/fixtures.ts';
import { visibilityMs } from './support/sqs.ts';
import {
  connected,
  credentialsFor,
  DELIVERY_QUEUE,
  drain,
  platformPosts,
  storedPost,
  T0,
  useWorld,
} from './support/world.ts';

// A dispatch whose SendMessageBatch SQS accepted only in part: the channels that went out start the
// post (their first claim), so a dispatch that simply came back would find the post `publishing`
// and do nothing, and the refused channel would wait for the watchdog (≈ 5 minutes). The adapter
// re-sends only the refused entries; if they stay refused, the re-dispatch of a post this very
// dispatch started sends the channels still queued.

const world = useWorld();
const { table, sqs } = world;
const SCHEDULE_QUEUE = process.env.SCHEDULE_QUEUE_URL as string;

function scheduledOnTwo() {
  const bsky = connected(1, 'bluesky', credentialsFor(world.fakes, 'bluesky'));
  const masto = connected(2, 'mastodon', credentialsFor(world.fakes, 'mastodon'));
  const at = T0.toISOString();
  const p = post({
    id: fixedId('post', 1),
    status: 'scheduled',
    scheduled_at: at,
    variants: [bsky, masto].map((c, i) => ({
      id: fixedId('variant', i + 1),
      channel_id: c.channel.id,
      body: `Launch day, part ${i + 1}`,
      media: [],
      options: {},
    })),
  });
  table.seed(orgItem(org()), ...bsky.items, ...masto.items, postItem(p));
  const dispatch: DispatchMessage = { org_id: ORG_ID, post_id: p.id, scheduled_at: at };
  sqs.put(SCHEDULE_QUEUE, dispatch);
  return { post: p, masto: masto.channel.id };
}

const toMastodon = (id: string) => (body: unknown) => (body as DeliveryMessage).channel_id === id;

describe('a partly refused dispatch batch', () => {
  it('re-sends the refused entry at once: both channels publish without waiting', async () => {
    const g = scheduledOnTwo();
    sqs.failSends('refuse-entry', 1, toMastodon(g.masto));

    const [round] = await drain(sqs, SCHEDULE_QUEUE, dispatcher, { horizonMs: 0 });
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });

    expect(round?.failed).toEqual([]);
    expect(storedPost(table, g.post.id).status).toBe('published');
    expect(platformPosts(world.fakes, 'bluesky')).toHaveLength(1);
    expect(platformPosts(world.fakes, 'mastodon')).toHaveLength(1);
  });

  it('refused for good in that call: the re-dispatch a minute later sends the channel still queued', async () => {
    const g = scheduledOnTwo();
    sqs.failSends('refuse-entry', 3, toMastodon(g.masto));

    // The first dispatch fails (returns to the queue); Bluesky's message went out and starts the post.
    const [first] = await drain(sqs, SCHEDULE_QUEUE, dispatcher, { horizonMs: 0 });
    expect(first?.failed).toHaveLength(1);
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });
    expect(storedPost(table, g.post.id).status).toBe('publishing');

    // The dispatch comes back after the schedule queue's visibility timeout, not the watchdog's 5 min.
    await drain(sqs, SCHEDULE_QUEUE, dispatcher, { horizonMs: visibilityMs('schedule') + 1000 });
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });

    expect(Date.now() - T0.getTime()).toBeLessThan(300_000);
    expect(storedPost(table, g.post.id).status).toBe('published');
    expect(platformPosts(world.fakes, 'bluesky')).toHaveLength(1);
    expect(platformPosts(world.fakes, 'mastodon')).toHaveLength(1);
    expect(sqs.waiting(SCHEDULE_QUEUE)).toEqual([]);
  });
});
