import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { OAUTH_PLATFORMS } from '#core/connections';
import { FAKE_APPS } from '../fakes/oauth.ts';
import {
  api,
  baseUrl,
  cli,
  cliOk,
  dangerous,
  fakeState,
  type Workspace,
  waitForPost,
  webhookReceiver,
  workspace,
} from './helpers.ts';

// Connecting accounts as users do, over HTTP against the local stack and the platforms' contract
// fakes: the operator registers each platform's app with the CLI; an API client opens a connection
// session, the person consents at the platform (the fake's consent page), the browser comes back
// through Herald's callback, and the channel is live with the profile the platform reported and
// publishes. Then what keeps it working: the channel sync renews tokens ahead of expiry, notices
// a revoked grant (channel.reauth_required, once), reconnecting in place, disconnecting; and the
// CLI's own browser flow.

type Json = Record<string, unknown>;
const OAUTH = OAUTH_PLATFORMS;
const LANDING = 'http://127.0.0.1:9/connected';
const fakes = () => inject('fakesOrigin');

interface Connection {
  id: string;
  status: string;
  authorize_url: string | null;
  channel_id: string | null;
  accounts: Array<{ id: string; handle: string }> | null;
  channel: {
    id: string;
    handle: string;
    status: string;
    followers: number;
    avatar_url: string | null;
  } | null;
  error: { code: string; message: string } | null;
}

beforeAll(async () => {
  // The operator's part, once per deployment: each platform's app (the fakes know these).
  for (const platform of OAUTH) {
    const app = FAKE_APPS[platform];
    await cliOk(
      'platform-app',
      'set',
      '--platform',
      platform,
      '--client-id',
      app.clientId,
      '--client-secret',
      app.clientSecret,
    );
  }
}, 90_000);

/** The person at the platform's consent page; where the platform sends the browser back. */
async function consent(authorizeUrl: string | null, extra: Record<string, string> = {}): Promise<URL> {
  const url = new URL(String(authorizeUrl));
  for (const [k, v] of Object.entries(extra)) url.searchParams.set(k, v);
  const res = await fetch(url, { redirect: 'manual' });
  expect(res.status, await res.text()).toBe(302);
  return new URL(String(res.headers.get('location')));
}

/** The browser at Herald's callback: the landing URL it is sent on to. */
async function callback(back: URL): Promise<URL> {
  expect(back.origin).toBe(baseUrl());
  const res = await fetch(back, { redirect: 'manual' });
  expect(res.status, await res.text()).toBe(303);
  return new URL(String(res.headers.get('location')));
}

