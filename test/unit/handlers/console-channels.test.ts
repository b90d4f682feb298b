import { beforeEach, describe, expect, it, vi } from 'vitest';
import { capabilitiesOf } from '#core/channel-options';
import { channelInbox } from '#core/inbox';
import { ActError, type SignedIn } from '#core/people';
import { handler } from '#handlers/console-channels';
import type { HttpResult } from '#shared/envelope';
import type { ChannelView, ConnectionView } from '#usecases/console-channels';
import * as cases from '#usecases/console-channels';
import * as sessions from '#usecases/console-sessions';
import * as settingsCases from '#usecases/settings';
import {
  CONSOLE_ORIGIN,
  call,
  consoleEvent,
  consoleOrg,
  formPost,
  mainText,
  ORG,
  person,
  sessionOf,
} from '../support/console.ts';

// The Channels page's handler over mocked use cases: what it passes them (the session's org, the
// person, the console's origin, the form's fields), what it renders (escaped; no platform image
// fetched), where it sends the browser, and how refusals reach the person.

vi.mock('#usecases/console-sessions', () => ({ resolveSession: vi.fn(), signOut: vi.fn() }));
vi.mock('#usecases/settings', () => ({ getSettings: vi.fn(), updateSettings: vi.fn() }));
vi.mock('#usecases/console-channels', async (original) => {
  const real = await original<typeof import('#usecases/console-channels')>();
  return {
    ...real,
    channelsOverview: vi.fn(),
    startConnect: vi.fn(),
    connectionOutcome: vi.fn(),
    selectAccount: vi.fn(),
    disconnectPreview: vi.fn(),
    disconnect: vi.fn(),
    channelOf: vi.fn(),
  };
});

const OWNER = person('owner', 1, 'owner@example.com');
const ADMIN = person('admin', 2, 'admin@example.com');
const MEMBER = person('member', 3, 'member@example.com');
const CH = 'ch_01JD0000000000000000000001';
const CONN = 'conn_01JD0000000000000000000001';
const SETTINGS = { dangerous_ops: false, approval_required: false, landing_origins: [] };
const org = () => consoleOrg(SETTINGS);

const channel = (o: Partial<ChannelView> = {}): ChannelView => ({
  id: CH,
  platform: 'linkedin',
  handle: '<b>acme</b>',
  avatar_url: 'https://media.licdn.example/avatar.png',
  followers: 1234,
  status: 'live',
  last_sync_at: '2030-01-02T03:04:05.000Z',
  last_error: null,
  created_at: '2030-01-01T00:00:00.000Z',
  ...o,
});

const session = (o: Partial<ConnectionView> = {}): ConnectionView => ({
  id: CONN,
  platform: 'facebook',
  status: 'awaiting_authorization',
  redirect_uri: `${CONSOLE_ORIGIN}/console/channels/connections/return`,
  authorize_url: 'https://facebook.example/dialog/oauth?state=s',
  channel_id: null,
  accounts: null,
  channel: null,
  error: null,
  expires_at: '2030-01-01T00:10:00.000Z',
  created_at: '2030-01-01T00:00:00.000Z',
  updated_at: '2030-01-01T00:00:00.000Z',
  ...o,
});

const overview = (
  channels: ChannelView[] = [channel()],
  grants: Record<string, string[]> = {},
): cases.ChannelsOverview => ({
  channels: channels.map((c) => ({
    ...c,
    capabilities: capabilitiesOf({ ...c, granted_scopes: grants[c.id] ?? null }),
    inbox: channelInbox({
      platform: c.platform,
      grantedScopes: grants[c.id] ?? null,
      accountId: null,
      poll: null,
    }),
  })),
  oauth: [
    { platform: 'x', ready: true },
    { platform: 'linkedin', ready: true },
    { platform: 'facebook', ready: true },
    { platform: 'tiktok', ready: false },
  ],
});

