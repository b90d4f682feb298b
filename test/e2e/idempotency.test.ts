import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { api, type Workspace, workspace } from './helpers.ts';

type Page = { data: Array<{ id: string; title: string | null }> };

let ws: Workspace;
const body = (title: string) => ({
  title,
  variants: [{ channel_id: ws.channels.bluesky, body: 'idempotent' }],
  draft: true,
});

beforeAll(async () => {
  ws = await workspace(['bluesky']);
});

async function postsTitled(title: string, key = ws.key) {
  const res = await api<Page>('GET', '/v1/posts?limit=100', { key });
  return res.body.data.filter((p) => p.title === title);
}

describe('Idempotency-Key on createPost', () => {
  it('replays the recorded response verbatim with Idempotency-Replayed', async () => {
    const key = randomUUID();
    const first = await api('POST', '/v1/posts', {
      key: ws.key,
      body: body('replay'),
      headers: { 'idempotency-key': key },
    });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotency-replayed')).toBeNull();
    // Same body with its fields in another order is the same request.
    const reordered = Object.fromEntries(Object.entries(body('replay')).reverse());
    const second = await api('POST', '/v1/posts', {
      key: ws.key,
      body: reordered,
      headers: { 'idempotency-key': key },
    });
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotency-replayed')).toBe('true');
    expect(second.text).toBe(first.text);
    expect(await postsTitled('replay')).toHaveLength(1);
  });

  it('answers 422 idempotency_key_reused for the same key with another body', async () => {
    const key = randomUUID();
    await api('POST', '/v1/posts', {
      key: ws.key,
      body: body('reuse-a'),
      headers: { 'idempotency-key': key },
    });
    const res = await api<{ code: string }>('POST', '/v1/posts', {
      key: ws.key,
      body: body('reuse-b'),
      headers: { 'idempotency-key': key },
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('idempotency_key_reused');
    expect(await postsTitled('reuse-b')).toHaveLength(0);
  });

  it('refuses malformed keys with 400 invalid_request', async () => {
    for (const bad of ['x'.repeat(256), 'caf\u00e9', 'tab\there']) {
      const res = await api<{ code: string }>('POST', '/v1/posts', {
        key: ws.key,
        body: body('malformed'),
        headers: { 'idempotency-key': bad },
      }).catch(() => null);
      // fetch itself refuses some header values; those never reach the server.
      if (res) {
        expect(res.status).toBe(400);
        expect(res.body.code).toBe('invalid_request');
      }
    }
    expect(await postsTitled('malformed')).toHaveLength(0);
  });

  it('scopes keys per organization', async () => {
    const other = await workspace(['bluesky']);
    const key = randomUUID();
    const a = await api<{ id: string }>('POST', '/v1/posts', {
      key: ws.key,
      body: body('scoped'),
      headers: { 'idempotency-key': key },
    });
    const b = await api<{ id: string }>('POST', '/v1/posts', {
      key: other.key,
      body: { ...body('scoped'), variants: [{ channel_id: other.channels.bluesky, body: 'idempotent' }] },
      headers: { 'idempotency-key': key },
    });
    expect(b.status).toBe(201);
    expect(b.headers.get('idempotency-replayed')).toBeNull();
    expect(b.body.id).not.toBe(a.body.id);
  });

  it('the same key in two organizations at once: one post each, and each replays its own', async () => {
    const other = await workspace(['bluesky']);
    const key = randomUUID();
    const mine = () =>
      api<{ id?: string }>('POST', '/v1/posts', {
        key: ws.key,
        body: body('tenancy'),
        headers: { 'idempotency-key': key },
      });
    const theirs = () =>
      api<{ id?: string }>('POST', '/v1/posts', {
        key: other.key,
        body: { ...body('tenancy'), variants: [{ channel_id: other.channels.bluesky, body: 'idempotent' }] },
        headers: { 'idempotency-key': key },
      });

    const [a, b] = await Promise.all([mine(), theirs()]);
    const [a2, b2] = await Promise.all([mine(), theirs()]);

    expect([a.status, b.status, a2.status, b2.status]).toEqual([201, 201, 201, 201]);
    expect(a.headers.get('idempotency-replayed')).toBeNull();
    expect(b.headers.get('idempotency-replayed')).toBeNull();
    expect(a2.text).toBe(a.text);
    expect(b2.text).toBe(b.text);
    expect(a.body.id).not.toBe(b.body.id);
    expect(await postsTitled('tenancy')).toHaveLength(1);
    expect(await postsTitled('tenancy', other.key)).toHaveLength(1);
  });

  it('concurrent duplicates create exactly one post', async () => {
    const key = randomUUID();
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        api<{ code?: string; id?: string }>('POST', '/v1/posts', {
          key: ws.key,
          body: body('race'),
          headers: { 'idempotency-key': key },
        }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.every((s) => s === 201 || s === 409)).toBe(true);
    for (const r of results.filter((x) => x.status === 409))
      expect(r.body.code).toBe('idempotency_in_progress');
    const created = results.filter((r) => r.status === 201).map((r) => r.body.id);
    expect(new Set(created).size).toBe(1);
    expect(await postsTitled('race')).toHaveLength(1);
  });

  it('a failed request does not burn its key', async () => {
    const key = randomUUID();
    const bad = await api('POST', '/v1/posts', {
      key: ws.key,
      body: { ...body('retry'), variants: [{ channel_id: 'ch_01ZZZZZZZZZZZZZZZZZZZZZZZZ', body: 'x' }] },
      headers: { 'idempotency-key': key },
    });
    expect(bad.status).toBe(400);
    const good = await api('POST', '/v1/posts', {
      key: ws.key,
      body: body('retry'),
      headers: { 'idempotency-key': key },
    });
    expect(good.status).toBe(201);
  });
});
