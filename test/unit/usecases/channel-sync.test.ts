import { DecryptCommand, KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { countAppRefusal } from '#adapters/app-refusals';
import { getChannelWithCredentials } from '#adapters/channel-credentials';
import { keys } from '#adapters/keys';
import { PlatformError } from '#adapters/platforms/types';
import { clearOpened } from '#adapters/sealed';
import type { ChannelRecord } from '#core/accounts';
import type { ChannelSyncMessage } from '#core/messages';
import { handler as worker } from '#handlers/channel-sync-worker';
import { logger } from '#shared/logger';
import { findDueChannels, RESEND_AFTER_MS } from '#usecases/channel-sync';
import { syncDueEntry } from '#usecases/channel-sync-worker';
import { setPlatformApp } from '#usecases/cli/admin';
import { disconnectChannel } from '#usecases/disconnect-channel';
import { recordChannelFailure } from '#usecases/support/channel-health';
import { FAKE_APPS } from '../../fakes/oauth.ts';
import type { FakeX } from '../../fakes/x.ts';
import { invoke } from '../faults/support/sqs.ts';
import { advance, drain, otherContainer, useWorld } from '../faults/support/world.ts';
import { CHANNEL_SYNC_QUEUE } from '../support/channel-sync.ts';
import { ALLOWS_LANDING, connectFlow } from '../support/connect-flow.ts';
import { channel, channelItem, lambdaContext, ORG_ID, org, orgItem } from '../support/fixtures.ts';
import { serveDataKeys } from '../support/kms.ts';

// The channel sync fanned out (usecases/channel-sync.ts): the finder sends each due entry of the
// sync index once, oldest (nearest expiry) first, and again only when its message was lost; the
// worker looks at a channel only while it is due, so duplicates, overlapping finders and retries
// never renew a token twice in a way that loses it; partial batch failures return only the failed
// message; refusals of the operator's app are reported once per platform and finder run.

const kms = mockClient(KMSClient);
const world = useWorld();
const { connect, channelOf } = connectFlow(world);

beforeEach(async () => {
  kms.reset();
  serveDataKeys(kms);
  clearOpened();
  vi.stubEnv('HERALD_PUBLIC_URL', 'https://api.example.com');
  world.table.seed(orgItem(org(ALLOWS_LANDING)));
  for (const platform of ['x', 'linkedin'] as const)
    await setPlatformApp({
      platform,
      clientId: FAKE_APPS[platform].clientId,
      clientSecret: FAKE_APPS[platform].clientSecret,
    });
});

const iso = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();

/** A channel in the sync index at `nextSyncAt` (the finder reads only the index). */
function seedIndexed(n: number, nextSyncAt: string): ChannelRecord {
  const ch: ChannelRecord = { ...channel(n, 'x'), next_sync_at: nextSyncAt };
  world.table.seed({ ...channelItem(ch), ...keys.channelSync(nextSyncAt, ORG_ID, ch.id) });
  return ch;
}

const sentBodies = () => world.sqs.sentTo(CHANNEL_SYNC_QUEUE).map((s) => s.body as ChannelSyncMessage);
const sentIds = () => sentBodies().map((b) => b.id);
const refreshes = () => world.fakes.fake<FakeX>('x').oauth.stats().refreshes;

/** An X channel whose two-minute token is due for renewal now (half its life gone). */
async function dueXChannel(user: string): Promise<string> {
  const { now } = await connect('x', { fake_token_lifetime: '120', fake_user: user });
  expect(now.status, JSON.stringify(now.error)).toBe('connected');
  return String(now.channel_id);
}

describe('the finder', () => {
  it('sends each due entry once, oldest first across day buckets, and nothing that is not due yet', async () => {
    // Arrange: ids in the opposite order of their times, two days' buckets, one not yet due.
    const a = seedIndexed(5, iso(-26 * 3600_000));
    const b = seedIndexed(4, iso(-3600_000));
    const c = seedIndexed(3, iso(-60_000));
    const later = seedIndexed(2, iso(60_000));

    // Act
    const first = await findDueChannels(new Date());
    const second = await findDueChannels(new Date());

    // Assert
    expect(first).toEqual({ sent: 3, resent: 0, alarms: 0 });
    expect(second).toEqual({ sent: 0, resent: 0, alarms: 0 });
    expect(sentIds()).toEqual([a.id, b.id, c.id]);
    expect(sentBodies()[0]).toEqual({ org_id: ORG_ID, id: a.id, at: a.next_sync_at });

    // Act: its time comes.
    advance(61_000);
    await findDueChannels(new Date());

    // Assert
    expect(sentIds()).toEqual([a.id, b.id, c.id, later.id]);
  });

  it('with more due than one run sends, the nearest expiry goes first and the rest waits its turn in order', async () => {
    // Arrange
    const due = [5, 4, 3, 2, 1].map((n, i) => seedIndexed(n, iso(-(10 - i) * 60_000)));

    // Act
    const first = await findDueChannels(new Date(), { limit: 3 });
    const soon = seedIndexed(9, iso(1000));
    advance(2000);
    const second = await findDueChannels(new Date(), { limit: 3 });

    // Assert: the two left from the first run before the one that fell due since.
    expect([first.sent, second.sent]).toEqual([3, 3]);
    expect(sentIds()).toEqual([...due.map((c) => c.id), soon.id]);
  });

  it('two finders at once never lose an entry; a duplicate they send is harmless (see the worker)', async () => {
    // Arrange
    const chans = [1, 2, 3].map((n) => seedIndexed(n, iso(-60_000 * n)));

    // Act
    await Promise.all([findDueChannels(new Date()), findDueChannels(new Date())]);

    // Assert
    expect(new Set(sentIds())).toEqual(new Set(chans.map((c) => c.id)));
    expect(world.table.get(keys.channelSyncCursor())?.through).toBe(
      keys.channelSync(String(chans[0]?.next_sync_at), ORG_ID, String(chans[0]?.id)).gsi2sk,
    );
  });

  it('a send SQS refuses fails the run and moves no cursor: the next run sends the entries', async () => {
    // Arrange
    const ch = seedIndexed(1, iso(-60_000));
    world.sqs.failSends('reject', 1);

    // Act
    const failed = await findDueChannels(new Date()).catch((e: unknown) => e);
    const again = await findDueChannels(new Date());

    // Assert
    expect(failed).toBeInstanceOf(Error);
    expect(world.table.get(keys.channelSyncCursor())?.through).toBe(
      keys.channelSync(String(ch.next_sync_at), ORG_ID, ch.id).gsi2sk,
    );
    expect(again.sent).toBe(1);
    expect(sentIds()).toEqual([ch.id]);
  });

  it('an entry still due long after its message was sent (lost, or dead-lettered) is sent again, once', async () => {
    // Arrange: sent, and the message never reaches a worker.
    const ch = seedIndexed(1, iso(-60_000));
    await findDueChannels(new Date());
    world.sqs.delete(world.sqs.waiting(CHANNEL_SYNC_QUEUE).map((m) => m.id));

    // Act
    advance(RESEND_AFTER_MS - 120_000);
    const early = await findDueChannels(new Date());
    advance(120_000);
    const late = await findDueChannels(new Date());
    advance(60_000);
    const after = await findDueChannels(new Date());

    // Assert
    expect(early).toMatchObject({ sent: 0, resent: 0 });
    expect(late).toMatchObject({ sent: 1, resent: 1 });
    expect(after).toMatchObject({ sent: 0, resent: 0 });
    expect(sentIds()).toEqual([ch.id, ch.id]);
    // The channel's own time is unchanged: the worker still finds it due.
    expect(channelOf(ch.id)?.next_sync_at).toBe(ch.next_sync_at);
  });

  it('reports the refusals of the operator’s app the workers counted: one line per platform, once', async () => {
    // Arrange
    await countAppRefusal('x', 'x: the platform refused Herald’s app (invalid_client)');
    await countAppRefusal('x', 'x: a later error');
    await countAppRefusal('linkedin', 'linkedin: refused');
    const alarms = vi.spyOn(logger, 'error');

    // Act
    const first = await findDueChannels(new Date());
    const second = await findDueChannels(new Date());

    // Assert
    expect([first.alarms, second.alarms]).toEqual([2, 0]);
    const lines = alarms.mock.calls.filter(([m]) => String(m).includes('operator must act'));
    expect(lines.map(([, extra]) => extra)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          platform: 'x',
          channels: 2,
          error: 'x: the platform refused Herald’s app (invalid_client)',
          PlatformAppRefused: 2,
        }),
        expect.objectContaining({ platform: 'linkedin', channels: 1 }),
      ]),
    );
    expect(lines).toHaveLength(2);
  });

  it('stops at its deadline and leaves the rest for the next run', async () => {
    // Arrange
    seedIndexed(1, iso(-60_000));

    // Act
    const out = await findDueChannels(new Date(), { deadlineMs: Date.now() - 1 });
    const next = await findDueChannels(new Date());

    // Assert
    expect(out.sent).toBe(0);
    expect(next.sent).toBe(1);
  });
});

