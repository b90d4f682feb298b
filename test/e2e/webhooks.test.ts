import { DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { RETRY_SCHEDULE_SECONDS } from '#core/webhooks';
import type { LocalStackInfo } from '../../bin/local/stack-file.ts';
import { E2E_TIME_SCALE } from './global-setup.ts';
import {
  api,
  CREDENTIALS,
  cliOk,
  dangerous,
  failPlatform,
  mint,
  stackInfo,
  type Workspace,
  waitForPost,
  webhookReceiver,
  workspace,
} from './helpers.ts';

// Webhooks over real HTTP (issue 6): loopback receivers (allow-listed with HERALD_WEBHOOK_ALLOW_CIDRS
// = 127.0.0.0/8), signatures checked with the standardwebhooks package, and the whole retry schedule
// and failure ladder run under HERALD_TIME_SCALE (72 h ≈ 26 s).

type Json = Record<string, unknown>;

async function until<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 40_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

async function createEndpoint(ws: Workspace, url: string, eventTypes: string[]) {
  const res = await api('POST', '/v1/webhook-endpoints', {
    key: ws.key,
    body: { url, event_types: eventTypes, description: 'e2e' },
  });
  expect(res.status, res.text).toBe(201);
  return res.body as Json & { id: string; secret: string };
}

const endpointOf = async (ws: Workspace, id: string) => {
  const list = await api<{ data: Array<Json & { id: string }> }>('GET', '/v1/webhook-endpoints', {
    key: ws.key,
  });
  expect(list.status, list.text).toBe(200);
  return list.body.data.find((e) => e.id === id) as unknown as Json & {
    state: string;
    failure: Json;
    enabled: boolean;
  };
};

/** Connects (or reconnects) the fake's Mastodon account: each time is a channel.connected event. */
async function connectChannel(ws: Workspace) {
  await cliOk(
    'channel',
    'connect',
    '--org',
    ws.orgId,
    '--platform',
    'mastodon',
    '--credentials',
    JSON.stringify(CREDENTIALS.mastodon),
  );
}

/** Points an endpoint at `url` behind the API's back, as a DNS change after creation would. */
async function plantUrl(ws: Workspace, endpointId: string, url: string) {
  const info = stackInfo() as unknown as LocalStackInfo;
  const ddb = new DynamoDBClient({
    endpoint: info.dynamodbEndpoint,
    region: 'us-east-1',
    credentials: info.dynamodbCredentials,
  });
  await ddb.send(
    new UpdateItemCommand({
      TableName: info.tableName,
      Key: { pk: { S: `ORG#${ws.orgId}` }, sk: { S: `WHE#${endpointId}` } },
      UpdateExpression: 'SET #u = :u',
      ExpressionAttributeNames: { '#u': 'url' },
      ExpressionAttributeValues: { ':u': { S: url } },
    }),
  );
}

const HOSTILE = [
  'http://10.0.0.1/hook',
  'http://169.254.169.254/latest/meta-data/',
  'http://[fd00:ec2::254]/',
  'http://100.100.100.200/',
  'http://168.63.129.16/',
  'http://192.168.1.10:8080/',
  'http://172.16.5.4/',
  'http://100.64.0.1/',
  'http://[::1]/',
  'http://[::ffff:10.0.0.1]/',
  'http://[64:ff9b::a9fe:a9fe]/',
  'http://0xa9.0xfe.0xa9.0xfe/',
  'http://2852039166/',
  'http://0251.0376.0251.0376/',
  'http://0.0.0.0/',
  'http://224.0.0.1/',
  'http://[fe80::1]/',
];

// Each test has its own workspace and receivers, so they run concurrently (the ladder test alone takes ~30 s).
describe.concurrent('webhook endpoints', { timeout: 90_000 }, () => {
  it('are a plan feature: the free plan answers 403 feature_not_enabled', async () => {
    const ws = await workspace([], 'free');
    for (const [method, path] of [
      ['GET', '/v1/webhook-endpoints'],
      ['POST', '/v1/webhook-endpoints'],
    ] as const) {
      const res = await api(method, path, {
        key: ws.key,
        ...(method === 'POST'
          ? { body: { url: 'https://hooks.example.com/', event_types: ['post.published'] } }
          : {}),
      });
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('feature_not_enabled');
    }
  });

  it('need webhooks:read to list and webhooks:write to change', async () => {
    const ws = await workspace([]);
    const readOnly = await mint(ws, 'webhooks:read');
    expect((await api('GET', '/v1/webhook-endpoints', { key: readOnly })).status).toBe(200);
    const res = await api('POST', '/v1/webhook-endpoints', {
      key: readOnly,
      body: { url: 'https://hooks.example.com/', event_types: ['post.published'] },
    });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('insufficient_scope');
  });

  it('show the secret once: create answers it, the list never does', async () => {
    const ws = await workspace([]);
    const rx = await webhookReceiver();
    const created = await createEndpoint(ws, rx.url, ['post.published', 'post.published', 'post.failed']);
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.secret.slice(6), 'base64')).toHaveLength(32);
    expect(created).toMatchObject({
      url: rx.url,
      description: 'e2e',
      event_types: ['post.published', 'post.failed'],
      enabled: true,
      state: 'active',
      failure: { consecutive_failures: 0, failing_since: null, warned_at: null, disabled_at: null },
    });
    const list = await api('GET', '/v1/webhook-endpoints', { key: ws.key });
    expect(list.text).not.toContain(created.secret);
    expect(list.text).not.toContain('"secret"');
    expect(list.body).toMatchObject({ has_more: false, next_cursor: null });
  });

  it('refuse hostile URLs at create and at update (400 forbidden_address at /url), changing nothing', async () => {
    const ws = await workspace([]);
    for (const url of HOSTILE) {
      const res = await api('POST', '/v1/webhook-endpoints', {
        key: ws.key,
        body: { url, event_types: ['post.published'] },
      });
      expect(res.status, url).toBe(400);
      expect(res.body.errors, url).toEqual([
        expect.objectContaining({ pointer: '/url', code: 'forbidden_address' }),
      ]);
    }
    const rx = await webhookReceiver();
    const ok = await createEndpoint(ws, rx.url, ['post.published']);
    for (const url of HOSTILE.slice(0, 6)) {
      const res = await api('PATCH', `/v1/webhook-endpoints/${ok.id}`, { key: ws.key, body: { url } });
      expect(res.status, url).toBe(400);
      expect(res.body.errors).toEqual([
        expect.objectContaining({ pointer: '/url', code: 'forbidden_address' }),
      ]);
    }
    const list = await api<{ data: Json[] }>('GET', '/v1/webhook-endpoints', { key: ws.key });
    expect(list.body.data).toHaveLength(1);
    expect(list.body.data[0]?.url).toBe(rx.url);
  });

  it('validate the rest of the body: event types, empty updates, unknown ids', async () => {
    const ws = await workspace([]);
    const bad = await api('POST', '/v1/webhook-endpoints', {
      key: ws.key,
      body: { url: 'https://hooks.example.com/', event_types: ['post.exploded'] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([expect.objectContaining({ pointer: '/event_types/0' })]);
    const none = await api('POST', '/v1/webhook-endpoints', {
      key: ws.key,
      body: { url: 'https://hooks.example.com/', event_types: [] },
    });
    expect(none.status).toBe(400);
    const rx = await webhookReceiver();
    const ep = await createEndpoint(ws, rx.url, ['post.published']);
    const empty = await api('PATCH', `/v1/webhook-endpoints/${ep.id}`, { key: ws.key, body: {} });
    expect(empty.status).toBe(400);
    expect(empty.body.errors).toEqual([expect.objectContaining({ code: 'empty_update' })]);
    const missing = await api('PATCH', '/v1/webhook-endpoints/whe_01JD0000000000000000000000', {
      key: ws.key,
      body: { enabled: false },
    });
    expect(missing.status).toBe(404);
    // Another organization's endpoint is not found either.
    const other = await workspace([]);
    expect((await api('POST', `/v1/webhook-endpoints/${ep.id}/test`, { key: other.key })).status).toBe(404);
    expect((await api('DELETE', `/v1/webhook-endpoints/${ep.id}`, { key: other.key })).status).toBe(404);
  });
});

describe.concurrent('webhook deliveries', { timeout: 90_000 }, () => {
  it('deliver post.published, signed and verifiable with the standardwebhooks package', async () => {
    const ws = await workspace(['bluesky']);
    await dangerous(ws, true);
    const rx = await webhookReceiver();
    const ep = await createEndpoint(ws, rx.url, ['post.published']);
    const post = await api<{ id: string }>('POST', '/v1/posts', {
      key: ws.key,
      body: {
        variants: [{ channel_id: ws.channels.bluesky, body: `webhook ${Date.now()}` }],
        publish_now: true,
      },
    });
    expect(post.status).toBe(201);
    await waitForPost(ws.key, post.body.id, (p) => p.status === 'published');
    const [msg] = await until(() =>
      rx.ofType('post.published').length ? rx.ofType('post.published') : undefined,
    );
    const payload = new Webhook(ep.secret).verify(msg!.body, msg!.headers as Record<string, string>) as Json;
    expect(payload).toMatchObject({
      type: 'post.published',
      data: { post: { id: post.body.id, status: 'published' } },
    });
    expect(Object.keys(payload).sort()).toEqual(['data', 'timestamp', 'type']);
    expect(msg!.headers['webhook-id']).toMatch(/^msg_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(msg!.headers['content-type']).toBe('application/json');
    // A different secret does not verify.
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(
        msg!.body,
        msg!.headers as Record<string, string>,
      ),
    ).toThrow();
    // Exactly one delivery, and the log shows it.
    await new Promise((r) => setTimeout(r, 500));
    expect(rx.ofType('post.published')).toHaveLength(1);
    const log = await api<{ data: Json[] }>('GET', `/v1/webhook-endpoints/${ep.id}/deliveries`, {
      key: ws.key,
    });
    expect(log.body.data[0]).toMatchObject({
      event_id: msg!.headers['webhook-id'],
      event_type: 'post.published',
      status: 'delivered',
      attempts: [{ attempt: 1, status_code: 200, error: null }],
      next_attempt_at: null,
    });
  });

  it('carry every event of the stream to subscribed endpoints, with the documented data', async () => {
    const ws = await workspace(['bluesky', 'x']);
    await dangerous(ws, true);
    const rx = await webhookReceiver();
    const all = [
      'post.published',
      'post.failed',
      'delivery.failed',
      'channel.connected',
      'channel.reauth_required',
    ];
    const ep = await createEndpoint(ws, rx.url, all);
    const onlyFailures = await webhookReceiver();
    await createEndpoint(ws, onlyFailures.url, ['post.failed']);
    await connectChannel(ws);
    const publish = async (platform: string, text = `evt-${Date.now()}`) => {
      const res = await api<{ id: string }>('POST', '/v1/posts', {
        key: ws.key,
        body: {
          variants: [{ channel_id: ws.channels[platform], body: text }],
          publish_now: true,
        },
      });
      expect(res.status).toBe(201);
      return waitForPost<{ id: string; status: string }>(
        ws.key,
        res.body.id,
        (p) => p.status === 'published' || p.status === 'failed',
      );
    };
    const ok = await publish('bluesky');
    const refused = `evt-refused-${Date.now()}`;
    await failPlatform('x', {
      status: 400,
      pathPattern: '^/2/tweets$',
      bodyIncludes: refused,
      body: {
        title: 'Invalid Request',
        detail: 'bad',
        type: 'https://api.twitter.com/2/problems/invalid-request',
      },
    });
    const bad = await publish('x', refused);
    // Each event is its own delivery, in no guaranteed order: wait for every type asserted below.
    const expected = ['channel.connected', 'post.published', 'post.failed', 'delivery.failed'];
    await until(() => expected.every((t) => rx.ofType(t).length > 0) || undefined);
    const byType = (type: string) => {
      const [msg] = rx.ofType(type);
      expect(msg, type).toBeDefined();
      return new Webhook(ep.secret).verify(msg!.body, msg!.headers as Record<string, string>) as {
        data: Json;
      };
    };
    expect(byType('channel.connected').data).toMatchObject({
      channel: { platform: 'mastodon', status: 'live' },
    });
    expect(byType('post.published').data).toMatchObject({ post: { id: ok.id, status: 'published' } });
    expect(byType('post.failed').data).toMatchObject({ post: { id: bad.id, status: 'failed' } });
    expect(byType('delivery.failed').data).toMatchObject({
      post_id: bad.id,
      channel_id: ws.channels.x,
      delivery: { stage: 'failed', error_category: 'user_content' },
    });
    // The subscription is honoured per endpoint.
    await until(() => onlyFailures.received.length > 0 || undefined);
    await new Promise((r) => setTimeout(r, 500));
    expect(onlyFailures.received.map((r) => (JSON.parse(r.body) as Json).type)).toEqual(['post.failed']);
  });

  it('retry a failing receiver on the schedule with one webhook-id, then warning → auto_disabled → active on PATCH', async () => {
    // Polling the ladder for ~30 s needs the agency plan's burst (300 requests/min per key).
    const ws = await workspace([], 'agency');
    const rx = await webhookReceiver(500);
    const ep = await createEndpoint(ws, rx.url, ['channel.connected']);
    const states: string[] = [];
    await connectChannel(ws);

    // All 8 attempts (≈ 31.6 h scaled ≈ 11.4 s), and the ladder to auto_disabled (72 h ≈ 26 s).
    const disabled = await until(
      async () => {
        const e = await endpointOf(ws, ep.id);
        if (states.at(-1) !== e.state) states.push(e.state);
        return e.state === 'auto_disabled' ? e : undefined;
      },
      60_000,
      250,
    );
    const attempts = rx.ofType('channel.connected');
    expect(attempts).toHaveLength(8);
    expect(new Set(attempts.map((a) => a.headers['webhook-id'])).size).toBe(1);
    for (let i = 1; i < attempts.length; i++) {
      const gap = (attempts[i]?.at ?? 0) - (attempts[i - 1]?.at ?? 0);
      const planned = (RETRY_SCHEDULE_SECONDS[i] ?? 0) * 1000 * E2E_TIME_SCALE;
      expect(gap, `gap before attempt ${i + 1}`).toBeGreaterThanOrEqual(Math.floor(planned * 0.9) - 5);
    }
    expect(states).toEqual(['active', 'warning', 'auto_disabled']);
    const f = disabled.failure as Record<string, string | number | null>;
    expect(disabled.enabled).toBe(false);
    expect(f.consecutive_failures).toBe(8);
    expect(f.last_status_code).toBe(500);
    const since = Date.parse(String(f.failing_since));
    const warnedAfter = Date.parse(String(f.warned_at)) - since;
    const disabledAfter = Date.parse(String(f.disabled_at)) - since;
    // Never early; how late a loaded machine runs the ladder's waits is the bench's business, not
    // this test's: only the order is checked on that side.
    expect(warnedAfter).toBeGreaterThanOrEqual(24 * 3600_000 * E2E_TIME_SCALE);
    expect(disabledAfter).toBeGreaterThanOrEqual(72 * 3600_000 * E2E_TIME_SCALE);
    expect(warnedAfter).toBeLessThan(disabledAfter);
    const log = await api<{ data: Array<Json & { attempts: Json[] }> }>(
      'GET',
      `/v1/webhook-endpoints/${ep.id}/deliveries`,
      { key: ws.key },
    );
    expect(log.body.data[0]).toMatchObject({ status: 'failed', next_attempt_at: null });
    expect(log.body.data[0]?.attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);

    // Disabled: new events are not attempted.
    await connectChannel(ws);
    await new Promise((r) => setTimeout(r, 1500));
    expect(rx.ofType('channel.connected')).toHaveLength(8);

    // Re-enabled: the failure state is cleared and deliveries resume.
    rx.status = 200;
    const patched = await api('PATCH', `/v1/webhook-endpoints/${ep.id}`, {
      key: ws.key,
      body: { enabled: true },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      enabled: true,
      state: 'active',
      failure: { consecutive_failures: 0, failing_since: null, warned_at: null, disabled_at: null },
    });
    await connectChannel(ws);
    await until(() => rx.ofType('channel.connected').length === 9 || undefined);
    expect((await endpointOf(ws, ep.id)).state).toBe('active');
  }, 90_000);

  it('disable an endpoint at once when it answers 410 Gone', async () => {
    const ws = await workspace([]);
    const rx = await webhookReceiver(410);
    const ep = await createEndpoint(ws, rx.url, ['channel.connected']);
    await connectChannel(ws);
    const e = await until(async () => {
      const cur = await endpointOf(ws, ep.id);
      return cur.state === 'auto_disabled' ? cur : undefined;
    });
    expect(rx.received).toHaveLength(1);
    expect(e).toMatchObject({ enabled: false, failure: { last_status_code: 410 } });
  });

  it('send a test event on demand and answer with the result', async () => {
    const ws = await workspace([]);
    const rx = await webhookReceiver(200);
    const ep = await createEndpoint(ws, rx.url, ['post.failed']);
    const res = await api('POST', `/v1/webhook-endpoints/${ep.id}/test`, { key: ws.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ delivered: true, status_code: 200, error: null });
    expect(res.body.event_id).toMatch(/^msg_/);
    const [msg] = rx.ofType('webhook.test');
    expect(msg?.headers['webhook-id']).toBe(res.body.event_id);
    expect(new Webhook(ep.secret).verify(msg!.body, msg!.headers as Record<string, string>)).toMatchObject({
      type: 'webhook.test',
      data: { endpoint_id: ep.id },
    });
    rx.status = 503;
    const failed = await api('POST', `/v1/webhook-endpoints/${ep.id}/test`, { key: ws.key });
    expect(failed.body).toMatchObject({ delivered: false, status_code: 503, error: 'HTTP 503' });
    // Not retried, not counted by the ladder.
    await new Promise((r) => setTimeout(r, 500));
    expect(rx.ofType('webhook.test')).toHaveLength(2);
    expect((await endpointOf(ws, ep.id)).failure).toMatchObject({
      consecutive_failures: 0,
      failing_since: null,
    });
  });

  it('refuse a hostile address at delivery time too (a URL that turned hostile after creation)', async () => {
    const ws = await workspace([]);
    const rx = await webhookReceiver(200);
    const ep = await createEndpoint(ws, rx.url, ['channel.connected']);
    await plantUrl(ws, ep.id, 'http://169.254.169.254/latest/meta-data/');
    const test = await api('POST', `/v1/webhook-endpoints/${ep.id}/test`, { key: ws.key });
    expect(test.body).toMatchObject({ delivered: false, status_code: null });
    expect(String(test.body.error)).toMatch(/^forbidden_address/);
    await connectChannel(ws);
    const log = await until(async () => {
      const res = await api<{ data: Array<Json & { attempts: Json[] }> }>(
        'GET',
        `/v1/webhook-endpoints/${ep.id}/deliveries`,
        { key: ws.key },
      );
      return res.body.data.find((d) => d.event_type === 'channel.connected');
    });
    expect(String(log.attempts[0]?.error)).toMatch(/^forbidden_address/);
    expect(rx.received).toHaveLength(0);
  });

  it('rotate the secret: both signatures for the overlap, each verifies on its own', async () => {
    const ws = await workspace([]);
    const rx = await webhookReceiver(200);
    const ep = await createEndpoint(ws, rx.url, ['post.published']);
    const rotated = await api('POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`, { key: ws.key });
    expect(rotated.status).toBe(200);
    const fresh = String(rotated.body.secret);
    expect(fresh).not.toBe(ep.secret);
    const expires = Date.parse(String(rotated.body.previous_secret_expires_at)) - Date.now();
    expect(expires).toBeGreaterThan(23.9 * 3600_000);
    expect(expires).toBeLessThanOrEqual(24 * 3600_000);
    await api('POST', `/v1/webhook-endpoints/${ep.id}/test`, { key: ws.key });
    const [msg] = rx.ofType('webhook.test');
    expect(String(msg?.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [fresh, ep.secret])
      expect(new Webhook(secret).verify(msg!.body, msg!.headers as Record<string, string>)).toBeTruthy();
  });

  it('stop for a deleted endpoint', async () => {
    const ws = await workspace([]);
    const rx = await webhookReceiver(200);
    const ep = await createEndpoint(ws, rx.url, ['channel.connected']);
    const del = await api('DELETE', `/v1/webhook-endpoints/${ep.id}`, { key: ws.key });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: ep.id, deleted: true });
    expect((await api('DELETE', `/v1/webhook-endpoints/${ep.id}`, { key: ws.key })).status).toBe(404);
    await connectChannel(ws);
    await new Promise((r) => setTimeout(r, 1500));
    expect(rx.received).toHaveLength(0);
  });
});
