import { beforeAll, describe, expect, it } from 'vitest';
import { api, baseUrl, cli, cliOk, inDays, mcpClient, mint, type Workspace, workspace } from './helpers.ts';

let a: Workspace;
let b: Workspace;

beforeAll(async () => {
  [a, b] = await Promise.all([workspace(['bluesky']), workspace(['bluesky'])]);
});

describe('authentication', () => {
  it('answers 401 authentication_required without a key', async () => {
    const res = await api('GET', '/v1/posts');
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('authentication_required');
    expect(res.body.type).toBe(`${baseUrl()}/docs/api/problems/authentication-required`);
  });

  it('answers 401 invalid_api_key for an unknown or malformed key', async () => {
    for (const key of ['svc_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'nope']) {
      const res = await api('GET', '/v1/posts', { key });
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('invalid_api_key');
    }
  });

  it('accepts the key as a Bearer token and as x-api-key', async () => {
    expect((await api('GET', '/v1/channels', { key: a.key })).status).toBe(200);
    expect((await api('GET', '/v1/channels', { key: a.key, bearer: false })).status).toBe(200);
  });

  it('refuses a revoked key', async () => {
    const minted = await cliOk('key', 'mint', '--org', a.orgId, '--by', a.ownerId, '--scopes', 'posts:read');
    await cliOk('key', 'revoke', '--org', a.orgId, '--by', a.ownerId, '--id', minted.id as string);
    const res = await api('GET', '/v1/posts', { key: minted.key as string });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('invalid_api_key');
  });

  it('refuses a key on the very next request after its revocation, warm caches and all', async () => {
    // Arrange: the key works, so every function it reached holds it in its cache.
    const minted = await cliOk('key', 'mint', '--org', a.orgId, '--by', a.ownerId, '--scopes', 'posts:read');
    const key = minted.key as string;
    for (let i = 0; i < 3; i++) expect((await api('GET', '/v1/posts', { key })).status).toBe(200);
    await (await mcpClient(key)).close();
    const used = async () =>
      (
        await api<{ meters: Array<{ key: string; used: number }> }>('GET', '/v1/usage', { key: a.key })
      ).body.meters.find((m) => m.key === 'api_requests')?.used ?? -1;
    const before = await used();

    // Act
    await cliOk('key', 'revoke', '--org', a.orgId, '--by', a.ownerId, '--id', minted.id as string);

    // Assert: REST and MCP refuse at once, without rate-limit headers, and meter nothing.
    for (let i = 0; i < 2; i++) {
      const res = await api('GET', '/v1/posts', { key });
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('invalid_api_key');
      expect(res.headers.get('ratelimit')).toBeNull();
    }
    await expect(mcpClient(key)).rejects.toThrow();
    expect(await used()).toBe(before + 1); // only this getUsage itself
  });

  it('stores keys only as hashes: the list never shows a key', async () => {
    const listed = await cliOk('key', 'list', '--org', a.orgId);
    expect(JSON.stringify(listed)).not.toContain(a.key);
    expect(JSON.stringify(listed)).not.toMatch(/svc_live_[A-Za-z0-9_-]{20,}/);
  });
});

describe('scopes', () => {
  it('a read-only key can read but never write', async () => {
    const readOnly = await mint(a, 'posts:read');
    expect((await api('GET', '/v1/posts', { key: readOnly })).status).toBe(200);
    const write = await api('POST', '/v1/posts', {
      key: readOnly,
      body: { variants: [{ channel_id: a.channels.bluesky, body: 'x' }], draft: true },
    });
    expect(write.status).toBe(403);
    expect(write.body.code).toBe('insufficient_scope');
    const channels = await api('GET', '/v1/channels', { key: readOnly });
    expect(channels.body.code).toBe('insufficient_scope');
  });

  it('checks the scope before validating the body', async () => {
    const readOnly = await mint(a, 'channels:read');
    const res = await api('POST', '/v1/posts', {
      key: readOnly,
      raw: 'not json',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(403);
  });
});

describe('tenancy', () => {
  it("another organization's post is a 404 for every operation, never a 403", async () => {
    const created = await api('POST', '/v1/posts', {
      key: a.key,
      body: { variants: [{ channel_id: a.channels.bluesky, body: 'mine' }], draft: true },
    });
    const id = created.body.id as string;
    await cliOk('settings', 'set', '--org', b.orgId, '--by', b.ownerId, '--dangerous-ops', 'on');
    const attempts = [
      await api('GET', `/v1/posts/${id}`, { key: b.key }),
      await api('PATCH', `/v1/posts/${id}`, { key: b.key, body: { scheduled_at: inDays(1) } }),
      await api('POST', `/v1/posts/${id}/publish`, { key: b.key }),
      await api('DELETE', `/v1/posts/${id}`, { key: b.key }),
    ];
    for (const res of attempts) {
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('resource_not_found');
    }
    expect((await api('GET', `/v1/posts/${id}`, { key: a.key })).status).toBe(200);
  });

  it("lists show only the caller's organization", async () => {
    const listA = await api<{ data: Array<{ id: string }> }>('GET', '/v1/channels', { key: a.key });
    const listB = await api<{ data: Array<{ id: string }> }>('GET', '/v1/channels', { key: b.key });
    expect(listA.body.data.map((c) => c.id)).toEqual([a.channels.bluesky]);
    expect(listB.body.data.map((c) => c.id)).toEqual([b.channels.bluesky]);
  });

  it("another organization's channel is unknown_channel", async () => {
    const res = await api('POST', '/v1/posts', {
      key: b.key,
      body: { variants: [{ channel_id: a.channels.bluesky, body: 'hi' }], draft: true },
    });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([
      expect.objectContaining({ pointer: '/variants/0/channel_id', code: 'unknown_channel' }),
    ]);
  });
});

describe('admin CLI', () => {
  it('lets only owners and admins mint keys, and only owners change settings', async () => {
    const member = await cliOk(
      'user',
      'add',
      '--org',
      a.orgId,
      '--email',
      'member@e2e.test',
      '--role',
      'member',
    );
    const admin = await cliOk(
      'user',
      'add',
      '--org',
      a.orgId,
      '--email',
      'admin@e2e.test',
      '--role',
      'admin',
    );
    const byMember = await cli(
      'key',
      'mint',
      '--org',
      a.orgId,
      '--by',
      member.id as string,
      '--scopes',
      'posts:read',
    );
    expect(byMember.code).toBe(1);
    expect(byMember.stderr).toMatch(/role/);
    expect(
      (await cli('key', 'mint', '--org', a.orgId, '--by', admin.id as string, '--scopes', 'posts:read')).code,
    ).toBe(0);
    const settingsByAdmin = await cli(
      'settings',
      'set',
      '--org',
      a.orgId,
      '--by',
      admin.id as string,
      '--dangerous-ops',
      'on',
    );
    expect(settingsByAdmin.code).toBe(1);
  });

  it('exits 2 on bad usage and 1 on a missing organization', async () => {
    expect((await cli('key', 'mint', '--org', a.orgId)).code).toBe(2);
    expect(
      (await cli('org', 'create', '--name', 'x', '--plan', 'gold', '--owner-email', 'a@b.co')).code,
    ).toBe(2);
    expect((await cli('frobnicate')).code).toBe(2);
    expect((await cli('key', 'list', '--org', 'org_01ZZZZZZZZZZZZZZZZZZZZZZZZ')).code).toBe(1);
  });

  it('refuses a second user with the same email', async () => {
    await cliOk('user', 'add', '--org', b.orgId, '--email', 'twice@e2e.test', '--role', 'member');
    expect(
      (await cli('user', 'add', '--org', b.orgId, '--email', 'TWICE@e2e.test', '--role', 'admin')).code,
    ).toBe(1);
  });

  it('validates channel credentials per platform', async () => {
    const bad = await cli(
      'channel',
      'connect',
      '--org',
      a.orgId,
      '--platform',
      'mastodon',
      '--credentials',
      '{"instance":"not a url"}',
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/credentials/);
  });
});

describe('request envelope', () => {
  it('serves the OpenAPI document without a key', async () => {
    const res = await api('GET', '/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const ops = Object.values(
      res.body.paths as Record<string, Record<string, { operationId: string }>>,
    ).flatMap((p) => Object.values(p).map((o) => o.operationId));
    expect(ops).toEqual(
      expect.arrayContaining([
        'listChannels',
        'listPosts',
        'createPost',
        'getPost',
        'reschedulePost',
        'deletePost',
        'publishPost',
      ]),
    );
  });

  it('answers unknown routes and methods with problem+json', async () => {
    const missing = await api('GET', '/v1/nothing-here', { key: a.key });
    expect(missing.status).toBe(404);
    const method = await api('PUT', '/v1/posts', { key: a.key });
    expect(method.status).toBe(405);
    expect(method.headers.get('allow')).toContain('GET');
    expect(missing.headers.get('content-type')).toContain('application/problem+json');
  });

  it("answers a console page that does not exist with the console's own HTML 404, headers included", async () => {
    const res = await fetch(`${baseUrl()}/console/no-such-page`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.text()).toContain('Page not found');
    // Another method on a console page is still the API's 405.
    const method = await fetch(`${baseUrl()}/console/keys`, { method: 'PUT' });
    expect(method.status).toBe(405);
  });
});
