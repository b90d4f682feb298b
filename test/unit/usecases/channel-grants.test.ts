import { KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { getChannelWithCredentials } from '#adapters/channel-credentials';
import { keys } from '#adapters/keys';
import { connectFor, type OAuthConnect } from '#adapters/platforms/connect-registry';
import { clearOpened } from '#adapters/sealed';
import { OAUTH_PLATFORMS } from '#core/connections';
import { channelCapabilities, PART_GRANTS, type Platform } from '#core/platforms';
import { connectChannel, setPlatformApp } from '#usecases/cli/admin';
import { getChannelConnection } from '#usecases/get-channel-connection';
import { selectChannelAccount } from '#usecases/select-channel-account';
import { FAKE_APPS } from '../../fakes/oauth.ts';
import { useWorld } from '../faults/support/world.ts';
import { ALLOWS_LANDING, admitted, connectFlow, LANDING } from '../support/connect-flow.ts';
import { ORG_ID, org, orgItem } from '../support/fixtures.ts';
import { serveDataKeys } from '../support/kms.ts';

// The grant a channel was connected with, recorded at every (re)connect from what the platform
// reports (the token answer's scope, Meta's /me/permissions, Threads' debug_token), and what it
// makes of the channel's parts: a first comment (or a Threads reply) needs its scope, which a person
// may decline without failing the connection.

const kms = mockClient(KMSClient);
const world = useWorld();
const OAUTH: Platform[] = [...OAUTH_PLATFORMS];
const { create, consent, callback, connect, channelOf } = connectFlow(world);

beforeEach(async () => {
  kms.reset();
  serveDataKeys(kms);
  clearOpened();
  vi.stubEnv('HERALD_PUBLIC_URL', 'https://api.example.com');
  world.table.seed(orgItem(org(ALLOWS_LANDING)));
  for (const platform of OAUTH) {
    const app = FAKE_APPS[platform];
    await setPlatformApp({ platform, clientId: app.clientId, clientSecret: app.clientSecret });
  }
});

const scopesOf = async (platform: Platform) => ((await connectFor(platform)) as OAuthConnect).scopes;

describe('recording the grant', () => {
  it.each([...OAUTH, 'mastodon' as const])(
    '%s: the channel keeps the scopes the platform reports, all those requested',
    async (platform) => {
      const { now } = await connect(platform);
      expect(now.status, JSON.stringify(now.error)).toBe('connected');
      const granted = channelOf(String(now.channel_id))?.granted_scopes;
      expect(granted).toEqual(expect.arrayContaining([...(await scopesOf(platform))]));
    },
  );

  it.each(['instagram', 'facebook', 'youtube', 'threads'] as const)(
    '%s: requests the part grants, and a channel that has them can make those parts',
    async (platform) => {
      const requested = await scopesOf(platform);
      const needs = PART_GRANTS[platform] ?? {};
      for (const scope of Object.values(needs)) expect(requested).toContain(scope);

      const { now } = await connect(platform);
      const caps = channelCapabilities(platform, channelOf(String(now.channel_id))?.granted_scopes);

      expect(caps.first_comment).toBe(true);
      expect(caps.missing).toEqual({});
    },
  );

  it.each([
    ['instagram', 'instagram_manage_comments'],
    ['facebook', 'pages_manage_engagement'],
    ['youtube', 'https://www.googleapis.com/auth/youtube.force-ssl'],
    ['threads', 'threads_manage_replies'],
  ] as const)(
    '%s: declining %s still connects; the channel then lacks the first comment and says what to grant',
    async (platform, scope) => {
      const { now } = await connect(platform, { fake_decline: scope });

      expect(now.status, JSON.stringify(now.error)).toBe('connected');
      const channel = channelOf(String(now.channel_id));
      expect(channel?.granted_scopes).not.toContain(scope);
      const caps = channelCapabilities(platform, channel?.granted_scopes);
      expect(caps.first_comment).toBe(false);
      expect(caps.missing.first_comment).toBe(scope);
    },
  );

  it('a reconnect records the new grant: declining the scope now takes the first comment away', async () => {
    const first = await connect('instagram');
    const id = String(first.now.channel_id);
    expect(channelCapabilities('instagram', channelOf(id)?.granted_scopes).first_comment).toBe(true);

    const again = await connect('instagram', { fake_decline: 'instagram_manage_comments' }, id);

    expect(again.now.channel_id).toBe(id);
    expect(channelCapabilities('instagram', channelOf(id)?.granted_scopes)).toMatchObject({
      first_comment: false,
      missing: { first_comment: 'instagram_manage_comments' },
    });
  });

  it('a channel connected before grants were recorded lacks the first comment until reconnected', () => {
    expect(channelCapabilities('facebook', undefined)).toMatchObject({
      first_comment: false,
      missing: { first_comment: 'pages_manage_engagement' },
    });
    // LinkedIn's first comment needs nothing beyond posting (w_member_social / w_organization_social).
    expect(channelCapabilities('linkedin', undefined).first_comment).toBe(true);
  });

  it('an account chosen among several keeps the grant the callback read', async () => {
    const session = await create({ platform: 'youtube', redirect_uri: LANDING });
    await callback('youtube', await consent(session.authorize_url, { fake_user: 'brand' }));
    const waiting = await getChannelConnection(ORG_ID, session.id, new Date());
    expect(waiting.status).toBe('selecting_account');

    const done = await selectChannelAccount(
      ORG_ID,
      session.id,
      waiting.accounts?.[1]?.id ?? '',
      new Date(),
      admitted,
    );

    const granted = channelOf(String(done.channel_id))?.granted_scopes;
    expect(granted).toContain('https://www.googleapis.com/auth/youtube.force-ssl');
    expect(JSON.stringify(waiting)).not.toContain('force-ssl');
  });

  it.each(['instagram', 'facebook', 'youtube', 'threads'] as const)(
    "%s: pasting a channel's token (the CLI) records its grant from the platform's token inspection",
    async (platform) => {
      // A channel from before grants were recorded, whose operator pastes its token again.
      const { now } = await connect(platform);
      const id = String(now.channel_id);
      const item = channelOf(id) as Record<string, unknown>;
      delete item.granted_scopes;
      world.table.seed({ ...item, ...keys.channel(ORG_ID, id) });
      expect(channelCapabilities(platform, channelOf(id)?.granted_scopes).first_comment).toBe(false);
      const { credentials } = await getChannelWithCredentials(ORG_ID, id);

      const pasted = await connectChannel({ orgId: ORG_ID, platform, credentials, channelId: id });

      expect(pasted.id).toBe(id);
      expect(channelCapabilities(platform, channelOf(id)?.granted_scopes)).toMatchObject({
        first_comment: true,
        missing: {},
      });
    },
  );

  it('a pasted token the platform cannot inspect records no grant (null), and still connects', async () => {
    const channel = await connectChannel({
      orgId: ORG_ID,
      platform: 'youtube',
      credentials: { access_token: 'token', refresh_token: 'refresh', account_id: 'UCherald' },
    });
    expect(channelOf(channel.id)?.granted_scopes).toBeNull();
  });

  it("threads: when the token may not inspect itself, the app's token reads the grant", async () => {
    world.fakes.failNext('threads', {
      path: /debug_token$/,
      status: 400,
      body: {
        error: {
          message: '(#100) Only Threads testers may inspect tokens',
          type: 'THApiException',
          code: 100,
        },
      },
    });
    const { now } = await connect('threads');

    const inspections = world.fakes.requests('threads').filter((r) => r.path.endsWith('/debug_token'));
    expect(inspections.map((r) => r.query.get('access_token')?.startsWith('TH|'))).toEqual([false, true]);
    expect(channelOf(String(now.channel_id))?.granted_scopes).toContain('threads_manage_replies');
  });
});
