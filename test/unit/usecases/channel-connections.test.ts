import { KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { getChannelWithCredentials } from '#adapters/channel-credentials';
import { keys } from '#adapters/keys';
import { clearOpened } from '#adapters/sealed';
import { OAUTH_PLATFORMS } from '#core/connections';
import { ActError } from '#core/people';
import type { Platform } from '#core/platforms';
import { syncChannel } from '#usecases/channel-sync-worker';
import { addOrgUser, connectChannel, createOrg, setPlatformApp, setSettings } from '#usecases/cli/admin';
import { createChannelConnection } from '#usecases/create-channel-connection';
import { disconnectChannel } from '#usecases/disconnect-channel';
import { getChannelConnection } from '#usecases/get-channel-connection';
import { oauthCallback } from '#usecases/oauth-callback';
import { selectChannelAccount } from '#usecases/select-channel-account';
import { nextSyncAt } from '#usecases/support/channel-connect';
import { channelTokens } from '#usecases/support/channel-tokens';
import type { FakeBluesky } from '../../fakes/bluesky.ts';
import { FAKE_APPS } from '../../fakes/oauth.ts';
import { useWorld } from '../faults/support/world.ts';
import { syncDueChannels } from '../support/channel-sync.ts';
import { ALLOWS_LANDING, admitted, connectFlow, LANDING } from '../support/connect-flow.ts';
import { rejectedApiError } from '../support/errors.ts';
import { ORG_ID, org, orgItem } from '../support/fixtures.ts';
import { serveDataKeys } from '../support/kms.ts';

// Channel connections end to end through the use cases, against the platforms' contract fakes and
// an in-memory table with DynamoDB's semantics: a session, the person's consent at the platform,
// the callback, the account choice, the live channel whose profile came from the platform; every
// bad input; reconnecting, disconnecting, the channel sync, and token rotation under concurrency.

const kms = mockClient(KMSClient);
const world = useWorld();
const PUBLIC = 'https://api.example.com';
const CONSOLE = 'https://herald.example.com';
const OAUTH: Platform[] = [...OAUTH_PLATFORMS];

beforeEach(async () => {
  kms.reset();
  serveDataKeys(kms);
  clearOpened();
  vi.stubEnv('HERALD_PUBLIC_URL', PUBLIC);
  world.table.seed(orgItem(org(ALLOWS_LANDING)));
  for (const platform of OAUTH) {
    const app = FAKE_APPS[platform];
    await setPlatformApp({ platform, clientId: app.clientId, clientSecret: app.clientSecret });
  }
});

const { create, consent, callback, connect, channelOf } = connectFlow(world);

const oauthState = async () =>
  ((await (await fetch(`${world.fakes.origin}/__fakes/x/state`)).json()) as { oauth: { refreshes: number } })
    .oauth;

describe('connecting each OAuth platform', () => {
  it.each(OAUTH)(
    '%s: consent, callback, a live channel whose profile came from the platform',
    async (platform) => {
      // Act
      const { session, landed, now } = await connect(platform);

      // Assert: the session and where the browser landed.
      expect(session).toMatchObject({ status: 'awaiting_authorization', platform, channel: null });
      expect(session.authorize_url).toContain(world.fakes.url(platform));
      expect(landed.origin + landed.pathname).toBe(LANDING);
      expect(landed.searchParams.get('connection_id')).toBe(session.id);
      expect(now.status, JSON.stringify(now.error)).toBe('connected');
      // The channel: live, its handle, avatar and followers from the platform's profile, never typed.
      const channel = now.channel as {
        id: string;
        handle: string;
        avatar_url: string | null;
        followers: number;
      };
      expect(channel).toMatchObject({ status: 'live', platform, last_error: null });
      expect(channel.handle).not.toBe('');
      expect(channelOf(channel.id)).toMatchObject({
        account_id: expect.any(String),
        connection_id: session.id,
      });
      // Its tokens: sealed, never in plain text in the table.
      const stored = world.table.get(keys.channelCredentials(ORG_ID, channel.id)) as Record<string, unknown>;
      expect(stored).toMatchObject({ sealed: { v: 1 }, version: 1 });
      expect(stored.credentials).toBeUndefined();
      const { credentials } = await getChannelWithCredentials(ORG_ID, channel.id);
      expect(credentials.access_token).toEqual(expect.any(String));
      expect(JSON.stringify([...world.table.items.values()])).not.toContain(String(credentials.access_token));
    },
  );

  it.each([...OAUTH, 'mastodon' as const])(
    '%s: the channel sync reads the profile again with the kept tokens',
    async (platform) => {
      // Arrange
      const { now } = await connect(platform);
      const id = String(now.channel_id);

      // Act
      const synced = await syncChannel(ORG_ID, id, new Date());

      // Assert
      expect(synced).toBe('synced');
      expect(channelOf(id)).toMatchObject({
        status: 'live',
        sync_failures: 0,
        handle: (now.channel as { handle: string }).handle,
      });
    },
  );

  it('mastodon: registers Herald on the instance once, then connects with PKCE', async () => {
    await connect('mastodon');
    const second = await connect('mastodon', { fake_user: 'zoe' });
    expect(second.now.status).toBe('connected');
    const apps = world.fakes.requests('mastodon').filter((r) => r.path === '/api/v1/apps');
    expect(apps).toHaveLength(1);
    const authorize = world.fakes.requests('mastodon').filter((r) => r.path === '/oauth/authorize');
    expect(authorize.every((r) => r.query.get('code_challenge_method') === 'S256')).toBe(true);
  });

  it('mastodon without a configured public URL: sessions on two hosts share the one registration and its callback', async () => {
    // Arrange: the deployment answers on its API Gateway host and on a custom domain.
    vi.stubEnv('HERALD_PUBLIC_URL', '');
    const start = (requestHost: string) =>
      createChannelConnection({
        orgId: ORG_ID,
        body: { platform: 'mastodon', instance: world.fakes.url('mastodon') },
        requestHost,
        now: new Date(),
        admitted,
      });

    // Act
    const a = await start('abc123.execute-api.eu-west-1.amazonaws.com');
    const b = await start('api.example.com');
    const c = await start('abc123.execute-api.eu-west-1.amazonaws.com');

    // Assert
    const apps = world.fakes.requests('mastodon').filter((r) => r.path === '/api/v1/apps');
    expect(apps).toHaveLength(1);
    const callbacks = [a, b, c].map(
      (s) => (world.table.get(keys.connection(ORG_ID, s.id)) as { callback_uri: string }).callback_uri,
    );
    const redirects = [a, b, c].map((s) => new URL(String(s.authorize_url)).searchParams.get('redirect_uri'));
    const registered = 'https://abc123.execute-api.eu-west-1.amazonaws.com/oauth/callback/mastodon';
    expect(callbacks).toEqual([registered, registered, registered]);
    expect(redirects).toEqual([registered, registered, registered]);
    // The person approving on the second host's session comes back and connects.
    const back = await consent(b.authorize_url);
    await oauthCallback('mastodon', Object.fromEntries(back.searchParams), new Date());
    expect((await getChannelConnection(ORG_ID, b.id, new Date())).status).toBe('connected');
  });

  it('mastodon: a configured public URL that changed registers Herald on the instance again', async () => {
    await connect('mastodon');
    vi.stubEnv('HERALD_PUBLIC_URL', 'https://herald.example.org');
    const moved = await connect('mastodon', { fake_user: 'zoe' });
    const again = await connect('mastodon', { fake_user: 'ada' });
    expect([moved.now.status, again.now.status]).toEqual(['connected', 'connected']);
    expect(world.fakes.requests('mastodon').filter((r) => r.path === '/api/v1/apps')).toHaveLength(2);
    expect(world.table.get(keys.connection(ORG_ID, again.session.id))).toMatchObject({
      callback_uri: 'https://herald.example.org/oauth/callback/mastodon',
    });
  });

  it('mastodon: an instance app registered without the inbox’s scopes is registered again; the grant records them', async () => {
    const first = await connect('mastodon');
    const key = keys.instanceApp(world.fakes.url('mastodon'));
    const app = world.table.get(key);
    expect(app?.scopes).toContain('read:notifications');
    // As an app registered before Herald asked for the inbox's scopes was kept.
    world.table.seed({ ...app, scopes: ['read:accounts', 'read:statuses', 'write:statuses', 'write:media'] });
    const again = await connect('mastodon', { fake_user: 'zoe' });
    expect(again.now.status).toBe('connected');
    expect(world.fakes.requests('mastodon').filter((r) => r.path === '/api/v1/apps')).toHaveLength(2);
    expect(world.table.get(key)?.scopes).toContain('read:notifications');
    const authorize = world.fakes.requests('mastodon').filter((r) => r.path === '/oauth/authorize');
    expect(authorize.at(-1)?.query.get('scope')?.split(' ')).toContain('read:notifications');
    for (const c of [first, again])
      expect(channelOf(String(c.now.channel_id))?.granted_scopes).toEqual(
        expect.arrayContaining(['read:notifications', 'read:statuses']),
      );
  });

  it('several accounts: the session waits in selecting_account with them, then connects the one picked', async () => {
    // Arrange: a YouTube user with two channels.
    const session = await create({ platform: 'youtube', redirect_uri: LANDING });
    const landed = await callback('youtube', await consent(session.authorize_url, { fake_user: 'brand' }));
    const waiting = await getChannelConnection(ORG_ID, session.id, new Date());

    // Act
    const picked = waiting.accounts?.[1];
    const done = await selectChannelAccount(ORG_ID, session.id, picked?.id ?? '', new Date(), admitted);

    // Assert
    expect(landed.searchParams.get('status')).toBe('selecting_account');
    expect(waiting.accounts).toHaveLength(2);
    expect(JSON.stringify(waiting)).not.toMatch(/access_token|refresh_token/);
    expect(done).toMatchObject({ status: 'connected', channel: { handle: picked?.handle } });
    expect(channelOf(String(done.channel_id))?.account_id).toBe(picked?.id);
  });

  it('connecting the same account again reconnects its channel (same id, one channel.connected each time)', async () => {
    const first = await connect('x');
    const second = await connect('x');
    expect(second.now.channel_id).toBe(first.now.channel_id);
    expect(channelOf(String(first.now.channel_id))?.connection_id).toBe(second.session.id);
    expect(world.table.all('CHANNEL#')).toHaveLength(1);
    expect(world.table.get(keys.org(ORG_ID))).toMatchObject({ channel_count: 1 });
  });
});

describe('bad input and failures', () => {
  it.each([
    'javascript:alert(1)',
    'https://user:pw@app.example.com/connected',
    'https://app.example.com/connected#done',
  ])('refuses %s as no landing URL at all (invalid_redirect_uri), storing nothing', async (redirect) => {
    const err = await rejectedApiError(create({ platform: 'x', redirect_uri: redirect }));
    expect(err.errors).toEqual([
      expect.objectContaining({ pointer: '/redirect_uri', code: 'invalid_redirect_uri' }),
    ]);
    expect(world.table.all('CONN#')).toEqual([]);
  });

  it('answers 409 platform_not_configured for a platform whose app the operator has not set', async () => {
    world.table.items.delete(`PLATFORMAPP#tiktok\u0000APP`);
    const err = await rejectedApiError(create({ platform: 'tiktok' }));
    expect(err).toMatchObject({ status: 409, code: 'platform_not_configured' });
    expect(err.message).toContain('herald platform-app set --platform tiktok');
  });

  it('refuses an unknown channel_id, and one of another platform', async () => {
    const unknown = await rejectedApiError(
      create({ platform: 'x', channel_id: 'ch_01JD0000000000000000000099' }),
    );
    expect(unknown.errors?.[0]).toMatchObject({ pointer: '/channel_id', code: 'unknown_channel' });
    const { now } = await connect('x');
    const other = await rejectedApiError(
      create({ platform: 'linkedin', channel_id: String(now.channel_id) }),
    );
    expect(other.errors?.[0]).toMatchObject({ pointer: '/channel_id', code: 'platform_mismatch' });
  });

  it('consent denied at the platform: the session fails consent_denied, the browser lands with the error', async () => {
    const session = await create({ platform: 'linkedin', redirect_uri: LANDING });
    const landed = await callback('linkedin', await consent(session.authorize_url, { fake_consent: 'deny' }));
    expect(Object.fromEntries(landed.searchParams)).toMatchObject({
      status: 'failed',
      error: 'consent_denied',
    });
    expect(await getChannelConnection(ORG_ID, session.id, new Date())).toMatchObject({
      status: 'failed',
      error: { code: 'consent_denied' },
    });
    expect(world.table.all('CHANNEL#')).toEqual([]);
  });

  it('a grant without the scopes publishing needs fails missing_scopes and names them', async () => {
    const session = await create({ platform: 'x', redirect_uri: LANDING });
    await callback('x', await consent(session.authorize_url, { fake_consent: 'partial' }));
    const now = await getChannelConnection(ORG_ID, session.id, new Date());
    expect(now).toMatchObject({ status: 'failed', error: { code: 'missing_scopes' } });
    expect(now.error?.message).toContain('tweet.write');
    expect(world.table.all('CHANNEL#')).toEqual([]);
  });

  it('a replayed or unknown state is a 400 page, and a replay changes nothing', async () => {
    const session = await create({ platform: 'x', redirect_uri: LANDING });
    const back = await consent(session.authorize_url);
    await callback('x', back);
    // A person's browser reads the answer: a page, never problem+json.
    const replay = await oauthCallback('x', Object.fromEntries(back.searchParams), new Date());
    expect(replay).toMatchObject({ page: { status: 400, title: 'Link expired' } });
    const missing = await oauthCallback('x', { code: 'c' }, new Date());
    expect(missing).toMatchObject({ page: { status: 400 } });
    expect(world.table.all('CHANNEL#')).toHaveLength(1);
  });

  it('an expired session: the callback sends the browser on with status expired and connects nothing', async () => {
    const session = await create({ platform: 'x', redirect_uri: LANDING });
    const back = await consent(session.authorize_url);
    vi.setSystemTime(Date.now() + 11 * 60_000);
    const landed = await callback('x', back);
    expect(landed.searchParams.get('status')).toBe('expired');
    expect(world.table.all('CHANNEL#')).toEqual([]);
  });

  it('a token exchange the platform refuses fails the session token_exchange_failed', async () => {
    const session = await create({ platform: 'tiktok', redirect_uri: LANDING });
    const back = await consent(session.authorize_url);
    world.fakes.failNext('tiktok', {
      status: 400,
      path: /oauth\/token/,
      body: { error: 'invalid_grant', error_description: 'Authorization code is expired.', log_id: 'x' },
    });
    await callback('tiktok', back);
    expect(await getChannelConnection(ORG_ID, session.id, new Date())).toMatchObject({
      status: 'failed',
      error: { code: 'token_exchange_failed' },
    });
  });

  it('selecting an account the grant does not cover is a 400 and leaves the session selecting', async () => {
    const session = await create({ platform: 'pinterest', redirect_uri: LANDING });
    await callback('pinterest', await consent(session.authorize_url));
    const err = await rejectedApiError(
      selectChannelAccount(ORG_ID, session.id, 'not-a-board', new Date(), admitted),
    );
    expect(err.errors?.[0]).toMatchObject({ pointer: '/account_id', code: 'unknown_account' });
    expect((await getChannelConnection(ORG_ID, session.id, new Date())).status).toBe('selecting_account');
  });

  it('Bluesky: a refused app password is 400 credentials_rejected and stores nothing; a good one connects at once', async () => {
    const service = world.fakes.url('bluesky');
    const bad = await rejectedApiError(
      create({
        platform: 'bluesky',
        credentials: { service, identifier: 'acme.bsky.social', app_password: 'wrong' },
      }),
    );
    expect(bad.errors?.[0]).toMatchObject({
      pointer: '/credentials/app_password',
      code: 'credentials_rejected',
    });
    expect(world.table.all('CHANNEL#')).toEqual([]);
    const good = await create({
      platform: 'bluesky',
      credentials: { service, identifier: 'acme.bsky.social', app_password: 'app-password' },
    });
    expect(good).toMatchObject({ status: 'connected', channel: { status: 'live' } });
  });

  it('Bluesky: the app password’s session scope is the channel’s granted scopes (direct messages or not)', async () => {
    const service = world.fakes.url('bluesky');
    const dm = await create({
      platform: 'bluesky',
      credentials: { service, identifier: 'acme.bsky.social', app_password: 'app-password' },
    });
    const plain = await create({
      platform: 'bluesky',
      credentials: { service, identifier: 'zoe.bsky.social', app_password: 'token' },
    });
    expect(channelOf(String(dm.channel_id))?.granted_scopes).toEqual(['com.atproto.appPassPrivileged']);
    expect(channelOf(String(plain.channel_id))?.granted_scopes).toEqual(['com.atproto.appPass']);
  });

  it('Bluesky: a server answering another account than the one typed is refused by the identifier, storing nothing', async () => {
    const service = world.fakes.url('bluesky');
    world.fakes.fake<FakeBluesky>('bluesky').claimedHandles.set('acme.bsky.social', 'bsky.app');
    const claimed = await rejectedApiError(
      create({
        platform: 'bluesky',
        credentials: { service, identifier: 'acme.bsky.social', app_password: 'app-password' },
      }),
    );
    expect(claimed.errors?.[0]).toMatchObject({
      pointer: '/credentials/identifier',
      code: 'identity_mismatch',
      message: expect.stringMatching(/bsky\.app.*acme\.bsky\.social|acme\.bsky\.social.*bsky\.app/),
    });
    // A DID typed must be the session's DID; an e-mail address names no handle to check.
    const did = await rejectedApiError(
      create({
        platform: 'bluesky',
        credentials: { service, identifier: 'did:plc:someoneelse', app_password: 'app-password' },
      }),
    );
    expect(did.errors?.[0]).toMatchObject({ pointer: '/credentials/identifier', code: 'identity_mismatch' });
    const email = await rejectedApiError(
      create({
        platform: 'bluesky',
        credentials: { service, identifier: 'me@acme.example', app_password: 'app-password' },
      }),
    );
    expect(email.errors?.[0]).toMatchObject({
      pointer: '/credentials/identifier',
      code: 'identity_mismatch',
    });
    expect(world.table.all('CHANNEL#')).toEqual([]);
    // Typed in capitals, the handle is still the one the server answers.
    const good = await create({
      platform: 'bluesky',
      credentials: { service, identifier: 'Other.BSKY.social', app_password: 'app-password' },
    });
    expect(good).toMatchObject({ status: 'connected', channel: { handle: 'other.bsky.social' } });
  });

  it('Mastodon: an instance on a private address is refused (forbidden_address) before any call', async () => {
    const err = await rejectedApiError(create({ platform: 'mastodon', instance: 'http://10.1.2.3' }));
    expect(err.errors?.[0]).toMatchObject({ pointer: '/instance', code: 'forbidden_address' });
  });

  it("the CLI's pasted credentials are verified: refused tokens store nothing, a token of another account too", async () => {
    const refused = await connectChannel({
      orgId: ORG_ID,
      platform: 'x',
      credentials: { access_token: 'nope', account_id: '1500000000000000001' },
    }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ActError);
    expect((refused as Error).message).toMatch(/x refused the credentials/);
    const other = await connectChannel({
      orgId: ORG_ID,
      platform: 'x',
      credentials: { access_token: 'token', account_id: '42' },
    }).catch((e: unknown) => e);
    expect((other as Error).message).toMatch(/belongs to account/);
    expect(world.table.all('CHANNEL#')).toEqual([]);
    const ok = await connectChannel({
      orgId: ORG_ID,
      platform: 'x',
      credentials: { access_token: 'token', account_id: '1500000000000000001' },
    });
    expect(ok).toMatchObject({ handle: 'acme', followers: 1200, status: 'live' });
  });
});

describe('where the person lands: allowed landing origins', () => {
  const sessions = () => [...world.table.items.keys()].filter((k) => /CONN#|OAUTHSTATE#/.test(k));

  it.each<[Platform, Record<string, unknown>]>([
    ['x', {}],
    ['mastodon', { instance: 'MASTODON' }],
    ['bluesky', { credentials: 'BLUESKY' }],
  ])(
    '%s: an origin the organization has not allowed is 400 origin_not_allowed; nothing is stored or called',
    async (platform, extra) => {
      // Arrange
      const body = {
        platform,
        redirect_uri: 'https://evil.example/phish',
        ...(extra.instance ? { instance: world.fakes.url('mastodon') } : {}),
        ...(extra.credentials
          ? {
              credentials: {
                service: world.fakes.url('bluesky'),
                identifier: 'acme.bsky.social',
                app_password: 'app-password',
              },
            }
          : {}),
      };
      const calls = world.fakes.requests(platform).length;

      // Act
      const err = await rejectedApiError(create(body));

      // Assert
      expect(err).toMatchObject({ status: 400, code: 'validation_failed' });
      expect(err.errors).toEqual([
        {
          pointer: '/redirect_uri',
          code: 'origin_not_allowed',
          message: expect.stringMatching(/https:\/\/evil\.example .*operator must allow it/),
        },
      ]);
      expect(sessions()).toEqual([]);
      expect(world.table.all('CHANNEL#')).toEqual([]);
      expect(world.fakes.requests(platform)).toHaveLength(calls);
    },
  );

  it('accepts any path and query on an allowed origin', async () => {
    const session = await create({ platform: 'x', redirect_uri: 'https://app.example.com/settings/x?tab=2' });
    expect(session).toMatchObject({
      status: 'awaiting_authorization',
      redirect_uri: 'https://app.example.com/settings/x?tab=2',
    });
    expect(world.table.all('CONN#')).toHaveLength(1);
  });

  it.each([
    ['another port', 'https://app.example.com:8443/connected'],
    ['another scheme', 'http://app.example.com/connected'],
    ['a subdomain', 'https://eu.app.example.com/connected'],
    ['a longer name', 'https://app.example.com.evil.example/connected'],
  ])('refuses %s of an allowed origin', async (_what, redirect) => {
    const err = await rejectedApiError(create({ platform: 'linkedin', redirect_uri: redirect }));
    expect(err.errors).toEqual([
      expect.objectContaining({ pointer: '/redirect_uri', code: 'origin_not_allowed' }),
    ]);
    expect(world.table.all('CONN#')).toEqual([]);
  });

  it.each([
    'http://localhost:5173/connected',
    'https://localhost/connected',
    'http://127.0.0.1:40000/connected',
    'http://127.8.9.10/cb',
    'http://[::1]:3000/',
  ])('accepts loopback %s without any allowed origin', async (redirect) => {
    world.table.seed(orgItem(org()));
    const session = await create({ platform: 'x', redirect_uri: redirect });
    expect(session).toMatchObject({ status: 'awaiting_authorization', redirect_uri: redirect });
  });

  it('refuses a name that merely starts with 127 as loopback', async () => {
    world.table.seed(orgItem(org()));
    const err = await rejectedApiError(create({ platform: 'x', redirect_uri: 'http://127.evil.example/cb' }));
    expect(err.errors?.[0]).toMatchObject({ code: 'origin_not_allowed' });
  });

  it('reports a refused origin together with an unknown channel_id, in one 400', async () => {
    const err = await rejectedApiError(
      create({
        platform: 'x',
        redirect_uri: 'https://evil.example/',
        channel_id: 'ch_01JD0000000000000000000099',
      }),
    );
    expect(err.errors?.map((e) => e.code)).toEqual(['origin_not_allowed', 'unknown_channel']);
  });

  it("follows the organization's settings from the very next request: allowed, then cleared", async () => {
    // Arrange: an organization with an owner, which allows nothing yet.
    const { org: made, owner } = await createOrg({
      name: 'Beta',
      plan: 'team',
      ownerEmail: 'o@beta.test',
      consoleUrl: CONSOLE,
    });
    const start = () =>
      createChannelConnection({
        orgId: made.id,
        body: { platform: 'x', redirect_uri: 'https://beta.example/connected' },
        requestHost: 'api.example.com',
        now: new Date(),
        admitted,
      });
    const before = await rejectedApiError(start());

    // Act
    const shown = await setSettings({
      orgId: made.id,
      by: owner.id,
      patch: { landing_origins: ['https://BETA.example:443/', 'https://beta.example'] },
    });
    const allowed = await start();
    await setSettings({ orgId: made.id, by: owner.id, patch: { landing_origins: [] } });
    const cleared = await rejectedApiError(start());

    // Assert
    expect(before.errors?.[0]?.code).toBe('origin_not_allowed');
    expect(shown.settings).toEqual({
      dangerous_ops: false,
      approval_required: false,
      landing_origins: ['https://beta.example'],
    });
    expect(allowed.status).toBe('awaiting_authorization');
    expect(cleared.errors?.[0]?.code).toBe('origin_not_allowed');
  });

  it("the CLI's settings set refuses what is not an origin, and only an owner may set them", async () => {
    const { org: made, owner } = await createOrg({
      name: 'Gamma',
      plan: 'team',
      ownerEmail: 'o@gamma.test',
      consoleUrl: CONSOLE,
    });
    const admin = await addOrgUser({
      orgId: made.id,
      email: 'a@gamma.test',
      role: 'admin',
      consoleUrl: CONSOLE,
    });
    for (const bad of [
      'https://gamma.example/connected',
      'gamma.example',
      'ftp://gamma.example',
      'https://u@gamma.example',
    ])
      await expect(
        setSettings({ orgId: made.id, by: owner.id, patch: { landing_origins: [bad] } }),
      ).rejects.toThrow(/is not an origin/);
    await expect(
      setSettings({ orgId: made.id, by: admin.id, patch: { landing_origins: ['https://gamma.example'] } }),
    ).rejects.toMatchObject({ kind: 'forbidden' });
    expect(world.table.get(keys.org(made.id))).toMatchObject({ settings: { landing_origins: [] } });
  });

  it('shows landing_origins for an organization created before the setting existed', async () => {
    // Arrange: the org item as an older Herald stored it, and its owner.
    const { org: made, owner } = await createOrg({
      name: 'Old',
      plan: 'team',
      ownerEmail: 'o@old.test',
      consoleUrl: CONSOLE,
    });
    const item = world.table.get(keys.org(made.id)) as Record<string, unknown>;
    world.table.seed({ ...item, settings: { dangerous_ops: false, approval_required: false } });

    // Act
    const shown = await setSettings({ orgId: made.id, by: owner.id, patch: { dangerous_ops: true } });

    // Assert
    expect(shown.settings).toEqual({ dangerous_ops: true, approval_required: false, landing_origins: [] });
  });
});

describe("the plan's bound on connected channels", () => {
  const seedOrg = (extra: Record<string, unknown>) =>
    world.table.seed({ ...orgItem({ ...org(ALLOWS_LANDING), plan: 'free' }), ...extra });

  it('a new account over the bound fails the session channel_limit and writes no channel', async () => {
    // Arrange: the free plan's 3 channels are all taken.
    seedOrg({ channel_count: 3 });

    // Act
    const { now } = await connect('x');

    // Assert
    expect(now).toMatchObject({ status: 'failed', error: { code: 'channel_limit' } });
    expect(now.error?.message).toMatch(/free plan allows 3/);
    expect(world.table.all('CHANNEL#')).toEqual([]);
    expect(world.table.get(keys.org(ORG_ID))).toMatchObject({ channel_count: 3 });
  });

  it("counts each new channel once, bounded by the org's override; a reconnection is not counted again", async () => {
    // Arrange
    seedOrg({ channel_count: 3, limits: { channels: 4 } });

    // Act
    const first = await connect('x');
    const again = await connect('x');

    // Assert
    expect(first.now.status).toBe('connected');
    expect(again.now).toMatchObject({ status: 'connected', channel_id: first.now.channel_id });
    expect(world.table.get(keys.org(ORG_ID))).toMatchObject({ channel_count: 4 });
  });

  it('the CLI answers the bound as a conflict, and an unknown org as not_found before any call', async () => {
    seedOrg({ channel_count: 3 });
    const credentials = { access_token: 'token', account_id: '1500000000000000001' };
    const full = await connectChannel({ orgId: ORG_ID, platform: 'x', credentials }).catch((e: unknown) => e);
    expect(full).toMatchObject({ kind: 'conflict', message: expect.stringMatching(/free plan allows 3/) });
    const before = world.fakes.requests('x').length;
    const unknown = await connectChannel({ orgId: 'org_nope', platform: 'x', credentials }).catch(
      (e: unknown) => e,
    );
    expect(unknown).toMatchObject({ kind: 'not_found' });
    expect(world.fakes.requests('x')).toHaveLength(before);
  });
});

describe('channel health', () => {
  it('a revoked grant: the sync marks the channel reauth_required; reconnecting in place makes it live again', async () => {
    // Arrange
    const { now } = await connect('x');
    const id = String(now.channel_id);
    const { credentials } = await getChannelWithCredentials(ORG_ID, id);
    const revoked = await fetch(`${world.fakes.origin}/__fakes/x/revoke`, {
      method: 'POST',
      body: JSON.stringify({ access_token: credentials.access_token }),
    });
    expect(revoked.status).toBe(200);

    // Act
    const synced = await syncChannel(ORG_ID, id, new Date());
    const again = await connect('x', {}, id);

    // Assert
    expect(synced).toBe('reauth_required');
    expect(again.now).toMatchObject({ status: 'connected', channel_id: id, channel: { status: 'live' } });
    expect(channelOf(id)).toMatchObject({ status: 'live', connection_id: again.session.id });
  });

  it('renews an expiring token ahead of time and reads the profile again', async () => {
    // Arrange: tokens that live two minutes; the sync is due half-way.
    const { now } = await connect('x', { fake_token_lifetime: '120' });
    const id = String(now.channel_id);
    const before = await getChannelWithCredentials(ORG_ID, id);
    const due = Date.parse(String(channelOf(id)?.next_sync_at));
    expect(due - Date.now()).toBeLessThanOrEqual(60_000);

    // Act
    vi.setSystemTime(due + 1000);
    const counts = await syncDueChannels(world.sqs, new Date());

    // Assert
    expect(counts.refreshed).toBe(1);
    const after = await getChannelWithCredentials(ORG_ID, id);
    expect(after.credentials.access_token).not.toBe(before.credentials.access_token);
    expect(after.version).toBe(before.version + 1);
    expect(Date.parse(String(channelOf(id)?.next_sync_at))).toBeGreaterThan(Date.now());
  });

  it('two refreshers at once spend the rotating refresh token once; both end with the new token', async () => {
    // Arrange
    const { now } = await connect('x');
    const id = String(now.channel_id);
    const stored = await getChannelWithCredentials(ORG_ID, id);
    const source = () =>
      channelTokens({
        orgId: ORG_ID,
        channelId: id,
        platform: 'x',
        credentials: stored.credentials,
        version: stored.version,
      });
    const a = source();
    const b = source();
    const refreshesBefore = (await oauthState()).refreshes;

    // Act
    const [ra, rb] = await Promise.all([a.refresh(), b.refresh()]);

    // Assert
    const state = { oauth: await oauthState() };
    expect([ra, rb]).toEqual([true, true]);
    expect(state.oauth.refreshes - refreshesBefore).toBe(1);
    expect(a.credentials.access_token).toBe(b.credentials.access_token);
    expect(a.credentials.refresh_token).toEqual(expect.any(String));
    expect((await getChannelWithCredentials(ORG_ID, id)).credentials.access_token).toBe(
      a.credentials.access_token,
    );
  });

  it('disconnecting revokes at the platform, erases the tokens and frees the plan slot; reconnecting revives the channel', async () => {
    // Arrange
    const { now } = await connect('x');
    const id = String(now.channel_id);

    // Act
    const gone = await disconnectChannel(ORG_ID, id, new Date(), admitted);
    const again = await disconnectChannel(ORG_ID, id, new Date(), admitted);

    // Assert
    expect(gone.status).toBe('disconnected');
    expect(again.status).toBe('disconnected');
    expect(world.fakes.requests('x').filter((r) => r.path === '/2/oauth2/revoke')).toHaveLength(1);
    expect(world.table.get(keys.channelCredentials(ORG_ID, id))).toBeUndefined();
    expect(world.table.get(keys.org(ORG_ID))).toMatchObject({ channel_count: 0 });
    const back = await connect('x');
    expect(back.now.channel_id).toBe(id);
    expect(world.table.get(keys.org(ORG_ID))).toMatchObject({ channel_count: 1 });
  });
});

describe('nextSyncAt', () => {
  const now = new Date('2030-06-10T09:30:00.000Z');
  const at = (ms: number) => new Date(now.getTime() + ms).toISOString();
  const expiring = (ms: number) => ({ access_token: 't', expires_at: at(ms) });

  it.each([
    ['a token that does not expire: the daily profile sync', {}, 24 * 3600_000],
    ['a two-hour token: 30 minutes before it expires', expiring(2 * 3600_000), 90 * 60_000],
    ['a 40-minute token: half-way', expiring(40 * 60_000), 20 * 60_000],
    ['a 20-second token: half-way, under the 30 s floor', expiring(20_000), 10_000],
    ['an expired token: no sooner than 30 s', expiring(-5_000), 30_000],
  ])('%s', (_name, credentials, inMs) => {
    expect(nextSyncAt(credentials, now)).toBe(at(inMs));
  });
});
