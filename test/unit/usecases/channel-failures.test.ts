import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { getChannelWithCredentials, sealCredentials } from '#adapters/channel-credentials';
import { keys } from '#adapters/keys';
import { clearOpened } from '#adapters/sealed';
import { decodeRecord } from '#adapters/stream-records';
import type { ChannelRecord } from '#core/accounts';
import { OAUTH_PLATFORMS as OAUTH_PLATFORMS_OF_APPS } from '#core/connections';
import type { Platform } from '#core/platforms';
import { startPublishing } from '#core/posts';
import { logger } from '#shared/logger';
import { findDueChannels } from '#usecases/channel-sync';
import { syncChannel } from '#usecases/channel-sync-worker';
import { setPlatformApp } from '#usecases/cli/admin';
import { deliver } from '#usecases/delivery-worker';
import { disconnectChannel } from '#usecases/disconnect-channel';
import { getChannelConnection } from '#usecases/get-channel-connection';
import { oauthCallback } from '#usecases/oauth-callback';
import { channelTokens } from '#usecases/support/channel-tokens';
import { channelEvents } from '#usecases/support/relay-post-changes';
import {
  asFailure,
  documentedErrors,
  OAUTH_PLATFORMS,
  type OAuthPlatform,
} from '../../fakes/documented-errors.ts';
import { FAKE_APPS } from '../../fakes/oauth.ts';
import { advance, storedPost, useWorld, whenPlatformAnswers } from '../faults/support/world.ts';
import { syncDueChannels } from '../support/channel-sync.ts';
import { ALLOWS_LANDING, connectFlow, LANDING } from '../support/connect-flow.ts';
import { fixedId, ORG_ID, org, orgItem, post, postItem } from '../support/fixtures.ts';
import { dataKey, decrypt, serveDataKeys } from '../support/kms.ts';

// Channel connections under failure (docs/api/channels.md, "When a channel fails"): who has to act when
// a platform refuses — the person (reauth_required, one event), the operator (the channel stays
// live, an alarm), or time (backoff) — and the races of reconnects, refreshes and callbacks.

const kms = mockClient(KMSClient);
const world = useWorld();
const { create, consent, callback, connect, channelOf } = connectFlow(world);

/** The OAuth platforms whose tokens Herald renews with the operator's app (client id and secret). */
const RENEWED_WITH_APP: Platform[] = ['x', 'linkedin', 'tiktok', 'youtube', 'pinterest'];
/** Every platform whose app the operator registers (Mastodon registers itself per instance). */
const OAUTH: Platform[] = [...OAUTH_PLATFORMS_OF_APPS];

beforeEach(async () => {
  kms.reset();
  serveDataKeys(kms);
  clearOpened();
  vi.stubEnv('HERALD_PUBLIC_URL', 'https://api.example.com');
  world.table.seed(orgItem(org(ALLOWS_LANDING)));
  for (const platform of OAUTH) await setApp(platform);
});

const setApp = (platform: Platform, clientSecret = FAKE_APPS[platform].clientSecret) =>
  setPlatformApp({ platform, clientId: FAKE_APPS[platform].clientId, clientSecret });

/** The channel events the stream relay would emit for what the table recorded so far. */
const channelEventTypes = () =>
  world.table
    .takeStream()
    .map(decodeRecord)
    .filter((c) => c.entity === 'channel')
    .flatMap((c) =>
      channelEvents({
        eventId: c.eventId,
        timeMs: c.timeMs,
        old: c.old as ChannelRecord | undefined,
        new: c.new as ChannelRecord | undefined,
      }),
    )
    .map((e) => e.type);

const inSyncIndex = (id: string) => Boolean(channelOf(id)?.gsi2pk);

const tokensOf = (channelId: string, s: { credentials: Record<string, unknown>; version: number }) =>
  channelTokens({ orgId: ORG_ID, channelId, platform: 'x', credentials: s.credentials, version: s.version });

/**
 * Runs `race` inside every KMS call of `command` whose encryption context has `purpose` (a window
 * between a read and a write), then answers that call as KMS would.
 */
