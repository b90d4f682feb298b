import { beforeAll, describe, expect, it } from 'vitest';
import { api, inDays, type WebhookReceiver, type Workspace, webhookReceiver, workspace } from './helpers.ts';

type Page = { data: Array<Record<string, unknown>>; has_more: boolean; next_cursor: string | null };

let ws: Workspace;
let other: Workspace;
const ids: string[] = [];

beforeAll(async () => {
  [ws, other] = await Promise.all([workspace(['bluesky']), workspace(['bluesky'])]);
  for (let i = 0; i < 7; i++) {
    const mode = i % 2 === 0 ? { draft: true } : { scheduled_at: inDays(1 + i) };
    const res = await api<{ id: string }>('POST', '/v1/posts', {
      key: ws.key,
      body: { variants: [{ channel_id: ws.channels.bluesky, body: `post ${i}` }], ...mode },
    });
    ids.push(res.body.id);
  }
});

/** Every page of a list, following next_cursor; `seen` is the ids (or `idOf`) in order. */
async function all(
  query: string,
  key = ws.key,
  path = '/v1/posts',
  idOf = (d: Record<string, unknown>) => String(d.id),
): Promise<{ pages: Page[]; seen: string[] }> {
  const pages: Page[] = [];
  let cursor: string | null = null;
  do {
    const res: { status: number; body: Page } = await api<Page>(
      'GET',
      `${path}?${query}${cursor ? `&after=${encodeURIComponent(cursor)}` : ''}`,
      { key },
    );
    expect(res.status).toBe(200);
    pages.push(res.body);
    cursor = res.body.next_cursor;
  } while (cursor);
  return { pages, seen: pages.flatMap((p) => p.data.map((d) => idOf(d))) };
}

describe('listPosts pagination', () => {
  it('walks every post newest first, without gaps or repeats', async () => {
    const { pages, seen } = await all('limit=3');
    expect(seen).toEqual([...ids].reverse());
    expect(pages.map((p) => p.data.length)).toEqual([3, 3, 1]);
    expect(pages.map((p) => p.has_more)).toEqual([true, true, false]);
    expect(pages.at(-1)?.next_cursor).toBeNull();
  });

  it('has_more is false when the last page is exactly full', async () => {
    const { pages } = await all('limit=7');
    expect(pages).toHaveLength(1);
    expect(pages[0]?.has_more).toBe(false);
  });

  it('filters by status, paginating within the filter', async () => {
    const { seen } = await all('limit=2&status=scheduled');
    expect(seen).toEqual([ids[5], ids[3], ids[1]]);
    const drafts = await all('status=draft');
    expect(drafts.seen).toEqual([ids[6], ids[4], ids[2], ids[0]]);
  });

  it('defaults to 25 and validates limit and status', async () => {
    const res = await api<Page>('GET', '/v1/posts', { key: ws.key });
    expect(res.body.data).toHaveLength(7);
    for (const q of ['limit=0', 'limit=101', 'limit=abc', 'status=gone', 'foo=1']) {
      const bad = await api<{ code: string; errors: Array<{ pointer: string }> }>('GET', `/v1/posts?${q}`, {
        key: ws.key,
      });
      expect(bad.status, q).toBe(400);
      expect(bad.body.code).toBe('validation_failed');
      expect(bad.body.errors[0]?.pointer).toBe(`/query/${q.split('=')[0]}`);
    }
  });

  it('refuses tampered cursors and cursors of another list or organization', async () => {
    const first = await api<Page>('GET', '/v1/posts?limit=2', { key: ws.key });
    const cursor = first.body.next_cursor as string;
    const [body, mac] = cursor.split('.') as [string, string];
    const forged = `${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), k: ids[0] })).toString('base64url')}.${mac}`;
    const filtered = await api<Page>('GET', '/v1/posts?limit=1&status=draft', { key: ws.key });
    const cases: Array<[string, string]> = [
      [ws.key, forged],
      [ws.key, 'garbage'],
      [other.key, cursor],
      [ws.key, `${filtered.body.next_cursor}`],
    ];
    for (const [key, after] of cases) {
      const res = await api<{ code: string }>('GET', `/v1/posts?limit=2&after=${encodeURIComponent(after)}`, {
        key,
      });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_request');
    }
  });
});