async function session(ws: Workspace, id: string): Promise<Connection> {
  const res = await api<Connection>('GET', `/v1/channel-connections/${id}`, { key: ws.key });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** Session → consent → callback → (the first account, when several): the session at its end. */
async function connect(ws: Workspace, platform: string, extra: Record<string, string> = {}, body: Json = {}) {
  const created = await api<Connection>('POST', '/v1/channel-connections', {
    key: ws.key,
    body: {
      platform,
      redirect_uri: LANDING,
      ...(platform === 'mastodon' ? { instance: `${fakes()}/mastodon` } : {}),
      ...body,
    },
  });
  expect(created.status, created.text).toBe(201);
  expect(created.body.status).toBe('awaiting_authorization');
  const landed = await callback(await consent(created.body.authorize_url, extra));
  expect(landed.origin + landed.pathname).toBe(LANDING);
  expect(landed.searchParams.get('connection_id')).toBe(created.body.id);
  let now = await session(ws, created.body.id);
  if (now.status === 'selecting_account') {
    const picked = await api<Connection>('POST', `/v1/channel-connections/${now.id}/select`, {
      key: ws.key,
      body: { account_id: now.accounts?.[0]?.id },
    });
    expect(picked.status, picked.text).toBe(200);
    now = picked.body;
  }
  return { created: created.body, landed, now };
}

async function publishNow(ws: Workspace, channelId: string, text: string) {
  await dangerous(ws, true);
  const res = await api<{ id: string }>('POST', '/v1/posts', {
    key: ws.key,
    body: { variants: [{ channel_id: channelId, body: text }], publish_now: true },
  });
  expect(res.status, res.text).toBe(201);
  return waitForPost<{ id: string; status: string; variants: Json[] }>(
    ws.key,
    res.body.id,
    (p) => p.status === 'published' || p.status === 'failed',
  );
}

async function oauthStats(platform: string) {
  const res = await fetch(`${fakes()}/__fakes/${platform}/state`);
  return ((await res.json()) as { oauth: { refreshes: number; revocations: number; codesExchanged: number } })
    .oauth;
}

async function revoke(platform: string, user: string) {
  const res = await fetch(`${fakes()}/__fakes/${platform}/revoke`, {
    method: 'POST',
    body: JSON.stringify({ user }),
  });
  expect(res.status, await res.text()).toBe(200);
}

async function until<T>(fn: () => Promise<T | undefined>, timeoutMs = 40_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function channelOf(ws: Workspace, id: string): Promise<Json | undefined> {
  const res = await api<{ data: Json[] }>('GET', '/v1/channels', { key: ws.key });
  return res.body.data.find((c) => c.id === id);
}

describe('connecting through the API', () => {
  it.each([...OAUTH, 'mastodon'])(
    '%s: consent at the platform, a live channel with its profile from the platform',
    async (platform) => {
      const ws = await workspace([]);

      const { now } = await connect(ws, platform);

      expect(now.status, JSON.stringify(now.error)).toBe('connected');
      expect(now.channel).toMatchObject({ status: 'live' });
      expect(now.channel?.handle).not.toBe('');
      const listed = await channelOf(ws, String(now.channel_id));
      expect(listed).toMatchObject({ platform, status: 'live', handle: now.channel?.handle });
    },
  );

  it.each(['x', 'linkedin', 'threads', 'facebook', 'mastodon'])(
    '%s: the connected channel publishes with the tokens the connection got',
    async (platform) => {
      const ws = await workspace([]);
      const { now } = await connect(ws, platform, { fake_user: `pub-${platform}` });
      const text = `Connected and publishing ${Date.now()}`;

      const post = await publishNow(ws, String(now.channel_id), text);

      expect(post.status, JSON.stringify(post)).toBe('published');
      expect(JSON.stringify((await fakeState(platform)).posts)).toContain(text);
    },
  );

  it('refuses a session for a platform whose app is not registered, and bad input, with RFC 9457 problems', async () => {
    const ws = await workspace([]);
    const bad = await api('POST', '/v1/channel-connections', {
      key: ws.key,
      body: { platform: 'x', redirect_uri: 'http://evil.example/cb' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({
      code: 'validation_failed',
      errors: [expect.objectContaining({ pointer: '/redirect_uri' })],
    });
    const mastodon = await api('POST', '/v1/channel-connections', {
      key: ws.key,
      body: { platform: 'mastodon', instance: 'http://10.1.2.3' },
    });
    expect(mastodon.status).toBe(400);
    expect(mastodon.body).toMatchObject({
      errors: [expect.objectContaining({ pointer: '/instance', code: 'forbidden_address' })],
    });
  });

  it('lands only on origins the operator allowed with the CLI; loopback needs none', async () => {
    // Arrange
    const ws = await workspace([]);
    const start = (redirect: string) =>
      api<Connection>('POST', '/v1/channel-connections', {
        key: ws.key,
        body: { platform: 'linkedin', redirect_uri: redirect },
      });
    const settings = (origins: string) =>
      cli('settings', 'set', '--org', ws.orgId, '--by', ws.ownerId, '--landing-origins', origins);

    // Act
    const before = await start('https://app.example.com/connected');
    const allowing = await settings('https://App.example.com/');
    const after = await start('https://app.example.com/connected');
    const otherPort = await start('https://app.example.com:8443/connected');
    const notAnOrigin = await settings('https://app.example.com/connected');
    const loopback = await start(LANDING);

    // Assert
    expect(before.status).toBe(400);
    expect(before.body).toMatchObject({
      code: 'validation_failed',
      errors: [
        {
          pointer: '/redirect_uri',
          code: 'origin_not_allowed',
          message: expect.stringContaining('operator must allow it'),
        },
      ],
    });
    expect(allowing.code, allowing.stderr).toBe(0);
    expect(allowing.json).toMatchObject({ settings: { landing_origins: ['https://app.example.com'] } });
    expect(after.status, after.text).toBe(201);
    expect(otherPort.status).toBe(400);
    expect(notAnOrigin.code).toBe(2);
    expect(loopback.status, loopback.text).toBe(201);
  });

  it('a denied consent fails the session and lands the browser with the error', async () => {
    const ws = await workspace([]);
    const created = await api<Connection>('POST', '/v1/channel-connections', {
      key: ws.key,
      body: { platform: 'linkedin', redirect_uri: LANDING },
    });
    const landed = await callback(await consent(created.body.authorize_url, { fake_consent: 'deny' }));
    expect(landed.searchParams.get('status')).toBe('failed');
    expect(landed.searchParams.get('error')).toBe('consent_denied');
    expect(await session(ws, created.body.id)).toMatchObject({
      status: 'failed',
      error: { code: 'consent_denied' },
    });
    expect((await api<{ data: Json[] }>('GET', '/v1/channels', { key: ws.key })).body.data).toEqual([]);
  });
});

describe('keeping channels working', () => {
  it('the channel sync renews a short-lived token before it expires; the channel keeps publishing', async () => {
    const ws = await workspace([]);
    const before = await oauthStats('x');
    // Tokens that live 10 s: the sync renews them half-way.
    const { now } = await connect(ws, 'x', { fake_user: 'renewal', fake_token_lifetime: '10' });
    expect(now.status).toBe('connected');

    await until(
      async () => ((await oauthStats('x')).refreshes > before.refreshes ? true : undefined),
      30_000,
    );
    // Past the first token's life: only the renewed one works.
    await new Promise((r) => setTimeout(r, 6_000));
    const post = await publishNow(ws, String(now.channel_id), `After renewal ${Date.now()}`);

    expect(post.status, JSON.stringify(post.variants)).toBe('published');
    expect(await channelOf(ws, String(now.channel_id))).toMatchObject({ status: 'live' });
  }, 90_000);

  it('a revoked grant: reauth_required with one channel.reauth_required event; reconnecting in place revives it', async () => {
    const ws = await workspace([]);
    const rx = await webhookReceiver();
    const endpoint = await api('POST', '/v1/webhook-endpoints', {
      key: ws.key,
      body: { url: rx.url, event_types: ['channel.reauth_required', 'channel.connected'] },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
    const { now } = await connect(ws, 'linkedin', { fake_user: 'revoker' });
    const id = String(now.channel_id);
    await revoke('linkedin', 'revoker');

    // The operator (or the scheduled sync) looks at the channel; twice: one event.
    const first = await cliOk('channel', 'sync', '--org', ws.orgId, '--id', id);
    await cliOk('channel', 'sync', '--org', ws.orgId, '--id', id);
    expect(first).toMatchObject({ result: 'reauth_required' });
    const flagged = await channelOf(ws, id);
    expect(flagged).toMatchObject({ status: 'reauth_required' });
    await until(async () => (rx.ofType('channel.reauth_required').length ? true : undefined));

    const again = await connect(ws, 'linkedin', { fake_user: 'revoker' }, { channel_id: id });

    expect(again.now).toMatchObject({ status: 'connected', channel_id: id, channel: { status: 'live' } });
    await until(async () => (rx.ofType('channel.connected').length >= 2 ? true : undefined));
    expect(rx.ofType('channel.reauth_required')).toHaveLength(1);
    expect(JSON.parse(rx.ofType('channel.reauth_required')[0]?.body ?? '{}')).toMatchObject({
      data: { channel: { id, status: 'reauth_required' } },
    });
  }, 90_000);

  it('disconnecting revokes at the platform, refuses new posts to the channel, and frees its plan slot', async () => {
    const ws = await workspace([], 'free');
    const { now } = await connect(ws, 'x', { fake_user: 'leaver' });
    const id = String(now.channel_id);
    const before = await oauthStats('x');

    const res = await api<Json>('DELETE', `/v1/channels/${id}`, { key: ws.key });

    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'disconnected' });
    expect((await oauthStats('x')).revocations).toBeGreaterThan(before.revocations);
    const post = await api('POST', '/v1/posts', {
      key: ws.key,
      body: { variants: [{ channel_id: id, body: 'gone' }], draft: true },
    });
    expect(post.status).toBe(400);
    expect(post.body).toMatchObject({
      errors: [expect.objectContaining({ pointer: '/variants/0/channel_id', code: 'channel_disconnected' })],
    });
    const usage = await api<{ meters: Array<{ key: string; used: number }> }>('GET', '/v1/usage', {
      key: ws.key,
    });
    expect(usage.body.meters.find((m) => m.key === 'channels')?.used).toBe(0);
    const twice = await api('DELETE', `/v1/channels/${id}`, { key: ws.key });
    expect(twice.status).toBe(200);
  }, 90_000);
});

describe('the CLI', () => {
  it('`herald channel connect --platform linkedin` prints the authorize URL and ends with the channel', async () => {
    const ws = await workspace([]);
    const root = resolve(import.meta.dirname, '../..');
    const child = spawn(
      process.execPath,
      [
        join(root, 'bin/herald.js'),
        'channel',
        'connect',
        '--org',
        ws.orgId,
        '--platform',
        'linkedin',
        '--json',
      ],
      { env: { ...process.env, HERALD_DATA_DIR: inject('dataDir') }, cwd: root },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const exited = new Promise<number>((ok) => child.on('close', (code) => ok(code ?? -1)));

    // The operator opens the printed URL in a browser and consents.
    const url = await until(async () => /https?:\/\/\S+\/oauth\/v2\/authorization\S*/.exec(stderr)?.[0]);
    const landed = await callback(await consent(url, { fake_user: 'cli-operator' }));
    const page = await fetch(landed);
    expect(page.status).toBe(200);

    expect(await exited, stderr).toBe(0);
    const channel = JSON.parse(stdout) as Json;
    expect(channel).toMatchObject({ platform: 'linkedin', status: 'live' });
    expect(await channelOf(ws, String(channel.id))).toMatchObject({ status: 'live' });
  }, 90_000);

  it('refuses pasted credentials the platform refuses, storing nothing', async () => {
    const ws = await workspace([]);
    const res = await cli(
      'channel',
      'connect',
      '--org',
      ws.orgId,
      '--platform',
      'x',
      '--credentials',
      JSON.stringify({ access_token: 'not-a-token', account_id: '1500000000000000001' }),
    );
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/x refused the credentials/);
    expect((await api<{ data: Json[] }>('GET', '/v1/channels', { key: ws.key })).body.data).toEqual([]);
  });
});