function raceWhenKms(
  command: typeof GenerateDataKeyCommand | typeof DecryptCommand,
  purpose: string,
  race: () => Promise<void>,
): void {
  const inside = async (input: { EncryptionContext?: Record<string, string> }) => {
    if (input.EncryptionContext?.purpose === purpose) await race();
  };
  if (command === GenerateDataKeyCommand)
    kms.on(GenerateDataKeyCommand).callsFake(async (input) => (await inside(input), dataKey(input)));
  else kms.on(DecryptCommand).callsFake(async (input) => (await inside(input), decrypt(input)));
}

/** A channel of `platform` whose access token expires within a minute (the sync renews it now). */
async function expiringChannel(platform: Platform): Promise<string> {
  const { now } = await connect(platform, { fake_token_lifetime: '120' });
  expect(now.status, JSON.stringify(now.error)).toBe('connected');
  world.table.takeStream();
  // Half its life gone: the sync is due (usecases/support/channel-connect.ts nextSyncAt).
  advance(61_000);
  return String(now.channel_id);
}

describe("the operator's app refused: the channel stays live and the operator is alarmed", () => {
  it.each(RENEWED_WITH_APP)(
    '%s: a rotated client secret not yet set in Herald is not a re-authorization',
    async (platform) => {
      // Arrange: the operator rotated the app's secret at the platform, not in Herald.
      const id = await expiringChannel(platform);
      await setApp(platform, 'the-old-secret');
      const alarms = vi.spyOn(logger, 'error');

      // Act
      const counts = await syncDueChannels(world.sqs, new Date());

      // Assert
      expect(counts.operator).toBe(1);
      expect(channelOf(id)).toMatchObject({
        status: 'live',
        last_error: expect.stringMatching(/platform app/),
      });
      expect(inSyncIndex(id)).toBe(true);
      expect(channelEventTypes()).toEqual([]);
      const lines = alarms.mock.calls.filter(([m]) => String(m).includes('operator must act'));
      expect(lines).toHaveLength(1);
      expect(lines[0]?.[1]).toMatchObject({ platform, channels: 1, PlatformAppRefused: 1 });

      // Act: the operator sets the new secret; the next look renews and clears the error.
      await setApp(platform);
      advance(2 * 3600_000);
      const after = await syncChannel(ORG_ID, id, new Date());

      // Assert
      expect(after).toBe('refreshed');
      expect(channelOf(id)).toMatchObject({ status: 'live', last_error: null });
    },
  );

  it('x: deliveries the app is refused for are counted, and the finder reports them in one line', async () => {
    // Arrange: an X channel whose token must be renewed, a rotated secret, three posts due on it.
    const id = await expiringChannel('x');
    await setApp('x', 'the-old-secret');
    const posts = [1, 2, 3].map((n) =>
      startPublishing(
        post({
          id: fixedId('post', 20 + n),
          variants: [
            { id: fixedId('variant', 20 + n), channel_id: id, body: `Post ${n}`, media: [], options: {} },
          ],
        }),
        new Date(Date.now() - 1000),
      ),
    );
    world.table.seed(...posts.map(postItem));
    const alarms = vi.spyOn(logger, 'error');
    const lines = () => alarms.mock.calls.filter(([m]) => String(m).includes('operator must act'));

    // Act: the worker's batch, then the finder's run.
    const outcomes = await Promise.all(
      posts.map((p) => deliver({ org_id: ORG_ID, post_id: p.id, channel_id: id, round: p.round })),
    );
    const fromWorkers = lines().length;
    await findDueChannels(new Date());

    // Assert: no line per delivery; one for the platform, counting the three refusals.
    expect(outcomes).toEqual(['retrying', 'retrying', 'retrying']);
    expect(fromWorkers).toBe(0);
    expect(lines().map(([, extra]) => extra)).toEqual([
      expect.objectContaining({ platform: 'x', channels: 3, PlatformAppRefused: 3 }),
    ]);
  });

  it.each([
    [
      'unauthorized_client',
      401,
      { error: 'unauthorized_client', error_description: 'Missing valid authorization header' },
    ],
    ['invalid_client', 401, { error: 'invalid_client', error_description: 'Client authentication failed' }],
    [
      'invalid_request (not a grant refusal)',
      400,
      { error: 'invalid_request', error_description: 'Missing required parameter [grant_type].' },
    ],
    ['an HTML page with 200', 200, '<html><body>Maintenance</body></html>'],
  ])('x: a token endpoint answering %s keeps every channel live', async (_name, status, body) => {
    // Arrange: two X channels of two people.
    const first = await connect('x', { fake_token_lifetime: '120' });
    const second = await connect('x', { fake_token_lifetime: '120', fake_user: 'zoe' });
    const [a, b] = [String(first.now.channel_id), String(second.now.channel_id)];
    world.table.takeStream();
    advance(61_000);
    world.fakes.failNext('x', {
      status,
      path: /oauth2\/token/,
      times: 2,
      body,
      headers: { 'content-type': typeof body === 'string' ? 'text/html' : 'application/json' },
    });
    const alarms = vi.spyOn(logger, 'error');

    // Act
    const counts = await syncDueChannels(world.sqs, new Date());

    // Assert: both live, one alarm line for the platform (not one per channel).
    expect(counts).toMatchObject({ operator: 2, reauth_required: 0 });
    for (const id of [a, b]) expect(channelOf(id)?.status).toBe('live');
    expect(channelEventTypes()).toEqual([]);
    const lines = alarms.mock.calls.filter(([m]) => String(m).includes('operator must act'));
    expect(lines.map(([, extra]) => extra)).toEqual([
      expect.objectContaining({ platform: 'x', channels: 2 }),
    ]);
  });

  it.each([...OAUTH, 'mastodon' as const])(
    '%s: a code exchange the app is refused for fails the session token_exchange_failed, with an alarm',
    async (platform) => {
      // Arrange
      const session = await create({
        platform,
        redirect_uri: LANDING,
        ...(platform === 'mastodon' ? { instance: world.fakes.url('mastodon') } : {}),
      });
      const back = await consent(session.authorize_url);
      if (platform === 'mastodon')
        world.fakes.failNext('mastodon', {
          status: 401,
          path: /oauth\/token/,
          body: {
            error: 'invalid_client',
            error_description: 'Client authentication failed due to unknown client.',
          },
        });
      else await setApp(platform, 'the-old-secret');
      const alarms = vi.spyOn(logger, 'error');

      // Act
      const landed = await callback(platform, back);

      // Assert
      expect(landed.searchParams.get('error')).toBe('token_exchange_failed');
      const lines = alarms.mock.calls.filter(([m]) => String(m).includes('operator must act'));
      expect(lines.map(([, extra]) => extra)).toEqual([expect.objectContaining({ platform })]);
    },
  );
});

