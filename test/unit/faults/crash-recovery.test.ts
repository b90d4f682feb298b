import { describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import { handler as worker } from '#handlers/delivery-worker';
import { sweep } from '#usecases/schedule-sweeper';
import type { FakeBluesky } from '../../fakes/bluesky.ts';
import type { FakeMastodon } from '../../fakes/mastodon.ts';
import type { FakeRequest, FakeResponse } from '../../fakes/server.ts';
import type { ThreadsFake } from '../../fakes/threads.ts';
import type { FakeX } from '../../fakes/x.ts';
import { lambdaContext } from '../support/fixtures.ts';
import { deliveriesWritten, POST_WRITES } from './support/dynamo.ts';
import { invoke, visibilityMs } from './support/sqs.ts';
import {
  advance,
  CREATE_PATH,
  DELIVERY_QUEUE,
  drain,
  platformPosts,
  platformRequests,
  seedDelivery,
  seedThreadDelivery,
  T0,
  type TestedPlatform,
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

const cases: Array<{ platform: TestedPlatform }> = [
  { platform: 'bluesky' },
  { platform: 'mastodon' },
  { platform: 'threads' },
  { platform: 'x' },
];

/** The request after which the post exists on the platform: a 2xx answer to its create call. */
const accepted = (platform: TestedPlatform) => (req: FakeRequest, res: FakeResponse) =>
  req.method === 'POST' && CREATE_PATH[platform].test(req.path) && res.status >= 200 && res.status < 300;
const creates = (platform: TestedPlatform) =>
  platformRequests(world.fakes, platform, 'POST', CREATE_PATH[platform]);
const posts = (platform: TestedPlatform) => platformPosts(world.fakes, platform);
/** The external id Herald must record for the platform's post. */
const externalId = (platform: TestedPlatform) => posts(platform)[0]?.id;

/** Seeds one delivery to `platform` and arms the kill switch: no write succeeds once the platform accepted. */
function killedAfterAcceptance(platform: TestedPlatform, text: string) {
  const g = seedDelivery(world, platform, text);
  let dead = false;
  whenPlatformAnswers(world.fakes, platform, (req, res) => {
    if (accepted(platform)(req, res)) dead = true;
  });
  table.fail({
    op: POST_WRITES,
    kind: 'ECONNRESET',
    times: Number.POSITIVE_INFINITY,
    match: () => dead,
  });
  return {
    ...g,
    revive: () => {
      dead = false;
      table.heal();
    },
  };
}

describe.each(cases)('a worker killed after $platform accepted the post', (c) => {
  it('is reconciled by the redelivery after the lease: recorded once, not published again', async () => {
    // Arrange
    const k = killedAfterAcceptance(c.platform, `Crash-tested post for ${c.platform}`);

    // Act 1: the first receive publishes, then dies before recording anything.
    const first = await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });

    // Assert 1
    expect(first.map((r) => r.failed.length)).toEqual([1]);
    expect(posts(c.platform)).toHaveLength(1);
    expect(k.delivery()).toMatchObject({ stage: 'sending', attempts: 1, external_id: null });
    const createsBefore = creates(c.platform).length;

    // Act 2: a duplicate message while the lease (90 s) is live, then SQS's redelivery (120 s).
    advance(45_000);
    sqs.put(DELIVERY_QUEUE, k.msg);
    const duringLease = await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });
    k.revive();
    const after = await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert 2
    expect(duringLease.map((r) => r.failed.length)).toEqual([1]); // busy: returned, not sent
    expect(after[0]?.at).toBe(T0.getTime() + visibilityMs('delivery'));
    expect(after.every((r) => r.failed.length === 0)).toBe(true);
    expect(posts(c.platform)).toHaveLength(1);
    expect(k.delivery()).toMatchObject({
      stage: 'published',
      attempts: 1,
      external_id: externalId(c.platform),
      error: null,
    });
    // Only Mastodon repeats its create call — with the same Idempotency-Key, which returns the same status.
    expect(creates(c.platform).length - createsBefore).toBe(c.platform === 'mastodon' ? 1 : 0);
    expect(sqs.waiting(DELIVERY_QUEUE)).toEqual([]);
  });
});

/** Past Mastodon's one-hour Idempotency-Key: the instance forgot it (the other platforms have none). */
function anHourLater(platform: TestedPlatform) {
  advance(3_600_000);
  if (platform === 'mastodon') world.fakes.fake<FakeMastodon>('mastodon').forgetIdempotencyKeys();
}

