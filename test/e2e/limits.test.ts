import { parseItem } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import {
  type ApiResponse,
  api,
  CREDENTIALS,
  cli,
  cliOk,
  dangerous,
  inDays,
  mint,
  type Workspace,
  workspace,
} from './helpers.ts';

// Plans, the per-key burst limit, the monthly meters and getUsage (docs/api/limits.md).

type Meter = {
  key: string;
  used: number;
  limit: number;
  remaining: number;
  period_starts_at: string;
  period_ends_at: string;
};
type UsageBody = { plan: string; meters: Meter[] };

/** Parses and checks the rate-limit headers as RFC 9651 structured fields. */
function rateLimit(res: ApiResponse) {
  const policy = parseItem(res.headers.get('ratelimit-policy') ?? '');
  const current = parseItem(res.headers.get('ratelimit') ?? '');
  expect(policy[0]).toBe('per-key-minute');
  expect(current[0]).toBe('per-key-minute');
  const q = policy[1].get('q');
  const w = policy[1].get('w');
  const r = current[1].get('r');
  const t = current[1].get('t');
  for (const v of [q, w, r, t]) expect(Number.isInteger(v)).toBe(true);
  expect(w).toBe(60);
  expect(Number(res.headers.get('x-ratelimit-limit'))).toBe(q);
  expect(Number(res.headers.get('x-ratelimit-remaining'))).toBe(r);
  expect(Number(res.headers.get('x-ratelimit-reset'))).toBe(t);
  expect(t as number).toBeGreaterThanOrEqual(1);
  expect(t as number).toBeLessThanOrEqual(60);
  return { q: q as number, r: r as number, t: t as number };
}

/** Waits until at least `seconds` remain in the current UTC minute, so a burst fits one window. */
async function roomInWindow(seconds = 15) {
  const left = 60 - ((Date.now() / 1000) % 60);
  if (left < seconds) await new Promise((r) => setTimeout(r, left * 1000 + 250));
}

const meter = (body: UsageBody, key: string) => body.meters.find((m) => m.key === key) as Meter;

async function usage(key: string) {
  const res = await api<UsageBody>('GET', '/v1/usage', { key });
  expect(res.status).toBe(200);
  return res.body;
}

describe('per-key burst limit', () => {
  it('admits exactly the limit under 2x parallel overload, with headers on every answer', async () => {
    const ws = await workspace(['bluesky'], 'free');
    await roomInWindow();
    const results = await Promise.all(
      Array.from({ length: 60 }, () => api('GET', '/v1/channels', { key: ws.key })),
    );
    const ok = results.filter((r) => r.status === 200);
    const limited = results.filter((r) => r.status === 429);
    expect(ok).toHaveLength(30);
    expect(limited).toHaveLength(30);
    for (const r of limited) {
      expect(r.body.code).toBe('rate_limited');
      const h = rateLimit(r);
      expect(h).toMatchObject({ q: 30, r: 0 });
      expect(Number(r.headers.get('retry-after'))).toBe(h.t);
    }
    const remaining = ok.map((r) => rateLimit(r).r).sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 30 }, (_, i) => i));
  });

  it('is per key: another key of the same organization has its own window', async () => {
    const ws = await workspace(['bluesky'], 'free');
    await cliOk('plan', 'set', '--org', ws.orgId, '--plan', 'free', '--limits', 'burst=2');
    const [k1, k2] = await Promise.all([mint(ws, 'channels:read'), mint(ws, 'channels:read')]);
    await roomInWindow();
    const a = await Promise.all([1, 2, 3].map(() => api('GET', '/v1/channels', { key: k1 })));
    expect(a.map((r) => r.status).sort()).toEqual([200, 200, 429]);
    expect((await api('GET', '/v1/channels', { key: k2 })).status).toBe(200);
  });

  it('puts the headers on 2xx and 4xx answers alike, but not on 401', async () => {
    const ws = await workspace(['bluesky']);
    const limitless = await mint(ws, 'posts:read');
    const answers = [
      await api('GET', '/v1/channels', { key: ws.key }),
      await api('GET', '/v1/posts/post_01ZZZZZZZZZZZZZZZZZZZZZZZZ', { key: ws.key }),
      await api('GET', '/v1/posts?limit=0', { key: ws.key }),
      await api('GET', '/v1/channels', { key: limitless }),
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 404, 400, 403]);
    for (const r of answers) expect(rateLimit(r).q).toBe(120);
    const anonymous = await api('GET', '/v1/channels');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('ratelimit')).toBeNull();
  });
});

