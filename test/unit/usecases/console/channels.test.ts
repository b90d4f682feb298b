import { KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { clearOpened } from '#adapters/sealed';
import type { ChannelRecord } from '#core/accounts';
import { OAUTH_PLATFORMS } from '#core/connections';
import type { AuditEntry } from '#core/people';
import { setPlatformApp } from '#usecases/cli/admin';
import {
  CONNECTION_RETURN_PATH,
  channelsOverview,
  connectionOutcome,
  disconnect,
  disconnectPreview,
  FieldsRefused,
  selectAccount,
  startConnect,
} from '#usecases/console-channels';
import { createChannelConnection } from '#usecases/create-channel-connection';
import { FAKE_APPS } from '../../../fakes/oauth.ts';
import { useWorld } from '../../faults/support/world.ts';
import { connectFlow } from '../../support/connect-flow.ts';
import {
  channel,
  channelItem,
  fixedId,
  ORG_ID,
  org,
  orgItem,
  post,
  postItem,
  variant,
} from '../../support/fixtures.ts';
import { serveDataKeys } from '../../support/kms.ts';
import { ADMIN, actErrorOf, MEMBER, OWNER, person, STRANGER, userItems } from '../../support/people.ts';

// The console's channel acts over the API's own use cases, against the platforms' contract fakes
// and an in-memory table: who may act (members may not: nothing changes), the audit entry of each
// act, the console's own origin as the consent's landing, and the API's refusals as a form's fields.

const kms = mockClient(KMSClient);
const world = useWorld();
const CONSOLE = 'https://herald.example.com';
const { consent, callback } = connectFlow(world);

beforeEach(async () => {
  kms.reset();
  serveDataKeys(kms);
  clearOpened();
  // The console on AWS is served on the deployment's public origin, which no setting lists.
  vi.stubEnv('HERALD_PUBLIC_URL', CONSOLE);
  world.table.seed(orgItem(org()));
  for (const u of [OWNER, ADMIN, MEMBER, STRANGER]) for (const item of userItems(u)) world.table.seed(item);
  for (const platform of OAUTH_PLATFORMS.filter((p) => p !== 'tiktok')) {
    const app = FAKE_APPS[platform];
    await setPlatformApp({ platform, clientId: app.clientId, clientSecret: app.clientSecret });
  }
});

// Its own entries; a refused act's act_refused is tested with the audit log (settings-and-audit).
const audit = () =>
  (world.table.all('AUDIT#') as unknown as AuditEntry[]).filter((e) => e.action !== 'act_refused');
const channels = () => world.table.all('CHANNEL#') as unknown as ChannelRecord[];
const bluesky = (app_password = 'app-password') => ({
  platform: 'bluesky',
  identifier: 'acme.bsky.social',
  app_password,
  service: world.fakes.url('bluesky'),
});
const start = (
  who = ADMIN,
  form: Parameters<typeof startConnect>[0]['form'] = { platform: 'linkedin' },
  channelId?: string,
) =>
  startConnect({
    orgId: ORG_ID,
    actor: person(who),
    consoleOrigin: CONSOLE,
    form,
    channelId,
    now: new Date(),
  });

/** The person at the platform and back through the callback: the session id the console lands with. */
async function consentFor(connectionId: string, extra: Record<string, string> = {}) {
  const session = await connectionOutcome({
    orgId: ORG_ID,
    actor: person(ADMIN),
    connectionId,
    now: new Date(),
  });
  const back = await callback(session.platform, await consent(session.authorize_url, extra));
  return back;
}

describe('the channels page', () => {
  it('lists every channel, and which OAuth platforms the operator has set up, for a member too', async () => {
    world.table.seed(channelItem({ ...channel(1, 'x'), status: 'reauth_required', last_error: 'revoked' }));

    const seen = await channelsOverview({ orgId: ORG_ID, actor: person(MEMBER) });

    expect(seen.channels).toEqual([
      expect.objectContaining({ id: fixedId('channel', 1), status: 'reauth_required' }),
    ]);
    expect(seen.oauth.find((p) => p.platform === 'tiktok')).toEqual({ platform: 'tiktok', ready: false });
    expect(seen.oauth.filter((p) => p.ready)).toHaveLength(OAUTH_PLATFORMS.length - 1);
  });

  it('refuses a person of another organization', async () => {
    const err = await actErrorOf(channelsOverview({ orgId: ORG_ID, actor: person(STRANGER) }));
    expect(err.kind).toBe('not_found');
  });
});

describe('connecting', () => {
  it("an OAuth platform: a session whose consent lands on the console's own origin, then the channel, audited once", async () => {
    const started = await start(ADMIN, { platform: 'linkedin' });
    expect(started.kind).toBe('consent');
    const id = started.kind === 'consent' ? started.connectionId : '';

    const landed = await consentFor(id, { fake_user: 'console-admin' });

    expect(landed.origin + landed.pathname).toBe(`${CONSOLE}${CONNECTION_RETURN_PATH}`);
    expect(landed.searchParams.get('connection_id')).toBe(id);
    const outcome = await connectionOutcome({
      orgId: ORG_ID,
      actor: person(ADMIN),
      connectionId: id,
      now: new Date(),
    });
    expect(outcome).toMatchObject({ status: 'connected', channel: { platform: 'linkedin', status: 'live' } });
    // Seen again (a reload, another tab): the same one entry.
    await connectionOutcome({ orgId: ORG_ID, actor: person(OWNER), connectionId: id, now: new Date() });
    expect(audit()).toEqual([
      expect.objectContaining({
        action: 'channel_connected',
        target: outcome.channel_id,
        detail: expect.objectContaining({ platform: 'linkedin', connection_id: id }),
      }),
    ]);
  });

  it('a member may look at a connected session; it records nothing in their name', async () => {
    const started = await start(OWNER, { platform: 'x' });
    const id = started.kind === 'consent' ? started.connectionId : '';
    await consentFor(id);

    const seen = await connectionOutcome({
      orgId: ORG_ID,
      actor: person(MEMBER),
      connectionId: id,
      now: new Date(),
    });

    expect(seen.status).toBe('connected');
    expect(audit()).toEqual([]);
  });

  it('a member may not start a connection: 403, no session stored', async () => {
    const err = await actErrorOf(start(MEMBER, { platform: 'linkedin' }));
    expect(err.kind).toBe('forbidden');
    expect(world.table.all('CONN#')).toEqual([]);
  });

  it('a platform the operator has not set up is a field error, nothing stored', async () => {
    const err = await start(ADMIN, { platform: 'tiktok' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FieldsRefused);
    expect((err as FieldsRefused).fields).toEqual([
      { field: 'platform', message: expect.stringContaining('not set up by your operator') },
    ]);
    expect(world.table.all('CONN#')).toEqual([]);
  });

  it('Bluesky: a refused app password is a field error and stores nothing; a good one connects at once, audited', async () => {
    const refused = await start(ADMIN, bluesky('wrong')).catch((e: unknown) => e);
    expect((refused as FieldsRefused).fields).toEqual([
      {
        field: 'app_password',
        message: expect.stringMatching(/^Bluesky did not accept this handle and app password/),
      },
    ]);
    // In a person's words, not the server's wire text.
    expect((refused as FieldsRefused).fields[0]?.message).not.toMatch(
      /createSession|401|AuthenticationRequired/,
    );
    expect(channels()).toEqual([]);

    const ok = await start(ADMIN, bluesky());

    expect(ok).toMatchObject({
      kind: 'connected',
      reconnected: false,
      channel: { platform: 'bluesky', status: 'live' },
    });
    expect(audit()).toEqual([
      expect.objectContaining({
        action: 'channel_connected',
        actor: expect.objectContaining({ user_id: ADMIN.id }),
      }),
    ]);
  });

  it('empty fields are refused by the field they are about', async () => {
    const err = (await start(ADMIN, { platform: 'mastodon', instance: '' }).catch(
      (e: unknown) => e,
    )) as FieldsRefused;
    expect(err.fields.map((f) => f.field)).toEqual(['instance']);
    const blue = (await start(ADMIN, { platform: 'bluesky', identifier: '', app_password: '' }).catch(
      (e: unknown) => e,
    )) as FieldsRefused;
    expect(blue.fields.map((f) => f.field).sort()).toEqual(['app_password', 'identifier']);
  });

  it('several accounts: the choice connects the one picked; a member may not pick', async () => {
    const started = await start(ADMIN, { platform: 'facebook' });
    const id = started.kind === 'consent' ? started.connectionId : '';
    await consentFor(id);
    const waiting = await connectionOutcome({
      orgId: ORG_ID,
      actor: person(ADMIN),
      connectionId: id,
      now: new Date(),
    });
    expect(waiting.status).toBe('selecting_account');
    const second = waiting.accounts?.[1]?.id ?? '';

    expect(
      (
        await actErrorOf(
          selectAccount({
            orgId: ORG_ID,
            actor: person(MEMBER),
            connectionId: id,
            accountId: second,
            now: new Date(),
          }),
        )
      ).kind,
    ).toBe('forbidden');
    const unknown = await selectAccount({
      orgId: ORG_ID,
      actor: person(ADMIN),
      connectionId: id,
      accountId: 'nope',
      now: new Date(),
    }).catch((e: unknown) => e);
    expect((unknown as FieldsRefused).fields).toEqual([{ field: 'account', message: expect.any(String) }]);
    const done = await selectAccount({
      orgId: ORG_ID,
      actor: person(ADMIN),
      connectionId: id,
      accountId: second,
      now: new Date(),
    });

    expect(done).toMatchObject({ status: 'connected', channel: { platform: 'facebook' } });
    expect(channels()).toHaveLength(1);
    // Selecting again: the session is over, a conflict.
    expect(
      (
        await actErrorOf(
          selectAccount({
            orgId: ORG_ID,
            actor: person(ADMIN),
            connectionId: id,
            accountId: second,
            now: new Date(),
          }),
        )
      ).kind,
    ).toBe('conflict');
  });

  it('a denied consent ends the session failed, consent_denied; nothing connected', async () => {
    const started = await start(ADMIN, { platform: 'linkedin' });
    const id = started.kind === 'consent' ? started.connectionId : '';
    await consentFor(id, { fake_consent: 'deny' });
    const seen = await connectionOutcome({
      orgId: ORG_ID,
      actor: person(ADMIN),
      connectionId: id,
      now: new Date(),
    });
    expect(seen).toMatchObject({ status: 'failed', error: { code: 'consent_denied' } });
    expect(channels()).toEqual([]);
  });

  it("another organization's session is not found", async () => {
    const started = await start(ADMIN, { platform: 'linkedin' });
    const id = started.kind === 'consent' ? started.connectionId : '';
    const err = await actErrorOf(
      connectionOutcome({ orgId: ORG_ID, actor: person(STRANGER), connectionId: id, now: new Date() }),
    );
    expect(err.kind).toBe('not_found');
  });

  it('reconnects a channel in place (same id), audited as a reconnection', async () => {
    const first = await start(ADMIN, { platform: 'linkedin' });
    const firstId = first.kind === 'consent' ? first.connectionId : '';
    await consentFor(firstId, { fake_user: 'again' });
    const { channel_id } = await connectionOutcome({
      orgId: ORG_ID,
      actor: person(ADMIN),
      connectionId: firstId,
      now: new Date(),
    });
    vi.setSystemTime(new Date(Date.now() + 60_000));

    const again = await start(OWNER, { platform: 'linkedin' }, String(channel_id));
    const againId = again.kind === 'consent' ? again.connectionId : '';
    await consentFor(againId, { fake_user: 'again' });
    const seen = await connectionOutcome({
      orgId: ORG_ID,
      actor: person(OWNER),
      connectionId: againId,
      now: new Date(),
    });

    expect(seen).toMatchObject({ status: 'connected', channel_id });
    expect(channels()).toHaveLength(1);
    expect(
      audit()
        .map((e) => e.action)
        .sort(),
    ).toEqual(['channel_connected', 'channel_reconnected']);
  });
});

describe('disconnecting', () => {
  beforeEach(() => {
    world.table.seed(channelItem(channel(1, 'bluesky')));
    world.table.seed(channelItem(channel(2, 'bluesky')));
    const at = new Date(Date.now() + 86_400_000).toISOString();
    const scheduled = (n: number, ch: number) =>
      postItem(
        post({
          id: fixedId('post', n),
          status: 'scheduled',
          scheduled_at: at,
          variants: [variant(fixedId('channel', ch))],
        }),
      );
    world.table.seed(scheduled(1, 1));
    world.table.seed(scheduled(2, 1));
    world.table.seed(scheduled(3, 2));
  });

  it("the confirmation counts the channel's scheduled posts from the status index, never a scan", async () => {
    world.table.calls.length = 0;
    const preview = await disconnectPreview({
      orgId: ORG_ID,
      actor: person(ADMIN),
      channelId: fixedId('channel', 1),
    });
    expect(preview).toMatchObject({
      channel: { id: fixedId('channel', 1) },
      scheduled: { count: 2, more: false },
    });
    // One query of the workspace's scheduled posts (the status index), the rest single-item reads.
    const queries = world.table.callsOf('Query');
    expect(queries.map((q) => q.view.raw.IndexName)).toEqual(['gsi1']);
    expect(new Set(world.table.calls.map((c) => c.op))).toEqual(
      new Set(['Query', 'GetItem', 'BatchGetItem']),
    );
  });

  it('a member may not: 403, the channel still live, no entry', async () => {
    const err = await actErrorOf(
      disconnect({ orgId: ORG_ID, actor: person(MEMBER), channelId: fixedId('channel', 1), now: new Date() }),
    );
    expect(err.kind).toBe('forbidden');
    expect(channels().find((c) => c.id === fixedId('channel', 1))?.status).toBe('live');
    expect(audit()).toEqual([]);
    expect(
      (
        await actErrorOf(
          disconnectPreview({ orgId: ORG_ID, actor: person(MEMBER), channelId: fixedId('channel', 1) }),
        )
      ).kind,
    ).toBe('forbidden');
  });

  it('an admin disconnects: the channel kept as disconnected, audited; a second time is a conflict', async () => {
    const done = await disconnect({
      orgId: ORG_ID,
      actor: person(ADMIN),
      channelId: fixedId('channel', 1),
      now: new Date(),
    });
    expect(done.status).toBe('disconnected');
    expect(audit()).toEqual([
      expect.objectContaining({ action: 'channel_disconnected', target: fixedId('channel', 1) }),
    ]);
    const again = await actErrorOf(
      disconnect({ orgId: ORG_ID, actor: person(ADMIN), channelId: fixedId('channel', 1), now: new Date() }),
    );
    expect(again.kind).toBe('conflict');
    expect(audit()).toHaveLength(1);
  });

  it("another organization's channel, or no channel, is not found", async () => {
    world.table.seed(channelItem(channel(7, 'x', 'org_01JD0000000000000000000002')));
    for (const id of [fixedId('channel', 9), 'nonsense'])
      expect(
        (
          await actErrorOf(
            disconnect({ orgId: ORG_ID, actor: person(ADMIN), channelId: id, now: new Date() }),
          )
        ).kind,
      ).toBe('not_found');
  });
});

describe("createChannelConnection's landing", () => {
  it("accepts the deployment's own public origin without any allowed origin", async () => {
    const session = await createChannelConnection({
      orgId: ORG_ID,
      body: { platform: 'x', redirect_uri: `${CONSOLE}/console/channels/connections/return` },
      requestHost: 'abc.execute-api.eu-west-1.amazonaws.com',
      now: new Date(),
      admitted: async () => undefined,
    });
    expect(session.status).toBe('awaiting_authorization');
  });

  it('accepts the request host as its own origin when no public URL is configured, and still refuses others', async () => {
    vi.stubEnv('HERALD_PUBLIC_URL', '');
    const host = 'abc.execute-api.eu-west-1.amazonaws.com';
    const create = (redirect: string) =>
      createChannelConnection({
        orgId: ORG_ID,
        body: { platform: 'x', redirect_uri: redirect },
        requestHost: host,
        now: new Date(),
        admitted: async () => undefined,
      });
    expect((await create(`https://${host}/console/channels/connections/return`)).status).toBe(
      'awaiting_authorization',
    );
    await expect(create(`https://${host}.evil.example/x`)).rejects.toMatchObject({
      code: 'validation_failed',
    });
    await expect(create(`http://${host}/x`)).rejects.toMatchObject({ code: 'validation_failed' });
  });
});
