import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffmpegPath } from '#adapters/media-tools';
import {
  api,
  cliOk,
  dangerous,
  failPlatform,
  inDays,
  mcpClient,
  uploadMedia,
  type Workspace,
  waitForPost,
  workspace,
} from './helpers.ts';

// Editing posts over HTTP (docs/api/posts.md): updatePost (PUT) with its 409s, ETag/If-Match on
// every post write, the approval reset, validatePost writing nothing, and the media checks from
// the probe refusing what Bluesky and Instagram would refuse at delivery.

type Json = Record<string, unknown>;
type Post = {
  id: string;
  status: string;
  type: string;
  title: string | null;
  body: string | null;
  scheduled_at: string | null;
  variants: Array<{ id: string; channel_id: string; body: string }>;
  deliveries: Array<{ channel_id: string; stage: string }>;
};
type Problem = { code: string; detail: string; errors?: Array<{ pointer: string; code: string }> };
type Check = { pointer: string; code: string; detail: string };
type Validation = { valid: boolean; errors: Check[]; warnings: Check[] };

let ws: Workspace;
let dir: string;

beforeAll(async () => {
  ws = await workspace(['bluesky', 'mastodon', 'instagram']);
  dir = mkdtempSync(join(tmpdir(), 'herald-edit-e2e-'));
}, 90_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const both = (body: string) => [
  { channel_id: ws.channels.bluesky as string, body },
  { channel_id: ws.channels.mastodon as string, body },
];

async function create(body: Json): Promise<{ post: Post; etag: string }> {
  const res = await api<Post>('POST', '/v1/posts', { key: ws.key, body });
  expect(res.status, res.text).toBe(201);
  return { post: res.body, etag: await etagOf(res.body.id) };
}

async function etagOf(id: string): Promise<string> {
  const got = await api<Post>('GET', `/v1/posts/${id}`, { key: ws.key });
  expect(got.status).toBe(200);
  const etag = got.headers.get('etag');
  expect(etag).toMatch(/^"\d+"$/);
  return etag as string;
}

const put = (id: string, body: Json, headers: Record<string, string> = {}) =>
  api<Post & Problem>('PUT', `/v1/posts/${id}`, { key: ws.key, body, headers });

async function usage(): Promise<Record<string, number>> {
  const res = await api<{ meters: Array<{ key: string; used: number }> }>('GET', '/v1/usage', {
    key: ws.key,
  });
  return Object.fromEntries(res.body.meters.map((m) => [m.key, m.used]));
}

async function listIds(): Promise<string[]> {
  const res = await api<{ data: Post[] }>('GET', '/v1/posts?limit=100', { key: ws.key });
  return res.body.data.map((p) => p.id);
}

describe('updatePost', () => {
  it("replaces a scheduled post's content, keeps its schedule and variant ids, and moves its ETag", async () => {
    const at = inDays(2);
    const { post, etag } = await create({ variants: both('Tpyo'), title: 'T', body: 'B', scheduled_at: at });
    const res = await put(post.id, { variants: both('Typo fixed'), title: 'Launch' }, { 'if-match': etag });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'scheduled', scheduled_at: at, title: 'Launch', body: null });
    expect(res.body.variants.map((v) => v.body)).toEqual(['Typo fixed', 'Typo fixed']);
    expect(res.body.variants.map((v) => v.id)).toEqual(post.variants.map((v) => v.id));
    const next = res.headers.get('etag');
    expect(next).toMatch(/^"\d+"$/);
    expect(next).not.toBe(etag);
    expect(await etagOf(post.id)).toBe(next);

    // The same content again: nothing written, the same ETag.
    const again = await put(post.id, { variants: both('Typo fixed'), title: 'Launch' });
    expect(again.status).toBe(200);
    expect(again.headers.get('etag')).toBe(next);
  });

  it('refuses a stale If-Match with 412 and changes nothing; `*` matches any existing post', async () => {
    const { post, etag } = await create({ variants: both('first'), draft: true });
    expect((await put(post.id, { variants: both('second') }, { 'if-match': etag })).status).toBe(200);
    const stale = await put(post.id, { variants: both('third') }, { 'if-match': etag });
    expect(stale.status).toBe(412);
    expect(stale.body.code).toBe('precondition_failed');
    expect(stale.headers.get('etag')).toBe(await etagOf(post.id));
    const read = await api<Post>('GET', `/v1/posts/${post.id}`, { key: ws.key });
    expect(read.body.variants.map((v) => v.body)).toEqual(['second', 'second']);

    const weak = await put(
      post.id,
      { variants: both('third') },
      { 'if-match': `W/${await etagOf(post.id)}` },
    );
    expect(weak.status).toBe(412);
    const malformed = await put(post.id, { variants: both('third') }, { 'if-match': 'seven' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.code).toBe('invalid_request');
    const any = await put(post.id, { variants: both('third') }, { 'if-match': '*' });
    expect(any.status).toBe(200);
    const listed = await put(
      post.id,
      { variants: both('fourth') },
      { 'if-match': `"1", ${await etagOf(post.id)}` },
    );
    expect(listed.status).toBe(200);
  });

  it('honours If-Match on reschedulePost, publishPost and deletePost too', async () => {
    const { post, etag } = await create({ variants: both('ifmatch'), scheduled_at: inDays(3) });
    const moved = await api<Post>('PATCH', `/v1/posts/${post.id}`, {
      key: ws.key,
      body: { scheduled_at: inDays(4) },
      headers: { 'if-match': etag },
    });
    expect(moved.status).toBe(200);
    const movedTag = moved.headers.get('etag');
    expect(movedTag).toBe(await etagOf(post.id));

    const staleMove = await api<Problem>('PATCH', `/v1/posts/${post.id}`, {
      key: ws.key,
      body: { scheduled_at: inDays(5) },
      headers: { 'if-match': etag },
    });
    expect(staleMove.status).toBe(412);

    await dangerous(ws, true);
    try {
      const staleDelete = await api<Problem>('DELETE', `/v1/posts/${post.id}`, {
        key: ws.key,
        headers: { 'if-match': etag },
      });
      expect(staleDelete.status).toBe(412);
      const stalePublish = await api<Problem>('POST', `/v1/posts/${post.id}/publish`, {
        key: ws.key,
        headers: { 'if-match': etag },
      });
      expect(stalePublish.status).toBe(412);
      const still = await api<Post>('GET', `/v1/posts/${post.id}`, { key: ws.key });
      expect(still.body.status).toBe('scheduled');

      const deleted = await api('DELETE', `/v1/posts/${post.id}`, {
        key: ws.key,
        headers: { 'if-match': movedTag as string },
      });
      expect(deleted.status).toBe(200);
    } finally {
      await dangerous(ws, false);
    }
  });

  it('answers 404 for an unknown post and 400 for bad content, changing nothing', async () => {
    const missing = await put('post_01JD0000000000000000000000', { variants: both('x') });
    expect(missing.status).toBe(404);
    const { post, etag } = await create({ variants: both('valid'), scheduled_at: inDays(2) });
    const noVariants = await put(post.id, { variants: [] });
    expect(noVariants.status).toBe(400);
    expect(noVariants.body.errors).toEqual([
      expect.objectContaining({ pointer: '/variants', code: 'too_few_items' }),
    ]);
    const tooLong = await put(post.id, {
      variants: [{ channel_id: ws.channels.bluesky, body: 'x'.repeat(301) }],
    });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.errors?.[0]).toMatchObject({ pointer: '/variants/0/body', code: 'text_too_long' });
    const schedule = await put(post.id, { variants: both('x'), scheduled_at: inDays(9) });
    expect(schedule.status).toBe(400);
    expect(schedule.body.errors?.[0]).toMatchObject({ pointer: '/scheduled_at', code: 'unknown_field' });
    expect(await etagOf(post.id)).toBe(etag);
  });

  it('refuses publishing and published posts (409), and on a failed post the variant of a channel that published', async () => {
    const marker = `edit-fail-${randomBytes(4).toString('hex')}`;
    await failPlatform('mastodon', {
      status: 422,
      pathPattern: '^/api/v1/statuses$',
      bodyIncludes: marker,
      body: { error: 'Validation failed: Text character limit of 500 exceeded' },
    });
    await dangerous(ws, true);
    let id: string;
    try {
      const res = await api<Post>('POST', '/v1/posts', {
        key: ws.key,
        body: { variants: both(marker), publish_now: true },
      });
      expect(res.status, res.text).toBe(201);
      id = res.body.id;
      // While publishing, or once failed: a publishing post refuses the edit.
      const early = await put(id, { variants: both(`${marker} edited`) });
      if (early.status === 409) expect(early.body.code).toBe('resource_conflict');
    } finally {
      await dangerous(ws, false);
    }
    const failed = await waitForPost<Post>(ws.key, id, (p) => p.status === 'failed');
    expect(failed.deliveries.find((d) => d.channel_id === ws.channels.bluesky)?.stage).toBe('published');

    const changed = await put(id, { variants: both(`${marker} edited`) });
    expect(changed.status).toBe(409);
    expect(changed.body.code).toBe('resource_conflict');
    expect(changed.body.detail).toContain(ws.channels.bluesky);
    const dropped = await put(id, { variants: [{ channel_id: ws.channels.mastodon, body: 'short' }] });
    expect(dropped.status).toBe(409);

    // The published channel's variant as it is, the failed one fixed: accepted, still failed.
    const fixed = await put(id, {
      variants: [
        { channel_id: ws.channels.bluesky, body: marker },
        { channel_id: ws.channels.mastodon, body: 'fixed for mastodon' },
      ],
    });
    expect(fixed.status, fixed.text).toBe(200);
    expect(fixed.body.status).toBe('failed');

    const published = await create({
      variants: [{ channel_id: ws.channels.bluesky, body: 'done' }],
      draft: true,
    });
    await dangerous(ws, true);
    try {
      await api('POST', `/v1/posts/${published.post.id}/publish`, { key: ws.key });
    } finally {
      await dangerous(ws, false);
    }
    await waitForPost<Post>(ws.key, published.post.id, (p) => p.status === 'published');
    const late = await put(published.post.id, {
      variants: [{ channel_id: ws.channels.bluesky, body: 'later' }],
    });
    expect(late.status).toBe(409);
    expect(late.body.code).toBe('resource_conflict');
  });

  it('with approval required, sends an edited scheduled or waiting post (back) to needs_approval', async () => {
    const w = await workspace(['bluesky']);
    const variants = (body: string) => [{ channel_id: w.channels.bluesky as string, body }];
    const scheduled = await api<Post>('POST', '/v1/posts', {
      key: w.key,
      body: { variants: variants('approved text'), scheduled_at: inDays(2) },
    });
    expect(scheduled.body.status).toBe('scheduled');
    await cliOk('settings', 'set', '--org', w.orgId, '--by', w.ownerId, '--approval-required', 'on');
    const edited = await api<Post>('PUT', `/v1/posts/${scheduled.body.id}`, {
      key: w.key,
      body: { variants: variants('changed after approval') },
    });
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body).toMatchObject({
      status: 'needs_approval',
      scheduled_at: scheduled.body.scheduled_at,
    });

    // Approved again by a person: back to scheduled at the same time, with the new text.
    await cliOk('post', 'approve', '--org', w.orgId, '--id', scheduled.body.id);
    const approved = await api<Post>('GET', `/v1/posts/${scheduled.body.id}`, { key: w.key });
    expect(approved.body).toMatchObject({ status: 'scheduled', scheduled_at: scheduled.body.scheduled_at });
    expect(approved.body.variants[0]?.body).toBe('changed after approval');

    // A draft stays a draft.
    const draft = await api<Post>('POST', '/v1/posts', {
      key: w.key,
      body: { variants: variants('d'), draft: true },
    });
    const draftEdited = await api<Post>('PUT', `/v1/posts/${draft.body.id}`, {
      key: w.key,
      body: { variants: variants('d2') },
    });
    expect(draftEdited.body.status).toBe('draft');
  });
});

