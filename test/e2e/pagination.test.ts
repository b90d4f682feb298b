import { beforeAll, describe, expect, it } from 'vitest';
import { api, inDays, type Workspace, workspace } from './helpers.ts';

type Page = { data: Array<{ id: string; status: string }>; has_more: boolean; next_cursor: string | null };

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

async function all(query: string, key = ws.key): Promise<{ pages: Page[]; seen: string[] }> {
  const pages: Page[] = [];
  let cursor: string | null = null;
  do {
    const res: { status: number; body: Page } = await api<Page>(
      'GET',
      `/v1/posts?${query}${cursor ? `&after=${encodeURIComponent(cursor)}` : ''}`,
      { key },
    );
    expect(res.status).toBe(200);
    pages.push(res.body);
    cursor = res.body.next_cursor;
  } while (cursor);
  return { pages, seen: pages.flatMap((p) => p.data.map((d) => d.id)) };
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