describe("Meta's throttling is a try-later, not a refused grant", () => {
  it.each([
    [4, 400],
    [17, 400],
    [32, 403],
    [613, 400],
  ])(
    'threads: a refresh answered with code %i (HTTP %i) keeps the channel live and backs off',
    async (code, status) => {
      // Arrange
      const id = await expiringChannel('threads');
      world.fakes.failNext('threads', {
        status,
        path: /refresh_access_token/,
        body: {
          error: {
            message: `(#${code}) Application request limit reached`,
            type: 'OAuthException',
            code,
            fbtrace_id: 'A1',
          },
        },
      });

      // Act
      const result = await syncChannel(ORG_ID, id, new Date());

      // Assert
      expect(result).toBe('retrying');
      expect(channelOf(id)).toMatchObject({ status: 'live', sync_failures: 1 });
      expect(channelEventTypes()).toEqual([]);
    },
  );

  it.each([
    [17, 400],
    [613, 403],
  ])(
    'facebook: a code exchange answered with code %i (HTTP %i) fails platform_unavailable, not token_exchange_failed',
    async (code, status) => {
      const session = await create({ platform: 'facebook', redirect_uri: LANDING });
      const back = await consent(session.authorize_url);
      world.fakes.failNext('facebook', {
        status,
        path: /oauth\/access_token/,
        body: {
          error: { message: 'User request limit reached', type: 'OAuthException', code, fbtrace_id: 'A2' },
        },
      });
      const landed = await callback('facebook', back);
      expect(landed.searchParams.get('error')).toBe('platform_unavailable');
    },
  );
});