describe.each(cases)('an earlier $platform attempt whose outcome is unknown, and a long wait', (c) => {
  it('killed after the platform accepted, the account paused for 2 h meanwhile: recorded once, not published again', async () => {
    // Arrange
    const k = killedAfterAcceptance(c.platform, `Crash-tested post for ${c.platform}, then a pause`);
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });
    k.revive();
    const key = keys.channel(k.post.org_id, k.channel.id);
    table.seed({ ...table.get(key), ...key, pace_until: new Date(Date.now() + 7_200_000).toISOString() });

    // Act: SQS's redelivery after the lease, then the rest of the pause and past the key's hour.
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 130_000 });
    anHourLater(c.platform);
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 3 * 3_600_000 });

    // Assert
    expect(posts(c.platform)).toHaveLength(1);
    expect(k.delivery()).toMatchObject({ stage: 'published', external_id: externalId(c.platform) });
    expect(k.delivery().unresolved_since).toBeUndefined();
  });

  it('the platform made the post but answered 503 (Retry-After: 7200): the retry finds it, one create call', async () => {
    // Arrange
    const g = seedDelivery(world, c.platform, `A ${c.platform} post whose answer was lost`);
    let lost = false;
    whenPlatformAnswers(world.fakes, c.platform, (req, res) => {
      if (lost || !accepted(c.platform)(req, res)) return;
      lost = true;
      res.status = 503;
      res.headers = { ...res.headers, 'retry-after': '7200' };
      res.body = { error: 'ServiceUnavailable', message: 'Service Unavailable' };
    });

    // Act
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });
    anHourLater(c.platform);
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 3 * 3_600_000 });

    // Assert
    expect(lost).toBe(true);
    expect(posts(c.platform)).toHaveLength(1);
    expect(creates(c.platform)).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', external_id: externalId(c.platform) });
  });
});

describe('recovery paths beyond the SQS redelivery', () => {
  it('the message lost too: the sweeper watchdog re-sends the abandoned delivery, which reconciles (Threads)', async () => {
    // Arrange: the worker dies after threads_publish, and its message is gone with it.
    const k = killedAfterAcceptance('threads', 'Threads post whose message was lost');
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
    expect(posts('threads')).toHaveLength(1);
    expect(creates('threads')).toHaveLength(1);
    expect(k.delivery()).toMatchObject({ stage: 'published', external_id: externalId('threads') });
  });

  it('Mastodon after its 1-hour idempotency window: reconcile finds the status by its text', async () => {
    // Arrange: killed after POST /api/v1/statuses; the message is only retried two hours later,
    // when the instance has forgotten the Idempotency-Key.
    const k = killedAfterAcceptance(
      'mastodon',
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
    expect(posts('mastodon')).toHaveLength(1);
    expect(platformRequests(world.fakes, 'mastodon', 'GET', /\/accounts\/[^/]+\/statuses$/).length).toBe(1);
    expect(k.delivery()).toMatchObject({ stage: 'published', external_id: externalId('mastodon') });
  });

  it('Mastodon, text only (no checkpoint), the attempt dead before any status existed and retried after the hour: looked up, then posted once', async () => {
    // Arrange: the POST failed (503, nothing made) and the worker died before recording it.
    const g = seedDelivery(world, 'mastodon', 'Mastodon status whose first POST never landed');
    world.fakes.failNext('mastodon', { status: 503, body: { error: 'Service Unavailable' } });
    table.fail({
      op: POST_WRITES,
      kind: 'ECONNRESET',
      times: Number.POSITIVE_INFINITY,
      match: (v) => deliveriesWritten(v)[0]?.stage === 'retrying',
    });
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });
    sqs.delete(sqs.waiting(DELIVERY_QUEUE).map((m) => m.id));
    expect(g.delivery()).toMatchObject({ stage: 'sending', attempts: 1 });
    expect(g.delivery().checkpoint ?? null).toBeNull();
    advance(2 * 3_600_000);
    world.fakes.fake<FakeMastodon>('mastodon').forgetIdempotencyKeys();
    table.heal();

    // Act
    sqs.put(DELIVERY_QUEUE, g.msg);
    await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert: the lookup found nothing, so it was posted — once.
    expect(platformRequests(world.fakes, 'mastodon', 'GET', /\/accounts\/[^/]+\/statuses$/).length).toBe(1);
    expect(posts('mastodon')).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', external_id: externalId('mastodon') });
  });

  it('the outcome record lost after the platform accepted (Bluesky): the redelivery finds the record by the key it chose, recorded once', async () => {
    // Arrange: only the outcome record fails; the "posting" checkpoint (rkey, did) got through.
    const g = seedDelivery(world, 'bluesky', 'Checkpointed Bluesky post');
    table.fail({
      op: POST_WRITES,
      kind: 'InternalServerError',
      times: 3,
      match: (v) => deliveriesWritten(v)[0]?.stage === 'published',
    });

    // Act
    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert: the recovery looked the record up (no second createRecord), and recorded its URI.
    expect(rounds.map((r) => r.failed.length)).toEqual([1, 0]);
    expect(posts('bluesky')).toHaveLength(1);
    expect(creates('bluesky')).toHaveLength(1);
    expect(platformRequests(world.fakes, 'bluesky', 'GET', /getRecord$/).length).toBeGreaterThan(0);
    expect(g.delivery()).toMatchObject({
      stage: 'published',
      external_id: externalId('bluesky'),
    });
  });
});

