import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { ffmpegPath } from '#adapters/media-tools';
import {
  api,
  dangerous,
  fakeState,
  mcpClient,
  type Workspace,
  waitForPost,
  webhookReceiver,
  workspace,
} from './helpers.ts';

// unpublishPost over HTTP against the local stack and the platforms' contract fakes: the API's
// write, the stream relay's removal message, the unpublish worker's platform deletes, and the
// post.unpublished webhook.

type Json = Record<string, unknown>;
type Delivery = { channel_id: string; stage: string; external_id: string | null; error: string | null };
type Post = { id: string; status: string; deliveries: Delivery[] };

const fakes = () => inject('fakesOrigin');

/** Posts a fake holds whose content carries `marker`. */
async function postsWith(platform: string, marker: string): Promise<number> {
  const state = await fakeState(platform);
  return (state.posts ?? []).filter((p) => JSON.stringify(p).includes(marker)).length;
}

/** A small JPEG (Instagram takes JPEG only), made by ffmpeg as the media tests' samples are. */
function jpeg(): Uint8Array {
  const dir = mkdtempSync(join(tmpdir(), 'herald-unpublish-'));
  try {
    const file = join(dir, 'photo.jpg');
    execFileSync(ffmpegPath(), [
      '-v',
      'error',
      '-nostdin',
      '-y',
      '-f',
      'lavfi',
      '-i',
      'testsrc=size=320x320:rate=1',
      '-frames:v',
      '1',
      file,
    ]);
    return readFileSync(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function image(ws: Workspace): Promise<string> {
  const bytes = jpeg();
  const t = await api<{ asset_id: string; upload_url: string }>('POST', '/v1/media/uploads', {
    key: ws.key,
    body: { filename: 'photo.jpg', content_type: 'image/jpeg', size_bytes: bytes.length },
  });
  expect(t.status, t.text).toBe(201);
  const put = await fetch(t.body.upload_url, {
    method: 'PUT',
    body: bytes,
    headers: { 'content-type': 'image/jpeg' },
  });
  expect(put.status).toBe(200);
  const done = await api<{ url: string }>('POST', `/v1/media/uploads/${t.body.asset_id}/complete`, {
    key: ws.key,
  });
  expect(done.status, done.text).toBe(200);
  return done.body.url;
}

async function publish(ws: Workspace, marker: string, imageUrl?: string): Promise<Post> {
  const res = await api<Post>('POST', '/v1/posts', {
    key: ws.key,
    body: {
      variants: Object.entries(ws.channels).map(([p, id]) => ({
        channel_id: id,
        body: `${marker} on ${p}`,
        ...(p === 'instagram' && imageUrl ? { media: [{ url: imageUrl, type: 'image' }] } : {}),
      })),
      publish_now: true,
    },
  });
  expect(res.status, res.text).toBe(201);
  const post = await waitForPost<Post>(ws.key, res.body.id, (p) => p.status !== 'publishing');
  expect(post.status, JSON.stringify(post.deliveries)).toBe('published');
  return post;
}

const stageOf = (p: Post, channelId: string | undefined) =>
  p.deliveries.find((d) => d.channel_id === channelId);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('unpublishPost', () => {
  it('takes a post down from X and Bluesky, answers Instagram per channel, and tells webhooks once', async () => {
    const ws = await workspace(['x', 'bluesky', 'instagram']);
    await dangerous(ws, true);
    const hooks = await webhookReceiver();
    const endpoint = await api('POST', '/v1/webhook-endpoints', {
      key: ws.key,
      body: { url: hooks.url, event_types: ['post.unpublished'] },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
    const marker = `unpub-${Date.now()}`;
    const post = await publish(ws, marker, await image(ws));
    for (const p of ['x', 'bluesky']) expect(await postsWith(p, marker), p).toBe(1);

    // No body at all: every channel it is published on.
    const res = await api<Post>('POST', `/v1/posts/${post.id}/unpublish`, { key: ws.key });
    expect(res.status, res.text).toBe(202);
    expect(res.body.status).toBe('published');
    expect(stageOf(res.body, ws.channels.x)?.stage).toMatch(/^remov/);
    expect(stageOf(res.body, ws.channels.instagram)).toMatchObject({
      stage: 'published',
      error: 'unpublish_unsupported',
    });

    const done = await waitForPost<Post>(ws.key, post.id, (p) =>
      [ws.channels.x, ws.channels.bluesky].every((id) => stageOf(p, id)?.stage === 'removed'),
    );
    expect(done.status).toBe('published');
    expect(stageOf(done, ws.channels.x)).toMatchObject({
      error: null,
      external_id: stageOf(post, ws.channels.x)?.external_id,
    });
    expect(await postsWith('x', marker)).toBe(0);
    expect(await postsWith('bluesky', marker)).toBe(0);
    // Instagram was asked nothing.
    const igId = stageOf(post, ws.channels.instagram)?.external_id ?? '';
    expect(
      (await fakeState('instagram')).requests.filter(
        (r) => r.method === 'DELETE' || r.path.includes(`${igId}/`),
      ),
    ).toEqual([]);

    const deadline = Date.now() + 30_000;
    while (hooks.ofType('post.unpublished').length === 0 && Date.now() < deadline) await sleep(100);
    // A repeat changes nothing and sends nothing: no second delete, no second event.
    const again = await api<Post>('POST', `/v1/posts/${post.id}/unpublish`, { key: ws.key, body: {} });
    expect(again.status, again.text).toBe(202);
    await sleep(1500);
    const events = hooks.ofType('post.unpublished');
    expect(events).toHaveLength(1);
    const data = (JSON.parse(events[0]?.body ?? '{}') as Json).data as { post: Post };
    expect(data.post.id).toBe(post.id);
    expect(stageOf(data.post, ws.channels.bluesky)?.stage).toBe('removed');
    const xDeletes = (await fakeState('x')).requests.filter(
      (r) => r.method === 'DELETE' && r.path.endsWith(`/${stageOf(post, ws.channels.x)?.external_id}`),
    );
    expect(xDeletes).toHaveLength(1);
  });

  it('a post the platform already deleted ends removed', async () => {
    const ws = await workspace(['x', 'mastodon']);
    await dangerous(ws, true);
    const marker = `gone-${Date.now()}`;
    const post = await publish(ws, marker);
    const tweet = stageOf(post, ws.channels.x)?.external_id;
    const status = stageOf(post, ws.channels.mastodon)?.external_id;
    const auth = { authorization: 'Bearer token' };
    expect((await fetch(`${fakes()}/x/2/tweets/${tweet}`, { method: 'DELETE', headers: auth })).status).toBe(
      200,
    );
    expect(
      (await fetch(`${fakes()}/mastodon/api/v1/statuses/${status}`, { method: 'DELETE', headers: auth }))
        .status,
    ).toBe(200);

    const res = await api<Post>('POST', `/v1/posts/${post.id}/unpublish`, {
      key: ws.key,
      body: { channel_ids: [ws.channels.x, ws.channels.mastodon] },
    });
    expect(res.status, res.text).toBe(202);
    const done = await waitForPost<Post>(ws.key, post.id, (p) =>
      p.deliveries.every((d) => d.stage === 'removed'),
    );
    expect(done.deliveries.map((d) => d.error)).toEqual([null, null]);
  });

  it('unpublish_post over MCP takes the post down the same way', async () => {
    const ws = await workspace(['mastodon']);
    await dangerous(ws, true);
    const marker = `mcp-unpub-${Date.now()}`;
    const post = await publish(ws, marker);
    const client = await mcpClient(ws.key, 'unpublish-agent');
    const res = await client.callTool({ name: 'unpublish_post', arguments: { id: post.id } });
    expect(res.isError, JSON.stringify(res.structuredContent)).toBeFalsy();
    expect((res.structuredContent as Post).deliveries[0]?.stage).toMatch(/^remov/);
    await waitForPost<Post>(ws.key, post.id, (p) => p.deliveries[0]?.stage === 'removed');
    expect(await postsWith('mastodon', marker)).toBe(0);
  });

  it('refuses while Dangerous AI operations are off, and bad channel_ids, changing nothing', async () => {
    const ws = await workspace(['mastodon', 'bluesky']);
    await dangerous(ws, true);
    const marker = `refused-${Date.now()}`;
    const post = await publish(ws, marker);
    const bad = await api<{ code: string; errors: Array<{ pointer: string; code: string }> }>(
      'POST',
      `/v1/posts/${post.id}/unpublish`,
      { key: ws.key, body: { channel_ids: [ws.channels.mastodon, 'ch_01ZZZZZZZZZZZZZZZZZZZZZZZZ'] } },
    );
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.errors.map((e) => [e.pointer, e.code])).toEqual([['/channel_ids/1', 'not_in_post']]);

    await dangerous(ws, false);
    const off = await api<{ code: string }>('POST', `/v1/posts/${post.id}/unpublish`, { key: ws.key });
    expect(off.status, off.text).toBe(403);
    expect(off.body.code).toBe('dangerous_ops_disabled');
    await sleep(1000);
    const after = (await api<Post>('GET', `/v1/posts/${post.id}`, { key: ws.key })).body;
    expect(after.deliveries.map((d) => d.stage)).toEqual(['published', 'published']);
    expect(await postsWith('mastodon', marker)).toBe(1);
    expect(await postsWith('bluesky', marker)).toBe(1);
  });
});
