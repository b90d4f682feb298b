import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { api, dangerous, fakeState, waitForPost, webhookReceiver, workspace } from './helpers.ts';

// Long posts through the local stack's queues (fauxqs, with the stack's 256 KiB message limit and
// SQS's 1 MiB per batch request), as a user tried it: twelve posts whose base text is 63,000 CJK
// characters (≈ 190 KB each, under the API's 256 KiB request limit) on one Mastodon channel, due in
// the same second. Dispatches, delivery messages, post.published events and webhook jobs all carry
// or refer to the whole post; batches of them must be split, not refused.

type Post = { id: string; status: string };

describe('twelve long posts due in the same second', () => {
  it('all publish, and every post.published webhook arrives', async () => {
    const ws = await workspace(['mastodon']);
    const rx = await webhookReceiver();
    const endpoint = await api('POST', '/v1/webhook-endpoints', {
      key: ws.key,
      body: { url: rx.url, event_types: ['post.published'] },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
    const marker = `long-${Date.now()}`;
    const base = '漢'.repeat(63_000);
    const at = new Date(Math.ceil((Date.now() + 15_000) / 1000) * 1000).toISOString();

    const created = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const res = await api<Post>('POST', '/v1/posts', {
          key: ws.key,
          body: {
            body: base,
            variants: [{ channel_id: ws.channels.mastodon, body: `${marker} #${i}` }],
            scheduled_at: at,
          },
        });
        expect(res.status, res.text).toBe(201);
        return res.body;
      }),
    );

    for (const p of created) {
      const done = await waitForPost<Post>(
        ws.key,
        p.id,
        (x) => x.status !== 'scheduled' && x.status !== 'publishing',
        70_000,
      );
      expect(done.status).toBe('published');
    }
    const deadline = Date.now() + 30_000;
    while (rx.ofType('post.published').length < 12 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 200));
    const ids = rx
      .ofType('post.published')
      .map((r) => (JSON.parse(r.body) as { data: { post: Post } }).data.post.id);
    expect(new Set(ids)).toEqual(new Set(created.map((p) => p.id)));
    const statuses = (await fakeState('mastodon')).posts ?? [];
    expect(statuses.filter((s) => JSON.stringify(s).includes(marker))).toHaveLength(12);
  });

  it("a post whose event is over the queues' 256 KiB goes through them by reference, whole", async () => {
    const ws = await workspace(['mastodon', 'facebook']);
    await dangerous(ws, true);
    const rx = await webhookReceiver();
    const endpoint = await api('POST', '/v1/webhook-endpoints', {
      key: ws.key,
      body: { url: rx.url, event_types: ['post.published'] },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
    const marker = `byref-${Date.now()}`;
    // ≈ 261.5 KB of request (under the API's 256 KiB), ≈ 262.5 KB of post.published event.
    const res = await api<Post>('POST', '/v1/posts', {
      key: ws.key,
      body: {
        body: '漢'.repeat(63_000),
        variants: [
          { channel_id: ws.channels.mastodon, body: `${marker} short` },
          { channel_id: ws.channels.facebook, body: `${marker} ${'字'.repeat(24_100)}` },
        ],
        publish_now: true,
      },
    });
    expect(res.status, res.text).toBe(201);

    const done = await waitForPost<Post>(ws.key, res.body.id, (x) => x.status !== 'publishing', 60_000);
    expect(done.status).toBe('published');
    const deadline = Date.now() + 30_000;
    while (!rx.ofType('post.published').length && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 200));
    const [got] = rx.ofType('post.published');
    expect(Buffer.byteLength(got?.body ?? '')).toBeGreaterThan(262_144);
    const event = JSON.parse(got?.body ?? '{}') as { data: { post: { id: string; body: string } } };
    expect(event.data.post).toMatchObject({ id: res.body.id, body: '漢'.repeat(63_000) });
    // It went by reference: its body (and its webhook job's) stored under queue-bodies/.
    const stored = readdirSync(join(inject('dataDir'), 's3', 'herald-uploads', 'queue-bodies'));
    expect(stored.length).toBeGreaterThanOrEqual(2);
  });
});