describe('the worker', () => {
  it('renews a due channel once even when two copies of its message arrive in the same batch', async () => {
    // Arrange
    const id = await dueXChannel('ann');
    advance(61_000);
    const before = await getChannelWithCredentials(ORG_ID, id);
    const refreshesBefore = refreshes();
    await findDueChannels(new Date());
    const [msg] = sentBodies();
    world.sqs.put(CHANNEL_SYNC_QUEUE, msg);

    // Act
    const rounds = await drain(world.sqs, CHANNEL_SYNC_QUEUE, worker);

    // Assert
    expect(rounds.flatMap((r) => r.failed)).toEqual([]);
    expect(refreshes() - refreshesBefore).toBe(1);
    const after = await getChannelWithCredentials(ORG_ID, id);
    expect(after.version).toBe(before.version + 1);
    expect(after.credentials.access_token).not.toBe(before.credentials.access_token);
    expect(channelOf(id)).toMatchObject({ status: 'live', last_error: null });
    expect(Date.parse(String(channelOf(id)?.next_sync_at))).toBeGreaterThan(Date.now());
  });

  it('a duplicate arriving after the sync changes nothing: no platform call, no KMS call', async () => {
    // Arrange
    const id = await dueXChannel('bob');
    advance(61_000);
    await findDueChannels(new Date());
    const [msg] = sentBodies();
    await drain(world.sqs, CHANNEL_SYNC_QUEUE, worker);
    const stored = channelOf(id);
    const platformCalls = world.fakes.requests('x').length;
    const decrypts = kms.commandCalls(DecryptCommand).length;

    // Act
    world.sqs.put(CHANNEL_SYNC_QUEUE, msg);
    const rounds = await drain(world.sqs, CHANNEL_SYNC_QUEUE, worker);

    // Assert
    expect(rounds).toHaveLength(1);
    expect(rounds[0]?.failed).toEqual([]);
    expect(world.fakes.requests('x')).toHaveLength(platformCalls);
    expect(kms.commandCalls(DecryptCommand)).toHaveLength(decrypts);
    expect(channelOf(id)).toEqual(stored);
  });

  it('two overlapping finders and two containers at once: the rotating refresh token is spent once', async () => {
    // Arrange
    const id = await dueXChannel('cyd');
    advance(61_000);
    const refreshesBefore = refreshes();
    await Promise.all([findDueChannels(new Date()), findDueChannels(new Date())]);
    const copies = world.sqs.waiting(CHANNEL_SYNC_QUEUE).length;
    if (copies < 2) world.sqs.put(CHANNEL_SYNC_QUEUE, sentBodies()[0]);

    // Act: each copy in its own container, at the same time.
    const [first, second] = [
      world.sqs.receive(CHANNEL_SYNC_QUEUE, 1),
      world.sqs.receive(CHANNEL_SYNC_QUEUE, 1),
    ];
    const failed = await Promise.all([
      invoke(world.sqs, otherContainer(syncUseCase), first, lambdaContext('a')),
      invoke(world.sqs, otherContainer(syncUseCase), second, lambdaContext('b')),
    ]);

    // Assert
    expect(failed.flat()).toEqual([]);
    expect(refreshes() - refreshesBefore).toBe(1);
    expect(channelOf(id)).toMatchObject({ status: 'live', last_error: null });
    // The stored tokens are the ones X issued last, and they work.
    const stored = await getChannelWithCredentials(ORG_ID, id);
    expect(world.fakes.fake<FakeX>('x').oauth.check(String(stored.credentials.access_token)).state).toBe(
      'valid',
    );
  });

  it('reports only the failed message of a batch; it comes back and succeeds', async () => {
    // Arrange: two due channels; the table refuses every write of the second one's health.
    const a = await dueXChannel('dee');
    const b = await dueXChannel('eve');
    advance(61_000);
    await findDueChannels(new Date());
    world.table.fail({
      op: 'UpdateItem',
      kind: 'InternalServerError',
      times: Number.POSITIVE_INFINITY,
      match: (r) => r.keys.some((k) => k.sk === `CHANNEL#${b}`),
    });

    // Act
    const batch = world.sqs.receive(CHANNEL_SYNC_QUEUE);
    const failed = await invoke(world.sqs, worker, batch, lambdaContext('worker'));

    // Assert
    const byId = new Map(batch.map((m) => [(JSON.parse(m.body) as ChannelSyncMessage).id, m.id]));
    expect(failed).toEqual([byId.get(b)]);
    expect(world.sqs.waiting(CHANNEL_SYNC_QUEUE).map((m) => m.id)).toEqual([byId.get(b)]);
    expect(channelOf(a)).toMatchObject({ status: 'live', last_error: null });

    // Act: the table recovers; the message returns after its visibility timeout.
    world.table.heal();
    const rounds = await drain(world.sqs, CHANNEL_SYNC_QUEUE, worker);

    // Assert
    expect(rounds.flatMap((r) => r.failed)).toEqual([]);
    expect(channelOf(b)).toMatchObject({ status: 'live', last_error: null });
    expect(Date.parse(String(channelOf(b)?.next_sync_at))).toBeGreaterThan(Date.now());
  });

  it('an index entry left behind its channel is put back where the channel says, and stops coming back', async () => {
    // Arrange: the index says due a minute ago; the channel says in an hour.
    const ch: ChannelRecord = { ...channel(1, 'x'), next_sync_at: iso(3600_000) };
    world.table.seed({ ...channelItem(ch), ...keys.channelSync(iso(-60_000), ORG_ID, ch.id) });
    await findDueChannels(new Date());

    // Act
    const rounds = await drain(world.sqs, CHANNEL_SYNC_QUEUE, worker);
    advance(RESEND_AFTER_MS + 120_000);
    const later = await findDueChannels(new Date());

    // Assert
    expect(rounds.flatMap((r) => r.failed)).toEqual([]);
    expect(world.fakes.requests('x')).toHaveLength(0);
    expect(channelOf(ch.id)?.gsi2sk).toBe(keys.channelSync(String(ch.next_sync_at), ORG_ID, ch.id).gsi2sk);
    expect(later).toMatchObject({ sent: 0, resent: 0 });
  });

  it('a delivery that records a failure from an older read leaves the sync index where the sync put it', async () => {
    // Arrange: read (as a delivery would), then the sync moves the channel on.
    const id = await dueXChannel('gus');
    advance(61_000);
    const read = channelOf(id) as ChannelRecord;
    await findDueChannels(new Date());
    await drain(world.sqs, CHANNEL_SYNC_QUEUE, worker);
    const synced = channelOf(id);

    // Act
    const failure = new PlatformError('rate_limited', 'x: too many requests', { retryable: true });
    await recordChannelFailure(read, failure, new Date(), { backoff: false });

    // Assert
    expect(channelOf(id)).toMatchObject({
      last_error: 'x: too many requests',
      next_sync_at: synced?.next_sync_at,
      gsi2sk: synced?.gsi2sk,
    });
  });

  it('a channel disconnected since its message was sent is left alone', async () => {
    // Arrange
    const id = await dueXChannel('fay');
    advance(61_000);
    await findDueChannels(new Date());
    await disconnectChannel(ORG_ID, id, new Date(), async () => undefined);
    const refreshesBefore = refreshes();

    // Act
    const rounds = await drain(world.sqs, CHANNEL_SYNC_QUEUE, worker);

    // Assert
    expect(rounds.flatMap((r) => r.failed)).toEqual([]);
    expect(refreshes()).toBe(refreshesBefore);
    expect(channelOf(id)?.status).toBe('disconnected');
  });
});

const syncUseCase = (msg: never) => syncDueEntry(msg as ChannelSyncMessage, new Date());