describe('monthly meters', () => {
  it('api_requests: refuses the call after the allowance with quota_exhausted until the month ends', async () => {
    const ws = await workspace(['bluesky'], 'starter');
    await cliOk('plan', 'set', '--org', ws.orgId, '--plan', 'starter', '--limits', 'api_requests=5');
    const key = await mint(ws, 'channels:read,analytics:read');
    const statuses = [];
    for (let i = 0; i < 7; i++) statuses.push(await api('GET', '/v1/channels', { key }));
    expect(statuses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 429, 429]);
    const refused = statuses[5] as ApiResponse;
    expect(refused.body.code).toBe('quota_exhausted');
    const now = new Date();
    const monthEnd = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
    const retry = Number(refused.headers.get('retry-after'));
    expect(Math.abs(retry - (monthEnd - Date.now()) / 1000)).toBeLessThan(5);
    rateLimit(refused);

    // Refused calls were not counted: with a larger allowance the meter shows the 5 admitted + this one.
    await cliOk('plan', 'set', '--org', ws.orgId, '--plan', 'starter', '--limits', 'api_requests=100');
    const fresh = await mint(ws, 'analytics:read');
    const body = await usage(fresh);
    expect(meter(body, 'api_requests')).toMatchObject({ used: 6, limit: 100, remaining: 94 });
  });

  it('posts_per_month: counts scheduling and publishing once, refuses past the allowance, keeps deleted posts', async () => {
    const ws = await workspace(['bluesky']);
    await cliOk('plan', 'set', '--org', ws.orgId, '--plan', 'team', '--limits', 'posts_per_month=2');
    const key = await mint(ws, 'posts:read,posts:write,analytics:read');
    await dangerous(ws, true);
    const variants = [{ channel_id: ws.channels.bluesky, body: 'counted' }];
    const first = await api<{ id: string }>('POST', '/v1/posts', {
      key,
      body: { variants, scheduled_at: inDays(1) },
    });
    expect(first.status).toBe(201);
    // Rescheduling an already counted post does not count it again.
    expect(
      (await api('PATCH', `/v1/posts/${first.body.id}`, { key, body: { scheduled_at: inDays(2) } })).status,
    ).toBe(200);
    const draft = await api<{ id: string }>('POST', '/v1/posts', { key, body: { variants, draft: true } });
    expect(draft.status).toBe(201);
    expect((await api('POST', `/v1/posts/${draft.body.id}/publish`, { key })).status).toBe(202);
    expect(meter(await usage(key), 'posts_per_month')).toMatchObject({ used: 2, remaining: 0 });

    const third = await api('POST', '/v1/posts', { key, body: { variants, scheduled_at: inDays(1) } });
    expect(third.status).toBe(429);
    expect(third.body.code).toBe('quota_exhausted');
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0);
    const another = await api<{ id: string }>('POST', '/v1/posts', { key, body: { variants, draft: true } });
    expect(another.status).toBe(201);
    expect(
      (await api('PATCH', `/v1/posts/${another.body.id}`, { key, body: { scheduled_at: inDays(1) } })).status,
    ).toBe(429);
    expect((await api('POST', `/v1/posts/${another.body.id}/publish`, { key })).status).toBe(429);
    expect((await api<{ status: string }>('GET', `/v1/posts/${another.body.id}`, { key })).body.status).toBe(
      'draft',
    );

    // A deleted post still counts.
    expect((await api('DELETE', `/v1/posts/${first.body.id}`, { key })).status).toBe(200);
    expect(meter(await usage(key), 'posts_per_month').used).toBe(2);
    expect(
      (await api('POST', '/v1/posts', { key, body: { variants, scheduled_at: inDays(1) } })).status,
    ).toBe(429);
  });

  it('an idempotent replay is an API request but never a second post', async () => {
    const ws = await workspace(['bluesky']);
    const key = await mint(ws, 'posts:write,analytics:read');
    const body = { variants: [{ channel_id: ws.channels.bluesky, body: 'once' }], scheduled_at: inDays(1) };
    const headers = { 'idempotency-key': 'replay-counts-once' };
    expect((await api('POST', '/v1/posts', { key, body, headers })).status).toBe(201);
    expect((await api('POST', '/v1/posts', { key, body, headers })).headers.get('idempotency-replayed')).toBe(
      'true',
    );
    const u = await usage(key);
    expect(meter(u, 'api_requests').used).toBe(3);
    expect(meter(u, 'posts_per_month').used).toBe(1);
  });
});