describe('through MCP', () => {
  it('update_post with the ETag get_post gave (its _meta), then refused with that stale one', async () => {
    const { post } = await create({ variants: both('mcp first'), draft: true });
    const client = await mcpClient(ws.key, 'edit-e2e');
    const read = await client.callTool({ name: 'get_post', arguments: { id: post.id } });
    const etag = (read._meta as { etag?: string } | undefined)?.etag;
    expect(etag).toMatch(/^"\d+"$/);
    const ok = await client.callTool({
      name: 'update_post',
      arguments: { id: post.id, variants: both('mcp second'), if_match: etag },
    });
    expect(ok.isError, JSON.stringify(ok.content)).toBeFalsy();
    expect((ok._meta as { etag?: string }).etag).not.toBe(etag);
    const stale = await client.callTool({
      name: 'update_post',
      arguments: { id: post.id, variants: both('mcp third'), if_match: etag },
    });
    expect(stale.isError).toBe(true);
    expect((stale.structuredContent as { code: string }).code).toBe('precondition_failed');
    const now = await api<Post>('GET', `/v1/posts/${post.id}`, { key: ws.key });
    expect(now.body.variants.map((v) => v.body)).toEqual(['mcp second', 'mcp second']);
  });
});

describe('validatePost', () => {
  it('answers valid, errors and warnings, and writes nothing (usage moves by its own api_requests only)', async () => {
    const before = await usage();
    const ids = await listIds();
    const ok = await api<Validation>('POST', '/v1/posts/validate', {
      key: ws.key,
      body: { variants: both('fine'), scheduled_at: inDays(1) },
    });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toEqual({ valid: true, errors: [], warnings: [] });

    const bad = await api<Validation>('POST', '/v1/posts/validate', {
      key: ws.key,
      body: {
        variants: [
          { channel_id: ws.channels.bluesky, body: 'x'.repeat(301) },
          { channel_id: 'ch_01JD0000000000000000000000', body: 'nobody' },
        ],
        scheduled_at: new Date(Date.now() + 20_000).toISOString(),
      },
    });
    expect(bad.status).toBe(200);
    expect(bad.body.valid).toBe(false);
    expect(bad.body.errors).toEqual([
      expect.objectContaining({ pointer: '/variants/0/body', code: 'text_too_long' }),
      expect.objectContaining({ pointer: '/variants/1/channel_id', code: 'unknown_channel' }),
    ]);
    expect(bad.body.errors[0]?.detail).toEqual(expect.any(String));
    expect(bad.body.warnings).toEqual([
      expect.objectContaining({ pointer: '/scheduled_at', code: 'scheduled_soon' }),
    ]);

    const publishNow = await api<Validation>('POST', '/v1/posts/validate', {
      key: ws.key,
      body: { variants: both('now'), publish_now: true },
    });
    expect(publishNow.body.errors).toEqual([
      expect.objectContaining({ pointer: '/publish_now', code: 'dangerous_ops_disabled' }),
    ]);

    // A body that breaks the schema is refused as createPost refuses it.
    const broken = await api<Problem>('POST', '/v1/posts/validate', {
      key: ws.key,
      body: { variants: 'no' },
    });
    expect(broken.status).toBe(400);
    expect(broken.body.code).toBe('validation_failed');

    expect(await listIds()).toEqual(ids);
    const after = await usage();
    // Two lists, four validations, and this usage read itself.
    expect(after.api_requests).toBe((before.api_requests ?? 0) + 7);
    expect(after.posts_per_month).toBe(before.posts_per_month);
  });

  it('warns that the workspace requires approval', async () => {
    const w = await workspace(['mastodon']);
    await cliOk('settings', 'set', '--org', w.orgId, '--by', w.ownerId, '--approval-required', 'on');
    const res = await api<Validation>('POST', '/v1/posts/validate', {
      key: w.key,
      body: { variants: [{ channel_id: w.channels.mastodon, body: 'hi' }], scheduled_at: inDays(1) },
    });
    expect(res.body.valid).toBe(true);
    expect(res.body.warnings).toEqual([expect.objectContaining({ pointer: '', code: 'approval_required' })]);
  });
});

