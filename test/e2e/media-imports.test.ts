import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSamples, type Samples } from '../support/media-samples.ts';
import { api, dangerous, inDays, loopbackOrigin, type Workspace, workspace } from './helpers.ts';

// Media from a URL over the local stack: importMedia fetching from a server this test starts on
// loopback (allowed by the stack's HERALD_WEBHOOK_ALLOW_CIDRS=127.0.0.0/8, as the webhook receivers
// are), probed like an upload; the refusals; getMedia and deleteMedia with their 404s and 409.

type Json = Record<string, unknown>;
interface Asset {
  id: string;
  status: string;
  kind: string;
  url: string;
  filename: string;
  content_type: string;
  size_bytes: number;
  width: number | null;
  height: number | null;
  duration_sec: number | null;
  poster_url: string | null;
  source_url: string | null;
  error: string | null;
}
interface Problem {
  code: string;
  errors?: Array<{ pointer: string; code: string; message: string }>;
}

let samples: Samples;
let ws: Workspace;
let other: Workspace;
let origin: string;
const hits = new Map<string, number>();

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  samples = await makeSamples(mkdtempSync(join(tmpdir(), 'herald-imports-e2e-')));
  [ws, other] = await Promise.all([workspace(['bluesky']), workspace([])]);
  const png = readFileSync(samples.files.png.path);
  const mp4 = readFileSync(samples.files.mp4.path);
  origin = await loopbackOrigin((req, res) => {
    const path = req.url ?? '/';
    const n = (hits.get(path) ?? 0) + 1;
    hits.set(path, n);
    if (path === '/photo') {
      // A misleading type: the bytes decide.
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': png.length });
      return res.end(png);
    }
    if (path === '/page.png') {
      res.writeHead(200, { 'content-type': 'image/png' });
      return res.end('<!doctype html><html><body>A gallery</body></html>');
    }
    if (path === '/to-metadata') {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/iam/' });
      return res.end();
    }
    if (path === '/huge.mp4') {
      res.writeHead(200, { 'content-length': String(2 * 1024 ** 3) });
      return res.write(mp4.subarray(0, 4096));
    }
    if (path === '/hang') return; // accepts, never answers
    if (path === '/slow.mp4') {
      res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': mp4.length });
      if (n > 1) return res.end(mp4);
      // The first request (importMedia's own) gets the head, then nothing for 12 s: past its 10 s.
      res.write(mp4.subarray(0, 8192));
      const t = setTimeout(() => res.end(mp4.subarray(8192)), 12_000);
      res.on('close', () => clearTimeout(t));
      return;
    }
    res.writeHead(404);
    res.end();
  });
}, 120_000);

afterAll(async () => {
  rmSync(samples.dir, { recursive: true, force: true });
});

const importUrl = (url: string, extra: Json = {}, key = ws.key) =>
  api<Asset & Problem>('POST', '/v1/media/imports', { key, body: { url, ...extra } });

const mediaCount = async (w: Workspace) =>
  ((await api<{ data: unknown[] }>('GET', '/v1/media?limit=100', { key: w.key })).body.data ?? []).length;

