import { describe, expect, it } from 'vitest';
import { api, dangerous, failPlatform, inDays, mint, waitForPost, workspace } from './helpers.ts';

// getAnalytics (docs/api/analytics.md) over what really happened on the local stack.

type Analytics = {
  posts: Record<string, number>;
  deliveries: { total: number; published: number; failed: number; success_rate: number | null };
  timeline: Array<{ date: string; published: number; failed: number }>;
  engagement: Record<string, number>;
  synced_platforms: string[];
  generated_at: string;
};

describe('getAnalytics', () => {
  it('counts posts by status, deliveries per (post, channel) and today on the 14-day timeline', async () => {
    const ws = await workspace(['mastodon', 'pinterest']);
    await dangerous(ws, true);
    const empty = await api<Analytics>('GET', '/v1/analytics', { key: ws.key });
    expect(empty.status).toBe(200);
    expect(empty.body.deliveries).toEqual({ total: 0, published: 0, failed: 0, success_rate: null });
    expect(empty.body.timeline).toHaveLength(14);
    expect(empty.body.timeline.at(-1)?.date).toBe(new Date().toISOString().slice(0, 10));

    await api('POST', '/v1/posts', {
      key: ws.key,
      body: { variants: [{ channel_id: ws.channels.mastodon, body: 'd' }], draft: true },
    });
    await api('POST', '/v1/posts', {
      key: ws.key,
      body: { variants: [{ channel_id: ws.channels.mastodon, body: 's' }], scheduled_at: inDays(2) },
    });
    const ok = await api<{ id: string }>('POST', '/v1/posts', {
      key: ws.key,
      body: { variants: [{ channel_id: ws.channels.mastodon, body: 'analytics ok' }], publish_now: true },
    });
    await waitForPost(ws.key, ok.body.id, (p) => p.status === 'published');
    // Pinterest needs media: a post there cannot be created without an asset, so fail one on Mastodon.
    await failPlatform('mastodon', {
      status: 422,
      pathPattern: '^/api/v1/statuses$',
      bodyIncludes: 'analytics-bad',
      body: { error: 'Validation failed: Text character limit of 500 exceeded' },
    });
    const bad = await api<{ id: string }>('POST', '/v1/posts', {
      key: ws.key,
      body: { variants: [{ channel_id: ws.channels.mastodon, body: 'analytics-bad' }], publish_now: true },
    });
    await waitForPost(ws.key, bad.body.id, (p) => p.status === 'failed');

    const deadline = Date.now() + 40_000;
    let a: Analytics = empty.body;
    while (Date.now() < deadline) {
      a = (await api<Analytics>('GET', '/v1/analytics', { key: ws.key })).body;
      // The org's totals and each day's counts are separate counter items, written one after the
      // other by the stream relay: wait for both.
      const today = a.timeline.at(-1);
      if (
        a.deliveries.failed === 1 &&
        a.deliveries.published === 1 &&
        today?.failed === 1 &&
        today.published === 1
      )
        break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(a.posts).toMatchObject({
      total: 4,
      draft: 1,
      scheduled: 1,
      published: 1,
      failed: 1,
      publishing: 0,
      needs_approval: 0,
    });
    expect(a.deliveries).toMatchObject({ published: 1, failed: 1, success_rate: 0.5 });
    expect(a.timeline.at(-1)).toMatchObject({ published: 1, failed: 1 });
    expect(Object.keys(a.engagement).sort()).toEqual([
      'clicks',
      'comments',
      'impressions',
      'likes',
      'shares',
    ]);
  });

  it('needs analytics:read', async () => {
    const ws = await workspace([]);
    const res = await api('GET', '/v1/analytics', { key: await mint(ws, 'posts:read') });
    expect(res.status).toBe(403);
  });
});