describe('webhook endpoints and their delivery logs page like every list', () => {
  let receiver: WebhookReceiver;
  const endpoints: string[] = [];

  beforeAll(async () => {
    receiver = await webhookReceiver();
    for (let i = 0; i < 3; i++) {
      const res = await api<{ id: string }>('POST', '/v1/webhook-endpoints', {
        key: ws.key,
        body: { url: receiver.url, event_types: ['post.published'], description: `endpoint ${i}` },
      });
      expect(res.status).toBe(201);
      endpoints.push(res.body.id);
    }
    // Three test deliveries: three entries in the first endpoint's log.
    for (let i = 0; i < 3; i++) {
      const sent = await api('POST', `/v1/webhook-endpoints/${endpoints[0]}/test`, { key: ws.key });
      expect(sent.status).toBe(200);
    }
  });

  it('listWebhookEndpoints takes limit and after, newest first', async () => {
    const { pages, seen } = await all('limit=2', ws.key, '/v1/webhook-endpoints');
    expect(seen).toEqual([...endpoints].reverse());
    expect(pages.map((p) => p.has_more)).toEqual([true, false]);
    const whole = await api<Page>('GET', '/v1/webhook-endpoints?limit=100', { key: ws.key });
    expect(whole.status).toBe(200);
    expect(whole.body).toMatchObject({ has_more: false, next_cursor: null });
  });

  it('listWebhookDeliveries takes limit and after, most recently attempted first', async () => {
    const eventIdOf = (d: Record<string, unknown>) => String(d.event_id);
    const { pages, seen } = await all(
      'limit=1',
      ws.key,
      `/v1/webhook-endpoints/${endpoints[0]}/deliveries`,
      eventIdOf,
    );
    expect(pages.map((p) => p.data.length)).toEqual([1, 1, 1]);
    expect(new Set(seen).size).toBe(3);
    const whole = await api<{ data: Array<{ event_id: string; updated_at: string }> }>(
      'GET',
      `/v1/webhook-endpoints/${endpoints[0]}/deliveries`,
      { key: ws.key },
    );
    expect(whole.body.data.map((d) => d.event_id)).toEqual(seen);
    const times = whole.body.data.map((d) => d.updated_at);
    expect([...times].sort().reverse()).toEqual(times);
  });

  it("refuses limits out of range and another list's cursor", async () => {
    for (const path of ['/v1/webhook-endpoints', `/v1/webhook-endpoints/${endpoints[0]}/deliveries`]) {
      for (const q of ['limit=0', 'limit=101']) {
        const bad = await api<{ code: string }>('GET', `${path}?${q}`, { key: ws.key });
        expect(bad.status, `${path}?${q}`).toBe(400);
        expect(bad.body.code).toBe('validation_failed');
      }
    }
    const endpointsCursor = (await api<Page>('GET', '/v1/webhook-endpoints?limit=1', { key: ws.key })).body
      .next_cursor;
    const elsewhere = [`/v1/webhook-endpoints/${endpoints[0]}/deliveries`, '/v1/posts', '/v1/media'];
    for (const path of elsewhere) {
      const res = await api<{ code: string }>(
        'GET',
        `${path}?after=${encodeURIComponent(`${endpointsCursor}`)}`,
        {
          key: ws.key,
        },
      );
      expect(res.status, path).toBe(400);
      expect(res.body.code).toBe('invalid_request');
    }
    const deliveriesCursor = (
      await api<Page>('GET', `/v1/webhook-endpoints/${endpoints[0]}/deliveries?limit=1`, { key: ws.key })
    ).body.next_cursor;
    const onAnother = await api<{ code: string }>(
      'GET',
      `/v1/webhook-endpoints/${endpoints[1]}/deliveries?after=${encodeURIComponent(`${deliveriesCursor}`)}`,
      { key: ws.key },
    );
    expect(onAnother.body.code).toBe('invalid_request');
  });
});