// ---- media checks ---------------------------------------------------------------------------------

/** A PNG of random pixels (incompressible): `width`×`height` RGB, stored without compression. */
function noisePng(width: number, height: number): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (b: Buffer) => {
    let c = 0xffffffff;
    for (const x of b) c = (crcTable[(c ^ x) & 0xff] as number) ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([len, body, sum]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y++) rows.push(Buffer.concat([Buffer.from([0]), randomBytes(width * 3)]));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.concat(rows), { level: 0 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A plain JPEG of the given size (ffmpeg's colour source). */
function jpeg(width: number, height: number): Buffer {
  const out = join(dir, `still-${width}x${height}.jpg`);
  execFileSync(ffmpegPath(), [
    '-v',
    'error',
    '-nostdin',
    '-y',
    '-f',
    'lavfi',
    '-i',
    `color=c=teal:s=${width}x${height}`,
    '-frames:v',
    '1',
    out,
  ]);
  return readFileSync(out);
}

const upload = (filename: string, contentType: string, bytes: Buffer): Promise<{ url: string }> =>
  uploadMedia(ws.key, bytes, filename, contentType);

describe('media checks from the probe', () => {
  it('refuses an image over Bluesky’s 1,000,000 bytes, at createPost, validatePost and updatePost', async () => {
    const big = noisePng(600, 600); // ≈ 1.08 MB
    expect(big.length).toBeGreaterThan(1_000_000);
    const asset = await upload('big.png', 'image/png', big);
    const variants = [
      { channel_id: ws.channels.bluesky, body: 'big', media: [{ url: asset.url, type: 'image' }] },
    ];
    const expected = { pointer: '/variants/0/media/0', code: 'media_too_large' };

    const created = await api<Problem>('POST', '/v1/posts', {
      key: ws.key,
      body: { variants, scheduled_at: inDays(1) },
    });
    expect(created.status).toBe(400);
    expect(created.body.errors).toEqual([expect.objectContaining(expected)]);
    const checked = await api<Validation>('POST', '/v1/posts/validate', {
      key: ws.key,
      body: { variants, scheduled_at: inDays(1) },
    });
    expect(checked.body.errors).toEqual([expect.objectContaining(expected)]);
    const { post } = await create({
      variants: [{ channel_id: ws.channels.bluesky, body: 'small' }],
      draft: true,
    });
    const updated = await put(post.id, { variants });
    expect(updated.status).toBe(400);
    expect(updated.body.errors).toEqual([expect.objectContaining(expected)]);

    // Mastodon's default limit is 16 MB: the same image is fine there.
    const mastodon = await api<Validation>('POST', '/v1/posts/validate', {
      key: ws.key,
      body: {
        variants: [
          { channel_id: ws.channels.mastodon, body: 'big', media: [{ url: asset.url, type: 'image' }] },
        ],
        draft: true,
      },
    });
    expect(mastodon.body).toMatchObject({ valid: true, errors: [] });
  });

  it('refuses an Instagram image outside 4:5 to 1.91:1, and takes one inside', async () => {
    const wide = await upload('wide.jpg', 'image/jpeg', jpeg(600, 200));
    const square = await upload('square.jpg', 'image/jpeg', jpeg(400, 400));
    const variant = (url: string) => ({
      channel_id: ws.channels.instagram,
      body: 'ig',
      media: [{ url, type: 'image' }],
    });
    const refused = await api<Problem>('POST', '/v1/posts', {
      key: ws.key,
      body: { variants: [variant(wide.url)], scheduled_at: inDays(1) },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([
      expect.objectContaining({ pointer: '/variants/0/media/0', code: 'unsupported_aspect_ratio' }),
    ]);
    const accepted = await api<Post>('POST', '/v1/posts', {
      key: ws.key,
      body: { variants: [variant(square.url)], scheduled_at: inDays(1) },
    });
    expect(accepted.status, accepted.text).toBe(201);
  });
});
