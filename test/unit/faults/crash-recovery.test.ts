import { describe, expect, it } from 'vitest';
import type { Platform } from '#core/platforms';
import { handler as worker } from '#handlers/delivery-worker';
import { sweep } from '#usecases/schedule';
import type { FakeBluesky } from '../../fakes/bluesky.ts';
import type { FakeMastodon } from '../../fakes/mastodon.ts';
import type { FakeRequest, FakeResponse } from '../../fakes/server.ts';
import type { ThreadsFake } from '../../fakes/threads.ts';
import type { FakeX } from '../../fakes/x.ts';
import { lambdaContext } from '../support/fixtures.ts';
import { invoke } from './support/sqs.ts';
import {
  advance,
  DELIVERY_QUEUE,
  deliveryOf,
  drain,
  platformRequests,
  seedPublishing,
  T0,
  useWorld,
  whenPlatformAnswers,
} from './support/world.ts';

// Fault injection, part 3: a worker killed between the platform's acceptance and our record of it.
// From the moment the platform's fake has made the post, every write of the worker fails (as if its
// Lambda had died there): the SQS message stays, the delivery stays `sending` under its lease. The
// redelivery after the lease expired must reconcile — find the post through the platform's
// idempotency, the checkpoint or a lookup — record it, and never publish a second time.

const world = useWorld();
const { table, sqs } = world;

interface Case {
  platform: Platform;
  /** The request after which the post exists on the platform. */
  accepted: (req: FakeRequest, res: FakeResponse) => boolean;
  posts: () => Array<{ id: string }>;
  /** The external id Herald must record for the platform's post. */
  externalId: () => string | undefined;
}

const posted = (method: string, path: RegExp) => (req: FakeRequest, res: FakeResponse) =>
  req.method === method && path.test(req.path) && res.status >= 200 && res.status < 300;

const cases: Case[] = [
  {
    platform: 'bluesky',
    accepted: posted('POST', /^\/xrpc\/com\.atproto\.repo\.createRecord$/),
    posts: () => world.fakes.fake<FakeBluesky>('bluesky').posts.map((p) => ({ id: p.uri })),
    externalId: () => world.fakes.fake<FakeBluesky>('bluesky').posts[0]?.uri,
  },
  {
    platform: 'mastodon',
    accepted: posted('POST', /^\/api\/v1\/statuses$/),
    posts: () => world.fakes.fake<FakeMastodon>('mastodon').posts,
    externalId: () => world.fakes.fake<FakeMastodon>('mastodon').posts[0]?.id,
  },
  {
    platform: 'threads',
    accepted: posted('POST', /\/threads_publish$/),
    posts: () => world.fakes.fake<ThreadsFake>('threads').posts,
    externalId: () => world.fakes.fake<ThreadsFake>('threads').posts[0]?.id,
  },
  {
    platform: 'x',
    accepted: posted('POST', /^\/2\/tweets$/),
    posts: () => world.fakes.fake<FakeX>('x').posts,
    externalId: () => world.fakes.fake<FakeX>('x').posts[0]?.id,
  },
];

/** Seeds one delivery to `c.platform` and arms the kill switch: no write succeeds once the platform accepted. */
function killedAfterAcceptance(c: Case, text: string) {
  const seeded = seedPublishing(table, world.fakes, [c.platform], text);
  const [msg] = seeded.messages;
  const [ch] = seeded.channels;
  if (!msg || !ch) throw new Error('unreachable');
  let dead = false;
  whenPlatformAnswers(world.fakes, c.platform, (req, res) => {
    if (c.accepted(req, res)) dead = true;
  });
  table.fail({
    op: 'PutItem',
    kind: 'ECONNRESET',
    times: Number.POSITIVE_INFINITY,
    match: () => dead,
  });
  sqs.put(DELIVERY_QUEUE, msg);
  return {
    ...seeded,
    msg,
    ch,
    delivery: () => deliveryOf(table, seeded.post.id, ch.id),
    revive: () => {
      dead = false;
      table.heal();
    },
  };
}