describe('a refused token Herald cannot renew needs the person', () => {
  it('linkedin without a platform app: a revoked token fails the delivery auth_expired and the channel needs re-authorization, once', async () => {
    // Arrange: a LinkedIn channel, then no LinkedIn app on this deployment, then the member revokes.
    const { now } = await connect('linkedin');
    const id = String(now.channel_id);
    world.table.items.delete(`PLATFORMAPP#linkedin\u0000APP`);
    const { credentials } = await getChannelWithCredentials(ORG_ID, id);
    await fetch(`${world.fakes.origin}/__fakes/linkedin/revoke`, {
      method: 'POST',
      body: JSON.stringify({ access_token: credentials.access_token }),
    });
    const p = startPublishing(
      post({
        id: fixedId('post', 7),
        variants: [{ id: fixedId('variant', 7), channel_id: id, body: 'Hello', media: [], options: {} }],
      }),
      new Date(Date.now() - 1000),
    );
    world.table.seed(postItem(p));
    world.table.takeStream();

    // Act
    const outcome = await deliver({ org_id: ORG_ID, post_id: p.id, channel_id: id, round: p.round });

    // Assert
    expect(outcome).toBe('failed');
    const delivery = storedPost(world.table, p.id).deliveries[id];
    expect(delivery).toMatchObject({ stage: 'failed', error_category: 'auth_expired' });
    expect(channelOf(id)).toMatchObject({
      status: 'reauth_required',
      last_error: expect.stringMatching(/no linkedin platform app is configured/),
    });
    expect(channelEventTypes()).toEqual(['channel.reauth_required']);
    // Still looked at (hourly): a repaired app or a grant that was fine after all brings it back.
    expect(inSyncIndex(id)).toBe(true);
  });

  it('the sync renews a refused token before it decides the person must act (as a delivery does)', async () => {
    // Arrange: X tokens that live a minute, stored without their expiry (as pasted tokens may be).
    const { now } = await connect('x', { fake_token_lifetime: '60' });
    const id = String(now.channel_id);
    const { credentials, version } = await getChannelWithCredentials(ORG_ID, id);
    const { expires_at: _unknown, ...withoutExpiry } = credentials;
    world.table.seed({
      ...keys.channelCredentials(ORG_ID, id),
      entity: 'channel_credentials',
      sealed: await sealCredentials(ORG_ID, id, withoutExpiry),
      version,
    });
    clearOpened();
    advance(2 * 60_000);

    // Act: the profile read is refused (the token expired at X); the refresh token is fine.
    const result = await syncChannel(ORG_ID, id, new Date());

    // Assert
    expect(result).toBe('refreshed');
    expect(channelOf(id)).toMatchObject({ status: 'live', last_error: null });
  });

  it('a channel waiting for re-authorization comes back by itself once its app is repaired', async () => {
    // Arrange: LinkedIn's token refused while the app was missing.
    const { now } = await connect('linkedin', { fake_token_lifetime: '60' });
    const id = String(now.channel_id);
    world.table.items.delete(`PLATFORMAPP#linkedin\u0000APP`);
    advance(2 * 60_000);
    expect(await syncChannel(ORG_ID, id, new Date())).toBe('reauth_required');

    // Act: the operator registers the app again; the hourly look renews with the kept refresh token.
    await setApp('linkedin');
    advance(3600_000);
    const counts = await syncDueChannels(world.sqs, new Date());

    // Assert
    expect(counts.refreshed).toBe(1);
    expect(channelOf(id)).toMatchObject({ status: 'live', last_error: null });
  });
});

describe('a reconnect is never undone by work that started on the old grant', () => {
  it('a sync whose profile call was in flight on the revoked grant leaves the reconnected channel live', async () => {
    // Arrange: the grant is revoked; while the sync's profile call is at X, the owner reconnects.
    const { now } = await connect('x');
    const id = String(now.channel_id);
    const { credentials } = await getChannelWithCredentials(ORG_ID, id);
    await fetch(`${world.fakes.origin}/__fakes/x/revoke`, {
      method: 'POST',
      body: JSON.stringify({ access_token: credentials.access_token }),
    });
    let reconnected = false;
    whenPlatformAnswers(world.fakes, 'x', async (req, res) => {
      if (reconnected || req.path !== '/2/users/me' || res.status !== 401) return;
      reconnected = true;
      const again = await connect('x', {}, id);
      expect(again.now.status).toBe('connected');
    });
    world.table.takeStream();

    // Act
    const result = await syncChannel(ORG_ID, id, new Date());

    // Assert
    expect(reconnected).toBe(true);
    expect(result).toBe('skipped');
    expect(channelOf(id)).toMatchObject({ status: 'live', last_error: null });
    expect(inSyncIndex(id)).toBe(true);
    expect(channelEventTypes()).toEqual(['channel.connected']);
  });
});