async function waitForAsset(id: string, timeoutMs: number): Promise<Asset> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const res = await api<Asset>('GET', `/v1/media/${id}`, { key: ws.key });
    expect(res.status, res.text).toBe(200);
    if (res.body.status !== 'pending' || Date.now() > end) return res.body;
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe('importMedia', () => {
  it('imports an image: 201 ready, probed, typed by its bytes, served byte for byte', async () => {
    const res = await importUrl(`${origin}/photo`);
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      status: 'ready',
      kind: 'image',
      content_type: 'image/png',
      filename: 'photo.png',
      width: samples.files.png.width,
      height: samples.files.png.height,
      source_url: `${origin}/photo`,
      error: null,
    });
    const served = await fetch(res.body.url);
    expect(served.status).toBe(200);
    expect(sha(new Uint8Array(await served.arrayBuffer()))).toBe(sha(readFileSync(samples.files.png.path)));
    const got = await api<Asset>('GET', `/v1/media/${res.body.id}`, { key: ws.key });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('answers 202 for a video it cannot finish in 10 s; the worker makes it ready', async () => {
    const started = Date.now();
    const res = await importUrl(`${origin}/slow.mp4`, { filename: 'clip.mp4' });
    expect(res.status, res.text).toBe(202);
    expect(Date.now() - started).toBeGreaterThanOrEqual(9_500);
    expect(res.body).toMatchObject({
      status: 'pending',
      kind: 'video',
      content_type: 'video/mp4',
      error: null,
    });
    const ready = await waitForAsset(res.body.id, 60_000);
    expect(ready).toMatchObject({
      status: 'ready',
      width: samples.files.mp4.width,
      height: samples.files.mp4.height,
      filename: 'clip.mp4',
    });
    expect(ready.duration_sec).toBeGreaterThan(0);
    expect(ready.poster_url).toMatch(/_poster\.jpg$/);
    expect(hits.get('/slow.mp4')).toBeGreaterThanOrEqual(2);
  }, 90_000);

  const refusals: Array<[name: string, url: () => string, code: string]> = [
    ['an HTML page', () => `${origin}/page.png`, 'unsupported_media_type'],
    ['a redirect to the metadata address', () => `${origin}/to-metadata`, 'address_not_allowed'],
    ['a private address', () => 'http://10.20.30.40/cat.png', 'address_not_allowed'],
    ['a 2 GB file', () => `${origin}/huge.mp4`, 'media_too_large'],
    [
      'credentials in the URL',
      () => `http://user:secret@127.0.0.1:${new URL(origin).port}/photo`,
      'credentials_not_allowed',
    ],
    ['a non-URL', () => 'just some words', 'invalid_url'],
  ];
  it.each(refusals)('refuses %s with a 400 and stores nothing', async (_name, url, code) => {
    const before = await mediaCount(ws);
    const res = await importUrl(url());
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors).toEqual([expect.objectContaining({ pointer: '/url', code })]);
    expect(res.body.errors?.[0]?.message.length).toBeGreaterThan(20);
    expect(await mediaCount(ws)).toBe(before);
  });

  it('refuses a URL that never answers with fetch_timeout, within the request', async () => {
    const started = Date.now();
    const res = await importUrl(`${origin}/hang`);
    expect(res.status, res.text).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ pointer: '/url', code: 'fetch_timeout' })]);
    expect(Date.now() - started).toBeLessThan(10_500);
  }, 30_000);

  it('refuses a filename whose extension is not the type', async () => {
    const res = await importUrl(`${origin}/photo`, { filename: 'photo.gif' });
    expect(res.status, res.text).toBe(400);
    expect(res.body.errors).toEqual([
      expect.objectContaining({ pointer: '/filename', code: 'extension_mismatch' }),
    ]);
  });
});

describe('getMedia and deleteMedia', () => {
  it("answers 404 for another organization's asset, on read and delete", async () => {
    const imported = await importUrl(`${origin}/photo`);
    expect(imported.status).toBe(201);
    const read = await api<Problem>('GET', `/v1/media/${imported.body.id}`, { key: other.key });
    expect(read.status).toBe(404);
    expect(read.body.code).toBe('resource_not_found');
    const del = await api<Problem>('DELETE', `/v1/media/${imported.body.id}`, { key: other.key });
    expect(del.status).toBe(404);
    expect((await api('GET', `/v1/media/${imported.body.id}`, { key: ws.key })).status).toBe(200);
    expect((await api('GET', '/v1/media/med_nope', { key: ws.key })).status).toBe(404);
  });

  it('refuses 409 while a scheduled post uses the asset; then deletes it and its file (204, then 404)', async () => {
    const imported = await importUrl(`${origin}/photo`);
    expect(imported.status).toBe(201);
    const asset = imported.body;
    const post = await api<{ id: string }>('POST', '/v1/posts', {
      key: ws.key,
      body: {
        scheduled_at: inDays(3),
        variants: [
          {
            channel_id: ws.channels.bluesky,
            body: 'With a picture',
            media: [{ url: asset.url, type: 'image' }],
          },
        ],
      },
    });
    expect(post.status, post.text).toBe(201);

    const refused = await api<Problem>('DELETE', `/v1/media/${asset.id}`, { key: ws.key });
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body.code).toBe('resource_conflict');
    expect((await fetch(asset.url)).status).toBe(200);

    await dangerous(ws, true);
    expect((await api('DELETE', `/v1/posts/${post.body.id}`, { key: ws.key })).status).toBe(200);
    const deleted = await api('DELETE', `/v1/media/${asset.id}`, { key: ws.key });
    expect(deleted.status, deleted.text).toBe(204);
    expect(deleted.text).toBe('');
    expect((await api('GET', `/v1/media/${asset.id}`, { key: ws.key })).status).toBe(404);
    expect((await api('DELETE', `/v1/media/${asset.id}`, { key: ws.key })).status).toBe(404);
    expect([403, 404]).toContain((await fetch(asset.url)).status);
  });
});