describe.each(cases)('a worker killed after $platform accepted the post', (c) => {
  it('is reconciled by the redelivery after the lease: recorded once, not published again', async () => {
    // Arrange
    const k = killedAfterAcceptance(c, `Crash-tested post for ${c.platform}`);

    // Act 1: the first receive publishes, then dies before recording anything.
    const first = await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });

    // Assert 1
    expect(first.map((r) => r.failed.length)).toEqual([1]);
    expect(c.posts()).toHaveLength(1);
    expect(k.delivery()).toMatchObject({ stage: 'sending', attempts: 1, external_id: null });
    const creates = world.fakes.requests(c.platform).filter((r) => c.accepted(r, { status: 200 })).length;

    // Act 2: a duplicate message while the lease (90 s) is live, then SQS's redelivery (120 s).
    advance(45_000);
    sqs.put(DELIVERY_QUEUE, k.msg);
    const duringLease = await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });
    k.revive();
    const after = await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert 2
    expect(duringLease.map((r) => r.failed.length)).toEqual([1]); // busy: returned, not sent
    expect(after[0]?.at).toBe(T0.getTime() + 120_000);
    expect(after.every((r) => r.failed.length === 0)).toBe(true);
    expect(c.posts()).toHaveLength(1);
    expect(k.delivery()).toMatchObject({
      stage: 'published',
      attempts: 1,
      external_id: c.externalId(),
      error: null,
    });
    // Only Mastodon repeats its create call — with the same Idempotency-Key, which returns the same status.
    const createsAfter = world.fakes
      .requests(c.platform)
      .filter((r) => c.accepted(r, { status: 200 })).length;
    expect(createsAfter - creates).toBe(c.platform === 'mastodon' ? 1 : 0);
    expect(sqs.waiting(DELIVERY_QUEUE)).toEqual([]);
  });
});

describe('recovery paths beyond the SQS redelivery', () => {
  it('the message lost too: the sweeper watchdog re-sends the abandoned delivery, which reconciles (Threads)', async () => {
    // Arrange: the worker dies after threads_publish, and its message is gone with it.
    const c = cases.find((x) => x.platform === 'threads') as Case;
    const k = killedAfterAcceptance(c, 'Threads post whose message was lost');
    const [m] = sqs.receive(DELIVERY_QUEUE);
    if (!m) throw new Error('no message');
    expect(await invoke(sqs, worker, [m], lambdaContext('worker'))).toEqual([m.id]);
    sqs.delete([m.id]);
    k.revive();
    expect(k.delivery()).toMatchObject({
      stage: 'sending',
      checkpoint: { container_id: expect.any(String) },
    });

    // Act: the sweeper runs each minute until its watchdog (5 min after the claim) re-sends it.
    let redriven = 0;
    for (let minute = 1; minute <= 7 && redriven === 0; minute++) {
      advance(60_000);
      redriven = (await sweep(new Date())).redriven;
    }
    await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert
    expect(redriven).toBe(1);
    expect(c.posts()).toHaveLength(1);
    expect(platformRequests(world.fakes, 'threads', 'POST', /\/threads_publish$/)).toHaveLength(1);
    expect(k.delivery()).toMatchObject({ stage: 'published', external_id: c.externalId() });
  });

  it('Mastodon after its 1-hour idempotency window: reconcile finds the status by its text', async () => {
    // Arrange: killed after POST /api/v1/statuses; the message is only retried two hours later,
    // when the instance has forgotten the Idempotency-Key.
    const c = cases.find((x) => x.platform === 'mastodon') as Case;
    const k = killedAfterAcceptance(
      c,
      'Mastodon status recovered\n\nafter an hour: https://example.com/a?b=1',
    );
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });
    sqs.delete(sqs.waiting(DELIVERY_QUEUE).map((m) => m.id));
    advance(2 * 3_600_000);
    world.fakes.fake<FakeMastodon>('mastodon').forgetIdempotencyKeys();
    k.revive();

    // Act
    sqs.put(DELIVERY_QUEUE, k.msg);
    await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert: found through the account's statuses (HTML rendered, linkified), not re-posted.
    expect(c.posts()).toHaveLength(1);
    expect(platformRequests(world.fakes, 'mastodon', 'GET', /\/accounts\/[^/]+\/statuses$/).length).toBe(1);
    expect(k.delivery()).toMatchObject({ stage: 'published', external_id: c.externalId() });
  });

  it('killed after the success checkpoint was saved (Bluesky): reconcile answers from the checkpoint', async () => {
    // Arrange: only the outcome record is lost; the connector's "published" checkpoint got through.
    const seeded = seedPublishing(table, world.fakes, ['bluesky'], 'Checkpointed Bluesky post');
    const [msg] = seeded.messages;
    const [ch] = seeded.channels;
    if (!msg || !ch) throw new Error('unreachable');
    table.fail({
      op: 'PutItem',
      kind: 'InternalServerError',
      times: 3,
      match: (v) =>
        Object.values((v.items[0]?.deliveries ?? {}) as Record<string, { stage: string }>)[0]?.stage ===
        'published',
    });
    sqs.put(DELIVERY_QUEUE, msg);

    // Act
    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert: the recovery asked the PDS nothing (no getRecord), and recorded the checkpointed URI.
    const bsky = world.fakes.fake<FakeBluesky>('bluesky');
    expect(rounds.map((r) => r.failed.length)).toEqual([1, 0]);
    expect(bsky.posts).toHaveLength(1);
    expect(platformRequests(world.fakes, 'bluesky', 'GET', /getRecord$/)).toHaveLength(0);
    expect(deliveryOf(table, seeded.post.id, ch.id)).toMatchObject({
      stage: 'published',
      external_id: bsky.posts[0]?.uri,
    });
  });
});