beforeEach(() => {
  vi.resetAllMocks();
  vi.mocked(sessions.resolveSession).mockImplementation(
    async (cookie) => [OWNER, ADMIN, MEMBER].find((p) => sessionOf(p)[0]?.endsWith(`=${cookie}`)) ?? null,
  );
  vi.mocked(settingsCases.getSettings).mockResolvedValue({ org: org(), settings: SETTINGS, version: 3 });
  vi.mocked(cases.channelsOverview).mockResolvedValue(overview());
});

const get = (routeKey: string, who: SignedIn | null, opts: Parameters<typeof consoleEvent>[1] = {}) =>
  call(handler, consoleEvent(routeKey, { ...(who ? { cookies: sessionOf(who) } : {}), ...opts }));
const post = (
  routeKey: string,
  who: SignedIn,
  fields: Record<string, string> = {},
  params?: Record<string, string>,
) => call(handler, formPost(routeKey, fields, { cookies: sessionOf(who), ...(params ? { params } : {}) }));
const asPerson = (who: SignedIn) => ({ kind: 'person', userId: who.user.id });
const body = (res: HttpResult) => res.body ?? '';

describe('the list', () => {
  it("shows every channel escaped, with initials for a platform's avatar (never fetched), status, followers", async () => {
    vi.mocked(cases.channelsOverview).mockResolvedValue(
      overview([
        channel(),
        channel({ id: 'ch_2', status: 'reauth_required', last_error: 'Grant <revoked>' }),
      ]),
    );
    const res = await get('GET /console/channels', MEMBER);
    expect(res.statusCode).toBe(200);
    expect(cases.channelsOverview).toHaveBeenCalledWith({ orgId: ORG, actor: asPerson(MEMBER) });
    expect(body(res)).toContain('&lt;b&gt;acme&lt;/b&gt;');
    expect(body(res)).not.toContain('<b>acme</b>');
    expect(body(res)).not.toContain('media.licdn.example');
    expect(body(res)).toMatch(
      /<img class="avatar" src="data:image\/svg\+xml,[^"]+" alt="Avatar of &lt;b&gt;acme&lt;\/b&gt;"/,
    );
    expect(mainText(res)).toContain('1,234');
    expect(mainText(res)).toContain('Needs reconnecting');
    expect(body(res)).toContain('Grant &lt;revoked&gt;');
    // A member sees no act and no connect form.
    expect(body(res)).not.toContain('action="/console/channels"');
    expect(mainText(res)).toContain('Owners and admins connect');
    // The list refreshes itself (htmx), the page works without it.
    expect(body(res)).toContain('hx-get="/console/channels"');
  });

  it('shows what each channel can publish, and what to do when its grant lacks a part', async () => {
    vi.mocked(cases.channelsOverview).mockResolvedValue(
      overview(
        [
          channel({ id: 'ch_x', platform: 'x', handle: 'herald-x' }),
          channel({ id: 'ch_ig', platform: 'instagram', handle: 'herald-ig' }),
          channel({ id: 'ch_ig2', platform: 'instagram', handle: 'herald-ig2' }),
        ],
        { ch_ig2: ['instagram_business_basic', 'instagram_manage_comments'] },
      ),
    );
    const res = await get('GET /console/channels', MEMBER);
    const rows = mainText(res).split('herald-');
    const row = (handle: string) => rows.find((r) => r.startsWith(`${handle} `)) ?? '';
    expect(row('x')).toMatch(/Posts\s*Threads\s*First comments\s*Unpublishing/);
    // Instagram: no threads, no unpublishing; first comments need a grant this one lacks.
    expect(row('ig')).not.toContain('Threads');
    expect(row('ig')).not.toContain('Unpublishing');
    expect(row('ig')).toContain('Reconnect First comments: needs the grant instagram_manage_comments');
    expect(row('ig2')).toMatch(/Posts\s*First comments/);
    expect(row('ig2')).not.toContain('Reconnect');
  });

  it('an avatar served from the console’s own origin is shown as it is', async () => {
    vi.mocked(cases.channelsOverview).mockResolvedValue(
      overview([channel({ avatar_url: `${CONSOLE_ORIGIN}/media/a.png` })]),
    );
    const res = await get('GET /console/channels', OWNER);
    expect(body(res)).toContain(`src="${CONSOLE_ORIGIN}/media/a.png"`);
  });

  it('owners and admins get the connect forms; a platform not set up says so instead of offering itself', async () => {
    const res = await get('GET /console/channels', ADMIN);
    expect(body(res)).toContain('value="linkedin"');
    expect(body(res)).not.toContain('value="tiktok"');
    expect(mainText(res)).toContain('Not set up by your operator: TikTok');
    expect(body(res)).toContain('name="instance"');
    expect(body(res)).toContain('type="password"');
  });

  it('the disconnect confirmation says what happens to the scheduled posts', async () => {
    vi.mocked(cases.disconnectPreview).mockResolvedValue({
      channel: channel(),
      scheduled: { count: 3, more: false },
    });
    const res = await get('GET /console/channels', ADMIN, { query: `disconnect=${CH}` });
    expect(cases.disconnectPreview).toHaveBeenCalledWith({
      orgId: ORG,
      actor: asPerson(ADMIN),
      channelId: CH,
    });
    expect(mainText(res)).toContain('3 scheduled posts publish to this channel');
    expect(body(res)).toContain(`action="/console/channels/${CH}/disconnect"`);
  });

  it("a member's confirmation is the use case's 403", async () => {
    vi.mocked(cases.disconnectPreview).mockRejectedValue(
      new ActError('disconnecting needs the owner or admin role', 'forbidden'),
    );
    const res = await get('GET /console/channels', MEMBER, { query: `disconnect=${CH}` });
    expect(res.statusCode).toBe(403);
  });
});