describe('getUsage', () => {
  it('reports the plan and meters matching the calls made, this call included', async () => {
    const ws = await workspace(['bluesky', 'mastodon'], 'starter');
    const key = await mint(ws, 'posts:read,posts:write,channels:read,analytics:read');
    await api('GET', '/v1/channels', { key });
    await api('GET', '/v1/posts', { key });
    await api('GET', '/v1/webhooks-nothing', { key }); // not an operation: not metered
    await api('POST', '/v1/posts', {
      key,
      body: { variants: [{ channel_id: ws.channels.bluesky, body: 'x' }], draft: true },
    });
    await api('POST', '/v1/posts', {
      key,
      body: { variants: [{ channel_id: ws.channels.bluesky, body: 'y' }], scheduled_at: inDays(3) },
    });
    await api('POST', '/v1/posts', { key, raw: 'nope', headers: { 'content-type': 'application/json' } }); // 400, still a call
    const body = await usage(key);
    expect(body.plan).toBe('starter');
    const now = new Date();
    const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
    const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
    expect(body.meters).toEqual([
      {
        key: 'api_requests',
        used: 6,
        limit: 10_000,
        remaining: 9_994,
        period_starts_at: start,
        period_ends_at: end,
      },
      {
        key: 'posts_per_month',
        used: 1,
        limit: 300,
        remaining: 299,
        period_starts_at: start,
        period_ends_at: end,
      },
      { key: 'channels', used: 2, limit: 10, remaining: 8, period_starts_at: start, period_ends_at: end },
      {
        key: 'ai_credits',
        used: 0,
        limit: 100,
        remaining: 100,
        period_starts_at: start,
        period_ends_at: end,
      },
    ]);
  });

  it('needs analytics:read', async () => {
    const ws = await workspace([]);
    const res = await api('GET', '/v1/usage', { key: await mint(ws, 'posts:read') });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('insufficient_scope');
  });
});

describe('plan bounds and changes', () => {
  it('bounds the channel count by plan at `herald channel connect`', async () => {
    const ws: Workspace = await workspace(['bluesky', 'mastodon', 'x'], 'free');
    const fourth = await cli(
      'channel',
      'connect',
      '--org',
      ws.orgId,
      '--platform',
      'linkedin',
      '--credentials',
      JSON.stringify(CREDENTIALS.linkedin),
    );
    expect(fourth.code).toBe(1);
    expect(fourth.stderr).toMatch(/free plan allows 3 connected channels/);
    const u = await usage(await mint(ws, 'analytics:read'));
    expect(meter(u, 'channels')).toMatchObject({ used: 3, limit: 3, remaining: 0 });
  });

  it('a plan change applies to the limits: a key loaded after it sees the new plan', async () => {
    const ws = await workspace([], 'free');
    expect(rateLimit(await api('GET', '/v1/usage', { key: ws.key })).q).toBe(30);
    await cliOk('plan', 'set', '--org', ws.orgId, '--plan', 'agency');
    const key = await mint(ws, 'analytics:read');
    const res = await api<UsageBody>('GET', '/v1/usage', { key });
    expect(rateLimit(res).q).toBe(300);
    expect(res.body.plan).toBe('agency');
    expect(meter(res.body, 'api_requests').limit).toBe(250_000);
  });

  it('rejects malformed --limits as bad usage', async () => {
    const ws = await workspace([]);
    expect(
      (await cli('plan', 'set', '--org', ws.orgId, '--plan', 'team', '--limits', 'bananas=3')).code,
    ).toBe(2);
    expect((await cli('plan', 'set', '--org', ws.orgId, '--plan', 'team', '--limits', 'burst=-1')).code).toBe(
      2,
    );
  });
});
