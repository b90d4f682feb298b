import { KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { getChannel, disconnectChannel as markDisconnected } from '#adapters/channels';
import { keys } from '#adapters/keys';
import { clearOpened } from '#adapters/sealed';
import { ApiError } from '#core/errors';
import { connectChannel } from '#usecases/cli/admin';
import { getChannel as getChannelCase } from '#usecases/get-channel';
import { CHOICES_TTL_MS, getChannelOptions } from '#usecases/get-channel-options';
import type { PinterestFake } from '../../fakes/pinterest.ts';
import { useWorld } from '../faults/support/world.ts';
import { ORG_ID, org, orgItem } from '../support/fixtures.ts';
import { serveDataKeys } from '../support/kms.ts';

// getChannelOptions through its use case, against the platforms' contract fakes and an in-memory
// table: the cache (per channel and connection, for CHOICES_TTL_MS), tenancy, a channel that is not
// live, and the platform's failures (never cached). getChannel's 404 across organizations.

const kms = mockClient(KMSClient);
const world = useWorld();
const admitted = async () => undefined;

beforeEach(() => {
  kms.reset();
  serveDataKeys(kms);
  clearOpened();
  world.table.seed(orgItem(org()));
});

async function pinterest(orgId = ORG_ID): Promise<string> {
  const ch = await connectChannel({
    orgId,
    platform: 'pinterest',
    credentials: { access_token: 'token', account_id: '549755885175' },
  });
  return ch.id;
}

const boardReads = () => world.fakes.requests('pinterest').filter((r) => r.path === '/v5/boards').length;

describe('getChannelOptions: the cache', () => {
  it('reads the platform once, then answers from the cache until CHOICES_TTL_MS passed', async () => {
    const id = await pinterest();
    const t0 = new Date();
    const first = await getChannelOptions(ORG_ID, id, t0, admitted);
    expect(first.choices.board_id).toHaveLength(2);
    expect(boardReads()).toBe(1);
    world.table.calls.length = 0;
    const kmsCalls = kms.calls().length;
    const second = await getChannelOptions(
      ORG_ID,
      id,
      new Date(t0.getTime() + CHOICES_TTL_MS - 1000),
      admitted,
    );
    // From the cache: the channel, its sealed tokens and the cached choices in one BatchGetItem, no KMS.
    expect(world.table.calls.map((c) => c.op)).toEqual(['BatchGetItem']);
    expect(kms.calls()).toHaveLength(kmsCalls);
    expect(second.choices).toEqual(first.choices);
    expect(second.choices_read_at).toBe(first.choices_read_at);
    expect(boardReads()).toBe(1);
    const later = await getChannelOptions(
      ORG_ID,
      id,
      new Date(t0.getTime() + CHOICES_TTL_MS + 1000),
      admitted,
    );
    expect(boardReads()).toBe(2);
    expect(later.choices_read_at).not.toBe(first.choices_read_at);
    // One item per channel, with a TTL for DynamoDB to remove it.
    const item = world.table.get(keys.channelOptions(ORG_ID, id));
    expect(item?.ttl).toBeGreaterThan(Math.floor(t0.getTime() / 1000));
  });

  it('a reconnected channel (another connection) is read afresh', async () => {
    const id = await pinterest();
    const t0 = new Date();
    await getChannelOptions(ORG_ID, id, t0, admitted);
    const key = keys.channel(ORG_ID, id);
    world.table.seed({ ...(world.table.get(key) ?? key), connection_id: 'conn_01J0000000000000000000000X' });
    await getChannelOptions(ORG_ID, id, new Date(t0.getTime() + 1000), admitted);
    expect(boardReads()).toBe(2);
  });

  it('a platform failure: empty choices with a note, not cached (the next call asks again)', async () => {
    const id = await pinterest();
    world.fakes.failNext('pinterest', {
      status: 500,
      path: /\/v5\/boards/,
      body: { code: 1, message: 'Oops' },
    });
    const failed = await getChannelOptions(ORG_ID, id, new Date(), admitted);
    expect(failed.choices).toEqual({});
    expect(failed.choices_read_at).toBeNull();
    expect(failed.notes).toEqual([
      expect.objectContaining({ code: 'choices_unavailable', option: 'board_id' }),
    ]);
    expect(failed.notes[0]?.message).not.toContain('token');
    expect(failed.options.board_id).toBeDefined();
    const again = await getChannelOptions(ORG_ID, id, new Date(), admitted);
    expect(again.choices.board_id).toHaveLength(2);
  });

  it('a refused token that cannot be renewed: a reauth_required note saying to reconnect', async () => {
    const ch = await connectChannel({
      orgId: ORG_ID,
      platform: 'pinterest',
      credentials: { access_token: 'token', account_id: '549755885175' },
    });
    world.fakes.fake<PinterestFake>('pinterest').validTokens.clear();
    const res = await getChannelOptions(ORG_ID, ch.id, new Date(), admitted);
    expect(res.choices).toEqual({});
    expect(res.notes).toEqual([expect.objectContaining({ code: 'reauth_required', option: 'board_id' })]);
    expect(res.notes[0]?.message).toMatch(/connect the channel again/);
  });
});

describe('getChannelOptions: which channel', () => {
  it("another organization's channel, or no channel: 404, and the platform is not asked", async () => {
    const id = await pinterest();
    for (const [orgId, channelId] of [
      ['org_01J00000000000000000000000', id],
      [ORG_ID, 'ch_01J00000000000000000000000'],
      [ORG_ID, 'nope'],
    ] as const) {
      const err = await getChannelOptions(orgId, channelId, new Date(), admitted).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe('resource_not_found');
      const read = await getChannelCase(orgId, channelId).catch((e: unknown) => e);
      expect((read as ApiError).code).toBe('resource_not_found');
    }
    expect(boardReads()).toBe(0);
  });

  it('a disconnected channel: its capabilities and options, no platform call, a note saying to reconnect', async () => {
    const id = await pinterest();
    const rec = await getChannel(ORG_ID, id);
    const disconnected = rec ? await markDisconnected(rec, new Date().toISOString(), 1) : null;
    expect(disconnected).toBeTruthy();
    const res = await getChannelOptions(ORG_ID, id, new Date(), admitted);
    expect(res.options.board_id).toBeDefined();
    expect(res.choices).toEqual({});
    expect(res.notes).toEqual([expect.objectContaining({ code: 'channel_not_live', option: 'board_id' })]);
    expect(boardReads()).toBe(0);
  });
});