describe('connecting', () => {
  it('an OAuth platform: the session is started with the console’s origin, then its page (consent next)', async () => {
    vi.mocked(cases.startConnect).mockResolvedValue({ kind: 'consent', connectionId: CONN });
    const res = await post('POST /console/channels', ADMIN, { platform: 'linkedin' });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/console/channels/connections/${CONN}`);
    expect(cases.startConnect).toHaveBeenCalledWith(
      expect.objectContaining({
        orgId: ORG,
        actor: asPerson(ADMIN),
        consoleOrigin: CONSOLE_ORIGIN,
        form: expect.objectContaining({ platform: 'linkedin' }),
      }),
    );
  });

  it('Bluesky: connected at once, back to the list with a message', async () => {
    vi.mocked(cases.startConnect).mockResolvedValue({
      kind: 'connected',
      channel: channel({ platform: 'bluesky' }),
      reconnected: false,
    });
    const res = await post('POST /console/channels', OWNER, {
      platform: 'bluesky',
      identifier: 'a.bsky.social',
      app_password: 'x',
    });
    expect(res.headers.location).toBe('/console/channels?msg=channel_connected');
  });

  it('a refused field is shown by the field, the form kept but the app password, 400', async () => {
    vi.mocked(cases.startConnect).mockRejectedValue(
      new cases.FieldsRefused([
        { field: 'app_password', message: 'The platform refused these credentials.' },
      ]),
    );
    const res = await post('POST /console/channels', ADMIN, {
      platform: 'bluesky',
      identifier: 'who.bsky.social',
      app_password: 'secret-typed',
    });
    expect(res.statusCode).toBe(400);
    expect(body(res)).toContain(
      '<a href="#bluesky-app-password">The platform refused these credentials.</a>',
    );
    expect(body(res)).toContain('value="who.bsky.social"');
    expect(body(res)).not.toContain('secret-typed');
  });

  it("a member's POST is the use case's 403, with nothing else done", async () => {
    vi.mocked(cases.startConnect).mockRejectedValue(
      new ActError('connecting channels needs the owner or admin role', 'forbidden'),
    );
    const res = await post('POST /console/channels', MEMBER, { platform: 'linkedin' });
    expect(res.statusCode).toBe(403);
  });

  it('a POST from another site never reaches a use case', async () => {
    const res = await call(
      handler,
      formPost(
        'POST /console/channels',
        { platform: 'x' },
        { cookies: sessionOf(ADMIN), headers: { origin: 'https://evil.example' } },
      ),
    );
    expect(res.statusCode).toBe(403);
    expect(cases.startConnect).not.toHaveBeenCalled();
  });
});

describe("a connection session's page", () => {
  it('the return from the platform continues to the session page without needing the cookie', async () => {
    const res = await get('GET /console/channels/connections/{id}', null, {
      params: { id: 'return' },
      query: `connection_id=${CONN}&status=connected`,
    });
    expect(res.statusCode).toBe(200);
    expect(body(res)).toContain(
      `<meta http-equiv="refresh" content="0; url=/console/channels/connections/${CONN}">`,
    );
    expect(cases.connectionOutcome).not.toHaveBeenCalled();
  });

  it('a return naming no connection is a 404', async () => {
    const res = await get('GET /console/channels/connections/{id}', null, {
      params: { id: 'return' },
      query: 'connection_id=../x',
    });
    expect(res.statusCode).toBe(404);
  });

  it('signed out: to sign-in, and back to this connection after it', async () => {
    const res = await get('GET /console/channels/connections/{id}', null, { params: { id: CONN } });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(
      `/console/sign-in?next=${encodeURIComponent(`/console/channels/connections/${CONN}`)}`,
    );
  });

  it('awaiting consent: a link to the platform', async () => {
    vi.mocked(cases.connectionOutcome).mockResolvedValue(session());
    const res = await get('GET /console/channels/connections/{id}', ADMIN, { params: { id: CONN } });
    expect(cases.connectionOutcome).toHaveBeenCalledWith(
      expect.objectContaining({ orgId: ORG, actor: asPerson(ADMIN), connectionId: CONN }),
    );
    expect(body(res)).toContain('href="https://facebook.example/dialog/oauth?state=s"');
  });

  it('several accounts: a radio per account posting to the session; a member sees them without the form', async () => {
    const accounts = [
      { id: '1', type: 'page', handle: 'acme', name: 'Acme <Pages>', avatar_url: null, followers: 4200 },
      { id: '2', type: 'page', handle: 'outlet', name: 'Acme Outlet', avatar_url: null, followers: 310 },
    ];
    vi.mocked(cases.connectionOutcome).mockResolvedValue(
      session({ status: 'selecting_account', accounts, authorize_url: null }),
    );
    const res = await get('GET /console/channels/connections/{id}', OWNER, { params: { id: CONN } });
    expect(body(res)).toContain(`action="/console/channels/connections/${CONN}"`);
    expect(body(res)).toContain('value="2"');
    expect(body(res)).toContain('Acme &lt;Pages&gt; (acme)');
    const seen = await get('GET /console/channels/connections/{id}', MEMBER, { params: { id: CONN } });
    expect(body(seen)).not.toContain(`action="/console/channels/connections/${CONN}"`);
  });

  it('a denied consent says so', async () => {
    vi.mocked(cases.connectionOutcome).mockResolvedValue(
      session({
        status: 'failed',
        authorize_url: null,
        error: { code: 'consent_denied', message: 'access_denied' },
      }),
    );
    const res = await get('GET /console/channels/connections/{id}', ADMIN, { params: { id: CONN } });
    expect(mainText(res)).toContain('You did not allow Herald');
    expect(mainText(res)).toContain('Nothing was connected');
  });

  it("another organization's session: the use case's 404 inside the person's frame", async () => {
    vi.mocked(cases.connectionOutcome).mockRejectedValue(
      new ActError('No connection with that id.', 'not_found'),
    );
    const res = await get('GET /console/channels/connections/{id}', ADMIN, { params: { id: CONN } });
    expect(res.statusCode).toBe(404);
    expect(body(res)).toContain('admin@example.com');
  });

  it('selecting: the account posted; an account not covered is shown by the radios, 400', async () => {
    vi.mocked(cases.selectAccount).mockResolvedValue(session({ status: 'connected' }));
    const ok = await post(
      'POST /console/channels/connections/{id}',
      ADMIN,
      { account_id: '2' },
      { id: CONN },
    );
    expect(ok.headers.location).toBe(`/console/channels/connections/${CONN}`);
    expect(cases.selectAccount).toHaveBeenCalledWith(
      expect.objectContaining({ connectionId: CONN, accountId: '2', actor: asPerson(ADMIN) }),
    );

    vi.mocked(cases.selectAccount).mockRejectedValue(
      new cases.FieldsRefused([{ field: 'account', message: 'The grant does not cover this account.' }]),
    );
    vi.mocked(cases.connectionOutcome).mockResolvedValue(
      session({
        status: 'selecting_account',
        authorize_url: null,
        accounts: [{ id: '1', type: 'page', handle: 'a', name: null, avatar_url: null, followers: 0 }],
      }),
    );
    const bad = await post(
      'POST /console/channels/connections/{id}',
      ADMIN,
      { account_id: '9' },
      { id: CONN },
    );
    expect(bad.statusCode).toBe(400);
    expect(body(bad)).toContain('<a href="#account-1">The grant does not cover this account.</a>');
  });
});

describe('acts on a channel', () => {
  it('disconnect: through the use case, back to the list with what happened', async () => {
    vi.mocked(cases.disconnect).mockResolvedValue(channel({ status: 'disconnected' }));
    const res = await post('POST /console/channels/{id}/{act}', ADMIN, {}, { id: CH, act: 'disconnect' });
    expect(cases.disconnect).toHaveBeenCalledWith(
      expect.objectContaining({ orgId: ORG, actor: asPerson(ADMIN), channelId: CH }),
    );
    expect(res.headers.location).toBe('/console/channels?msg=channel_disconnected');
  });

  it("a member's disconnect is a 403", async () => {
    vi.mocked(cases.disconnect).mockRejectedValue(new ActError('no', 'forbidden'));
    const res = await post('POST /console/channels/{id}/{act}', MEMBER, {}, { id: CH, act: 'disconnect' });
    expect(res.statusCode).toBe(403);
  });

  it('reconnect of an OAuth channel: a session for that channel, then its page', async () => {
    vi.mocked(cases.channelOf).mockResolvedValue(channel({ status: 'reauth_required' }));
    vi.mocked(cases.startConnect).mockResolvedValue({ kind: 'consent', connectionId: CONN });
    const res = await post('POST /console/channels/{id}/{act}', OWNER, {}, { id: CH, act: 'reconnect' });
    expect(cases.startConnect).toHaveBeenCalledWith(
      expect.objectContaining({ channelId: CH, form: expect.objectContaining({ platform: 'linkedin' }) }),
    );
    expect(res.headers.location).toBe(`/console/channels/connections/${CONN}`);
  });

  it('an unknown act is a 404, nothing called', async () => {
    const res = await post('POST /console/channels/{id}/{act}', OWNER, {}, { id: CH, act: 'explode' });
    expect(res.statusCode).toBe(404);
    expect(cases.disconnect).not.toHaveBeenCalled();
    expect(cases.startConnect).not.toHaveBeenCalled();
  });

  it('the Bluesky reconnect form asks for a new app password', async () => {
    vi.mocked(cases.channelOf).mockResolvedValue(
      channel({ platform: 'bluesky', handle: 'acme.bsky.social', status: 'reauth_required' }),
    );
    const res = await get('GET /console/channels', ADMIN, { query: `reconnect=${CH}` });
    expect(body(res)).toContain(`action="/console/channels/${CH}/reconnect"`);
    expect(body(res)).toContain('value="acme.bsky.social"');
  });
});

it('every page carries no inline script or style', async () => {
  const res = await get('GET /console/channels', OWNER);
  expect(body(res)).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  expect(body(res)).not.toMatch(/\sstyle=/);
  expect(res.headers['content-security-policy']).toContain("img-src 'self' data:");
});