describe('the callback finishes every session it claims', () => {
  it('a KMS throttle after the code exchange: the session fails server_error, the tokens go back, the browser lands', async () => {
    // Arrange
    const session = await create({ platform: 'x', redirect_uri: LANDING });
    const back = await consent(session.authorize_url);
    kms
      .on(GenerateDataKeyCommand)
      .rejects(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException', $retryable: {} }));
    const revocationsBefore = world.fakes.requests('x').filter((r) => r.path === '/2/oauth2/revoke').length;

    // Act
    const out = await oauthCallback('x', Object.fromEntries(back.searchParams), new Date());
    const reload = await oauthCallback('x', Object.fromEntries(back.searchParams), new Date());

    // Assert
    expect('location' in out).toBe(true);
    const landed = new URL((out as { location: string }).location);
    expect(Object.fromEntries(landed.searchParams)).toMatchObject({
      status: 'failed',
      error: 'server_error',
    });
    expect(await getChannelConnection(ORG_ID, session.id, new Date())).toMatchObject({
      status: 'failed',
      error: { code: 'server_error' },
    });
    expect(world.fakes.requests('x').filter((r) => r.path === '/2/oauth2/revoke').length).toBe(
      revocationsBefore + 1,
    );
    expect(world.table.all('CHANNEL#')).toEqual([]);
    expect(reload).toMatchObject({ page: { status: 400 } });
  });

  it('a channel-limit failure after the exchange gives the issued tokens back', async () => {
    world.table.seed({ ...orgItem({ ...org(ALLOWS_LANDING), plan: 'free' }), channel_count: 3 });
    const { landed } = await connect('linkedin');
    expect(landed.searchParams.get('error')).toBe('channel_limit');
    expect(world.fakes.requests('linkedin').filter((r) => r.path === '/oauth/v2/revoke')).toHaveLength(1);
  });
});

describe('rotated refresh tokens are never lost', () => {
  it('a refresher whose lease ran out still keeps the rotated tokens; the one that took over adopts them', async () => {
    // Arrange: X rotates refresh tokens (each works once).
    const { now } = await connect('x');
    const id = String(now.channel_id);
    const stored = await getChannelWithCredentials(ORG_ID, id);
    const a = tokensOf(id, stored);
    const b = tokensOf(id, stored);
    let takeover: Promise<boolean> | undefined;
    whenPlatformAnswers(world.fakes, 'x', (req) => {
      if (takeover || req.path !== '/2/oauth2/token') return;
      // A's refresh is at X (its refresh token spent); its lease runs out and B takes over.
      advance(60_000);
      takeover = b.refresh();
    });

    // Act
    const ra = await a.refresh();
    const rb = await takeover;

    // Assert: both end with A's tokens, which are the stored ones, and they still work.
    expect([ra, rb]).toEqual([true, true]);
    const after = await getChannelWithCredentials(ORG_ID, id);
    expect(after.credentials.refresh_token).toBe(a.credentials.refresh_token);
    expect(b.credentials.access_token).toBe(a.credentials.access_token);
    const c = channelTokens({
      orgId: ORG_ID,
      channelId: id,
      platform: 'x',
      credentials: after.credentials,
      version: after.version,
    });
    expect(await c.refresh()).toBe(true);
  });

  it("a refresh landing between a reconnect's read and write is not overwritten by a second version of the same number", async () => {
    // Arrange: while the reconnect seals its new credentials (after it read the stored version),
    // a delivery refreshes the old grant and writes its own next version.
    const { now } = await connect('x');
    const id = String(now.channel_id);
    const before = await getChannelWithCredentials(ORG_ID, id);
    let refreshing = false;
    raceWhenKms(GenerateDataKeyCommand, 'channel_credentials', async () => {
      if (refreshing) return;
      refreshing = true;
      const s = await getChannelWithCredentials(ORG_ID, id);
      expect(await tokensOf(id, s).refresh()).toBe(true);
    });

    // Act
    const again = await connect('x', {}, id);

    // Assert: the refresh kept its version; the reconnect wrote the one after it.
    expect(refreshing).toBe(true);
    expect(again.now.status).toBe('connected');
    const after = await getChannelWithCredentials(ORG_ID, id);
    expect(after.version).toBe(before.version + 2);
  });

  it('disconnect revokes the tokens that are stored when it erases them, even if a refresh rotated them meanwhile', async () => {
    // Arrange: while disconnect opens the app's secret to revoke what it read, a refresh rotates.
    const { now } = await connect('x');
    const id = String(now.channel_id);
    let rotated: string | undefined;
    clearOpened();
    raceWhenKms(DecryptCommand, 'platform_app', async () => {
      if (rotated) return;
      rotated = 'pending';
      const s = await getChannelWithCredentials(ORG_ID, id);
      const t = tokensOf(id, s);
      expect(await t.refresh()).toBe(true);
      rotated = String(t.credentials.refresh_token);
    });

    // Act
    const gone = await disconnectChannel(ORG_ID, id, new Date(), async () => undefined);

    // Assert: the rotated refresh token was revoked too, and nothing is left.
    expect(gone.status).toBe('disconnected');
    const revoked = world.fakes
      .requests('x')
      .filter((r) => r.path === '/2/oauth2/revoke')
      .map((r) => new URLSearchParams(r.body.toString('utf8')).get('token'));
    expect(revoked).toContain(rotated);
    expect(world.table.get(keys.channelCredentials(ORG_ID, id))).toBeUndefined();
  });
});

describe('an account choice that never comes', () => {
  it('the sync erases the grant kept for it once the session expired', async () => {
    // Arrange: a YouTube grant covering two channels, waiting for the choice.
    const session = await create({ platform: 'youtube', redirect_uri: LANDING });
    await callback('youtube', await consent(session.authorize_url, { fake_user: 'brand' }));
    const item = () => world.table.get<Record<string, unknown>>(keys.connection(ORG_ID, session.id));
    expect(item()?.pending).toMatchObject({ v: 1 });

    // Act
    advance(11 * 60_000);
    const counts = await syncDueChannels(world.sqs, new Date());

    // Assert
    expect(counts.selection_expired).toBe(1);
    expect(item()).toMatchObject({ pending: null, accounts: null });
    expect(item()?.gsi2pk).toBeUndefined();
    expect((await getChannelConnection(ORG_ID, session.id, new Date())).status).toBe('expired');
  });
});

describe("every platform's documented refusals lead to the remedy they mean", () => {
  const RESULT = { operator: 'operator', reauthorize: 'reauth_required', later: 'retrying' } as const;
  const refreshing: OAuthPlatform[] = ['x', 'linkedin', 'tiktok', 'youtube', 'pinterest', 'threads'];
  const tokenCases = refreshing.flatMap((p) =>
    (['tokenInvalidClient', 'tokenInvalidGrant'] as const).map((kind) => [p, kind] as const),
  );
  const apiCases = OAUTH_PLATFORMS.flatMap((p) =>
    (['revokedToken', 'expiredToken', 'throttled'] as const).map((kind) => [p, kind] as const),
  );

  it.each(tokenCases)('%s: a renewal answered %s', async (platform, kind) => {
    // Arrange
    const id = await expiringChannel(platform);
    const answer = documentedErrors[platform][kind];
    world.fakes.failNext(platform, asFailure(answer));

    // Act
    const result = await syncChannel(ORG_ID, id, new Date());

    // Assert
    expect(result, answer.source).toBe(RESULT[answer.meaning]);
  });

  it.each(apiCases)('%s: a profile read answered %s', async (platform, kind) => {
    // Arrange: refused however often it is asked (a renewal first where the platform has one).
    const { now } = await connect(platform);
    const id = String(now.channel_id);
    const answer = documentedErrors[platform][kind];
    world.fakes.failNext(platform, asFailure(answer, 3));

    // Act
    const result = await syncChannel(ORG_ID, id, new Date());

    // Assert
    expect(result, answer.source).toBe(RESULT[answer.meaning]);
    expect(channelOf(id)?.status).toBe(answer.meaning === 'reauthorize' ? 'reauth_required' : 'live');
  });
});