/** What each platform's fake post says and answers (the parent's external id), in creation order. */
function replies(platform: TestedPlatform): Array<{ id: string; text: string; parent: string | null }> {
  const fakes = world.fakes;
  switch (platform) {
    case 'bluesky':
      return fakes.fake<FakeBluesky>('bluesky').posts.map((p) => ({
        id: p.uri,
        text: p.text,
        parent: ((p.record.reply as { parent?: { uri: string } } | undefined)?.parent?.uri ?? null) as
          | string
          | null,
      }));
    case 'mastodon':
      return fakes
        .fake<FakeMastodon>('mastodon')
        .posts.map((p) => ({ id: p.id, text: p.text, parent: p.in_reply_to_id }));
    case 'threads':
      return fakes
        .fake<ThreadsFake>('threads')
        .posts.map((p) => ({ id: p.id, text: p.text ?? '', parent: p.repliedTo ?? null }));
    case 'x':
      return fakes.fake<FakeX>('x').posts.map((p) => ({ id: p.id, text: p.text, parent: p.in_reply_to }));
  }
}

describe.each(cases)('a $platform thread whose worker was killed between parts', (c) => {
  it('killed after item 2 of 5 was accepted by the platform, before it was recorded: no part lost, none repeated', async () => {
    // Arrange: a root, four follow-ups and a first comment; every write fails once the platform
    // accepted its second create call (item 2), as if the Lambda died there.
    const texts = [1, 2, 3, 4, 5].map((i) => `Crash-tested ${c.platform} thread ${i}/5`);
    const g = seedThreadDelivery(world, c.platform, texts, `Crash-tested ${c.platform} comment`);
    let accepts = 0;
    let dead = false;
    whenPlatformAnswers(world.fakes, c.platform, (req, res) => {
      if (accepted(c.platform)(req, res) && ++accepts === 2) dead = true;
    });
    table.fail({ op: POST_WRITES, kind: 'ECONNRESET', times: Number.POSITIVE_INFINITY, match: () => dead });

    // Act 1: the first receive publishes the root (recorded) and item 2, then dies.
    const first = await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });
    expect(first.map((r) => r.failed.length)).toEqual([1]);
    expect(posts(c.platform)).toHaveLength(2);
    const between = g.delivery();
    expect(between.stage).toBe('sending');
    expect(between.external_id).toBe(posts(c.platform)[0]?.id);
    expect(between.thread?.map((p) => p.stage)).toEqual(['queued', 'queued', 'queued', 'queued']);
    const createsBefore = creates(c.platform).length;

    // Act 2: alive again; SQS redelivers after the visibility timeout (the lease has run out).
    dead = false;
    table.heal();
    const after = await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert: six posts, each once, each answering the one before; item 2 found, not re-sent.
    expect(after.every((r) => r.failed.length === 0)).toBe(true);
    const made = replies(c.platform);
    expect(made.map((p) => p.text)).toEqual([...texts, `Crash-tested ${c.platform} comment`]);
    expect(made[0]?.parent).toBeNull();
    made.slice(1).forEach((p, k) => {
      expect(p.parent, p.text).toBe(made[k]?.id);
    });
    const d = g.delivery();
    expect(d).toMatchObject({ stage: 'published', attempts: 1, external_id: made[0]?.id, error: null });
    expect(d.thread?.map((p) => [p.stage, p.external_id])).toEqual(
      made.slice(1, 5).map((p) => ['published', p.id]),
    );
    expect(d.first_comment).toMatchObject({ stage: 'published', external_id: made[5]?.id });
    expect(d.unresolved_since).toBeUndefined();
    // Three more parts and the comment were created; item 2 only by Mastodon's repeat under its key.
    expect(creates(c.platform).length - createsBefore).toBe(4 + (c.platform === 'mastodon' ? 1 : 0));
  });
});
