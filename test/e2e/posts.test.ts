import { beforeAll, describe, expect, it } from 'vitest';
import {
  api,
  cliOk,
  dangerous,
  failPlatform,
  inDays,
  type Workspace,
  waitForPost,
  workspace,
} from './helpers.ts';

type Post = {
  id: string;
  status: string;
  scheduled_at: string | null;
  variants: Array<{ id: string; channel_id: string; body: string }>;
  deliveries: Array<{ channel_id: string; stage: string; attempts: number; error_category?: string | null }>;
};
type Problem = { code: string; errors?: Array<{ pointer: string; code: string }> };

let ws: Workspace;
const variantsFor = (w: Workspace, body = 'Hello from Herald') =>
  Object.values(w.channels).map((channel_id) => ({ channel_id, body }));

async function create(body: Record<string, unknown>, w: Workspace = ws) {
  return api<Post & Problem>('POST', '/v1/posts', {
    key: w.key,
    body: { variants: variantsFor(w), ...body },
  });
}

beforeAll(async () => {
  ws = await workspace(['bluesky', 'mastodon']);
});

describe('createPost modes', () => {
  it('creates a draft, a scheduled post, and (with the toggle) a publishing post', async () => {
    const draft = await create({ draft: true, title: 'internal' });
    expect(draft.status).toBe(201);
    expect(draft.body).toMatchObject({
      status: 'draft',
      type: 'single',
      title: 'internal',
      scheduled_at: null,
      deliveries: [],
    });
    expect(draft.body.variants.map((v) => v.channel_id)).toEqual(Object.values(ws.channels));
    expect(draft.body.variants[0]?.id).toMatch(/^var_/);

    const at = inDays(3);
    const scheduled = await create({ scheduled_at: at });
    expect(scheduled.body).toMatchObject({ status: 'scheduled', scheduled_at: at });

    const refused = await create({ publish_now: true });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('dangerous_ops_disabled');
  });

  it('publish_now with the toggle queues one delivery message per channel', async () => {
    const w = await workspace(['bluesky', 'mastodon', 'linkedin']);
    await dangerous(w, true);
    const res = await create({ publish_now: true }, w);
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('publishing');
    expect(res.body.deliveries.map((d) => d.stage)).toEqual(['queued', 'queued', 'queued']);
    // One delivery per channel, each delivered once (the delivery engine's own tests go deeper).
    const done = await waitForPost<Post>(
      w.key,
      res.body.id,
      (p) => p.status === 'published' || p.status === 'failed',
    );
    expect(done.deliveries.map((d) => d.channel_id).sort()).toEqual(Object.values(w.channels).sort());
    expect(done.deliveries.every((d) => d.attempts === 1)).toBe(true);
  });

  it('requires exactly one mode', async () => {
    const none = await create({});
    expect(none.status).toBe(400);
    expect(none.body.errors).toEqual([expect.objectContaining({ pointer: '', code: 'mode_required' })]);
    const many = await create({ draft: true, scheduled_at: inDays(1), publish_now: true });
    expect(many.body.errors?.map((e) => [e.pointer, e.code])).toEqual([
      ['/draft', 'mode_conflict'],
      ['/scheduled_at', 'mode_conflict'],
      ['/publish_now', 'mode_conflict'],
    ]);
  });

  it('refuses a scheduled_at that is not in the future', async () => {
    const res = await create({ scheduled_at: new Date(Date.now() - 60_000).toISOString() });
    expect(res.body.errors).toEqual([
      expect.objectContaining({ pointer: '/scheduled_at', code: 'not_in_future' }),
    ]);
  });

  it('reports field errors with JSON Pointers', async () => {
    const res = await api<Problem>('POST', '/v1/posts', {
      key: ws.key,
      body: { variants: [{ channel_id: 5, body: 'x', extra: true }], draft: 'yes' },
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    const pairs = res.body.errors?.map((e) => [e.pointer, e.code]);
    expect(pairs).toEqual(
      expect.arrayContaining([
        ['/variants/0/channel_id', 'invalid_type'],
        ['/variants/0/extra', 'unknown_field'],
        ['/draft', 'invalid_type'],
      ]),
    );
  });

  it('checks each variant against its platform', async () => {
    const long = 'a'.repeat(301);
    const res = await api<Problem>('POST', '/v1/posts', {
      key: ws.key,
      body: {
        variants: [
          { channel_id: ws.channels.bluesky, body: long },
          { channel_id: ws.channels.mastodon, body: 'ok', options: { visibility: 'everyone' } },
        ],
        draft: true,
      },
    });
    expect(res.body.errors).toEqual([
      expect.objectContaining({ pointer: '/variants/0/body', code: 'text_too_long' }),
      expect.objectContaining({ pointer: '/variants/1/options/visibility', code: 'invalid_option' }),
    ]);
  });

  it('requires media where the platform does and refuses unknown media', async () => {
    const w = await workspace(['instagram']);
    const none = await create({ draft: true }, w);
    expect(none.body.errors).toEqual([
      expect.objectContaining({ pointer: '/variants/0/media', code: 'media_required' }),
    ]);
    const unknown = await api<Problem>('POST', '/v1/posts', {
      key: w.key,
      body: {
        variants: [
          {
            channel_id: w.channels.instagram,
            body: 'x',
            media: [{ url: 'https://cdn.example/a.png', type: 'image' }],
          },
        ],
        draft: true,
      },
    });
    expect(unknown.body.errors).toEqual([
      expect.objectContaining({ pointer: '/variants/0/media/0/url', code: 'unknown_media' }),
    ]);
  });

  it('refuses unknown channels and duplicate channels', async () => {
    const res = await api<Problem>('POST', '/v1/posts', {
      key: ws.key,
      body: {
        variants: [
          { channel_id: 'ch_01ZZZZZZZZZZZZZZZZZZZZZZZZ', body: 'x' },
          { channel_id: ws.channels.bluesky, body: 'x' },
          { channel_id: ws.channels.bluesky, body: 'y' },
        ],
        draft: true,
      },
    });
    expect(res.body.errors?.map((e) => [e.pointer, e.code])).toEqual(
      expect.arrayContaining([
        ['/variants/0/channel_id', 'unknown_channel'],
        ['/variants/2/channel_id', 'duplicate_channel'],
      ]),
    );
  });

  it('answers invalid_request for malformed bodies', async () => {
    const cases = [
      { raw: '{"variants": [', headers: { 'content-type': 'application/json' } },
      { raw: '[1,2]', headers: { 'content-type': 'application/json' } },
      { raw: '{"draft": true}', headers: { 'content-type': 'text/plain' } },
      { raw: '', headers: { 'content-type': 'application/json' } },
    ];
    for (const c of cases) {
      const res = await api<Problem>('POST', '/v1/posts', { key: ws.key, ...c });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_request');
    }
  });

  it('refuses bodies over 256 KiB with 413', async () => {
    const res = await api<Problem>('POST', '/v1/posts', {
      key: ws.key,
      body: { variants: [{ channel_id: ws.channels.bluesky, body: 'x'.repeat(300_000) }], draft: true },
    });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('payload_too_large');
  });
});

describe('state transitions', () => {
  it('draft → scheduled → rescheduled → publishing, then publish again is accepted as-is', async () => {
    // The injected 503 holds the delivery in `retrying` (Retry-After 60) and so the post in
    // `publishing`. Other files post to Threads on the same fakes at the same time: the failure
    // meets only requests carrying this post's marker, or another file's post could take it.
    const w = await workspace(['threads']);
    const marker = `transitions-${Date.now()}`;
    await failPlatform('threads', {
      status: 503,
      pathPattern: '/threads$',
      bodyIncludes: marker,
      headers: { 'retry-after': '60' },
      body: {
        error: {
          message: 'Service temporarily unavailable',
          type: 'OAuthException',
          code: 2,
          is_transient: true,
        },
      },
    });
    const draft = await create({ draft: true, variants: variantsFor(w, `Hello ${marker}`) }, w);
    const t1 = inDays(2);
    const scheduled = await api<Post>('PATCH', `/v1/posts/${draft.body.id}`, {
      key: w.key,
      body: { scheduled_at: t1 },
    });
    expect(scheduled.status).toBe(200);
    expect(scheduled.body).toMatchObject({ status: 'scheduled', scheduled_at: t1 });
    const t2 = inDays(5);
    const moved = await api<Post>('PATCH', `/v1/posts/${draft.body.id}`, {
      key: w.key,
      body: { scheduled_at: t2 },
    });
    expect(moved.body.scheduled_at).toBe(t2);

    const off = await api<Problem>('POST', `/v1/posts/${draft.body.id}/publish`, { key: w.key });
    expect(off.status).toBe(403);
    expect(off.body.code).toBe('dangerous_ops_disabled');
    await dangerous(w, true);
    const published = await api<{ id: string; status: string }>(
      'POST',
      `/v1/posts/${draft.body.id}/publish`,
      { key: w.key },
    );
    expect(published.status).toBe(202);
    expect(published.body).toEqual({ id: draft.body.id, status: 'publishing' });
    const got = await waitForPost<Post>(w.key, draft.body.id, (p) => p.deliveries[0]?.stage === 'retrying');
    expect(got.status).toBe('publishing');
    expect(got.deliveries).toEqual([
      expect.objectContaining({
        channel_id: w.channels.threads,
        stage: 'retrying',
        attempts: 1,
        error_category: 'system',
      }),
    ]);
    const again = await api<{ status: string }>('POST', `/v1/posts/${draft.body.id}/publish`, { key: w.key });
    expect(again.status).toBe(202);
    expect(again.body.status).toBe('publishing');

    const reschedule = await api<Problem>('PATCH', `/v1/posts/${draft.body.id}`, {
      key: w.key,
      body: { scheduled_at: inDays(9) },
    });
    expect(reschedule.status).toBe(409);
    expect(reschedule.body.code).toBe('resource_conflict');
    const del = await api<Problem>('DELETE', `/v1/posts/${draft.body.id}`, { key: w.key });
    expect(del.status).toBe(409);
  });

  it('a draft without variants cannot be scheduled; reschedule needs a future time', async () => {
    const empty = await api<Post>('POST', '/v1/posts', { key: ws.key, body: { variants: [], draft: true } });
    expect(empty.status).toBe(201);
    const res = await api<Problem>('PATCH', `/v1/posts/${empty.body.id}`, {
      key: ws.key,
      body: { scheduled_at: inDays(1) },
    });
    expect(res.status).toBe(409);
    const past = await api<Problem>('PATCH', `/v1/posts/${empty.body.id}`, {
      key: ws.key,
      body: { scheduled_at: '2020-01-01T00:00:00Z' },
    });
    expect(past.status).toBe(400);
    expect(past.body.errors?.[0]).toMatchObject({ pointer: '/scheduled_at', code: 'not_in_future' });
  });

  it('deletes with the toggle on and answers 404 afterwards', async () => {
    const w = await workspace(['bluesky']);
    const draft = await create({ draft: true }, w);
    const off = await api<Problem>('DELETE', `/v1/posts/${draft.body.id}`, { key: w.key });
    expect(off.body.code).toBe('dangerous_ops_disabled');
    await dangerous(w, true);
    const del = await api('DELETE', `/v1/posts/${draft.body.id}`, { key: w.key });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: draft.body.id, deleted: true });
    expect((await api('GET', `/v1/posts/${draft.body.id}`, { key: w.key })).status).toBe(404);
    expect((await api('DELETE', `/v1/posts/${draft.body.id}`, { key: w.key })).status).toBe(404);
  });

  it('checks the toggle before existence (403 before 404)', async () => {
    const res = await api<Problem>('POST', '/v1/posts/post_01ZZZZZZZZZZZZZZZZZZZZZZZZ/publish', {
      key: ws.key,
    });
    expect(res.status).toBe(403);
    const bad = await api<Problem>('GET', '/v1/posts/not-an-id', { key: ws.key });
    expect(bad.status).toBe(404);
  });

  it('approval_required turns scheduling and publish-now into needs_approval until approved', async () => {
    const w = await workspace(['bluesky']);
    await cliOk(
      'settings',
      'set',
      '--org',
      w.orgId,
      '--by',
      w.ownerId,
      '--approval-required',
      'on',
      '--dangerous-ops',
      'on',
    );
    const scheduled = await create({ scheduled_at: inDays(1) }, w);
    expect(scheduled.body.status).toBe('needs_approval');
    const now = await create({ publish_now: true }, w);
    expect(now.body.status).toBe('needs_approval');
    expect((await api('POST', `/v1/posts/${now.body.id}/publish`, { key: w.key })).status).toBe(409);
    expect(
      (
        await api('PATCH', `/v1/posts/${scheduled.body.id}`, {
          key: w.key,
          body: { scheduled_at: inDays(2) },
        })
      ).status,
    ).toBe(409);

    const a1 = await cliOk('post', 'approve', '--org', w.orgId, '--by', w.ownerId, '--id', scheduled.body.id);
    expect(a1.status).toBe('scheduled');
    const a2 = await cliOk('post', 'approve', '--org', w.orgId, '--by', w.ownerId, '--id', now.body.id);
    expect(a2.status).toBe('publishing');
    expect(
      (await waitForPost<Post>(w.key, now.body.id, (p) => p.status === 'published')).deliveries[0]?.stage,
    ).toBe('published');
  });
});
