import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { LocalStackInfo } from '../../bin/local/stack-file.ts';
import { makeLargeMp4, makeSamples, type SampleName, type Samples } from '../support/media-samples.ts';
import { api, dangerous, fakeState, type Workspace, waitForPost, workspace } from './helpers.ts';

// Media over the local stack: create → PUT (through the local front door, which checks the ticket
// like S3 checks a presigned URL) → complete (the real probe with ffprobe/ffmpeg) → ready, and a post
// whose image reaches the platform fakes byte for byte.

type Json = Record<string, unknown>;
interface Ticket {
  asset_id: string;
  upload_url: string;
  method: string;
  expires_at: string;
}
interface Asset {
  id: string;
  status: string;
  kind: string;
  url: string;
  size_bytes: number;
  width: number | null;
  height: number | null;
  duration_sec: number | null;
  poster_url: string | null;
  content_type: string;
}

let samples: Samples;
let ws: Workspace;

beforeAll(async () => {
  samples = await makeSamples(mkdtempSync(join(tmpdir(), 'herald-media-e2e-')));
  ws = await workspace(['bluesky', 'mastodon']);
}, 90_000);
afterAll(() => rmSync(samples.dir, { recursive: true, force: true }));

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

async function ticket(filename: string, contentType: string, size?: number) {
  const res = await api<Ticket>('POST', '/v1/media/uploads', {
    key: ws.key,
    body: { filename, content_type: contentType, ...(size !== undefined ? { size_bytes: size } : {}) },
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

const put = (t: Ticket, bytes: Uint8Array, contentType: string) =>
  fetch(t.upload_url, { method: 'PUT', body: bytes, headers: { 'content-type': contentType } });

const complete = (id: string) => api<Asset>('POST', `/v1/media/uploads/${id}/complete`, { key: ws.key });

async function upload(name: SampleName): Promise<{ asset: Asset; bytes: Buffer }> {
  const sample = samples.files[name];
  const bytes = readFileSync(sample.path);
  const t = await ticket(`sample.${sample.path.split('.').pop()}`, sample.contentType, bytes.length);
  expect(t.method).toBe('PUT');
  expect(Date.parse(t.expires_at) - Date.now()).toBeGreaterThan(14 * 60_000);
  const stored = await put(t, bytes, sample.contentType);
  expect(stored.status, await stored.text()).toBe(200);
  const res = await complete(t.asset_id);
  expect(res.status, res.text).toBe(200);
  return { asset: res.body, bytes };
}

describe('media uploads', () => {
  it.each(['png', 'jpeg', 'gif', 'webp', 'mp4', 'mp3'] as const)(
    '%s: create → PUT → complete → ready with its metadata',
    async (name) => {
      const sample = samples.files[name];
      const { asset, bytes } = await upload(name);
      expect(asset).toMatchObject({
        status: 'ready',
        content_type: sample.contentType,
        size_bytes: bytes.length,
      });
      expect(asset.width).toBe(sample.width);
      expect(asset.height).toBe(sample.height);
      if (sample.durationSec === null) expect(asset.duration_sec).toBeNull();
      else expect(asset.duration_sec).toBeCloseTo(sample.durationSec, 0);
      // The url serves the very bytes.
      const served = await fetch(asset.url);
      expect(served.status).toBe(200);
      expect(served.headers.get('content-type')).toBe(sample.contentType);
      expect(sha(new Uint8Array(await served.arrayBuffer()))).toBe(sha(bytes));
      if (name === 'mp4') {
        expect(asset.poster_url).toMatch(/^http/);
        const poster = await fetch(asset.poster_url as string);
        expect(poster.status).toBe(200);
        expect(poster.headers.get('content-type')).toBe('image/jpeg');
        const jpeg = new Uint8Array(await poster.arrayBuffer());
        expect([...jpeg.subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
      } else {
        expect(asset.poster_url).toBeNull();
      }
      // Completing again is a no-op.
      const again = await complete(asset.id);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(asset);
    },
  );

  it('probes a ~10 MB video (timing printed for BENCHMARKS.md)', async () => {
    const large = await makeLargeMp4(samples.dir);
    const bytes = readFileSync(large.path);
    const t = await ticket('large.mp4', 'video/mp4', bytes.length);
    expect((await put(t, bytes, 'video/mp4')).status).toBe(200);
    const started = performance.now();
    const res = await complete(t.asset_id);
    const ms = performance.now() - started;
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'ready', width: 640, height: 360 });
    expect(res.body.poster_url).not.toBeNull();
    console.log(`completeMediaUpload of a ${(bytes.length / 1e6).toFixed(1)} MB MP4: ${ms.toFixed(0)} ms`);
  }, 90_000);

  it('refuses a PNG sent as image/jpeg; the asset stays pending', async () => {
    const bytes = readFileSync(samples.files.png.path);
    const t = await ticket('photo.jpg', 'image/jpeg');
    expect((await put(t, bytes, 'image/jpeg')).status).toBe(200);
    const res = await complete(t.asset_id);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'validation_failed' });
    expect(((res.body as unknown as Json).errors as Json[])[0]).toMatchObject({
      pointer: '/content_type',
      code: 'content_mismatch',
    });
    const list = await api<{ data: Asset[] }>('GET', '/v1/media?limit=100', { key: ws.key });
    expect(list.body.data.find((a) => a.id === t.asset_id)?.status).toBe('pending');
  });

  it('answers 409 before the bytes arrived, and the front door refuses another key or type', async () => {
    const bytes = readFileSync(samples.files.png.path);
    const t = await ticket('a.png', 'image/png');
    expect((await complete(t.asset_id)).status).toBe(409);
    // Another Content-Type than the ticket's.
    expect((await put(t, bytes, 'image/gif')).status).toBe(403);
    // Another key with the same signature.
    const other = t.upload_url.replace('/a.png?', '/b.png?');
    expect(
      (await fetch(other, { method: 'PUT', body: bytes, headers: { 'content-type': 'image/png' } })).status,
    ).toBe(403);
    // A tampered signature.
    const forged = t.upload_url.replace(/X-Amz-Signature=[0-9a-f]{4}/, 'X-Amz-Signature=0000');
    expect(
      (await fetch(forged, { method: 'PUT', body: bytes, headers: { 'content-type': 'image/png' } })).status,
    ).toBe(403);
  });

  it('refuses an expired ticket: the PUT (403) and the complete (409)', async () => {
    const bytes = readFileSync(samples.files.png.path);
    const t = await ticket('late.png', 'image/png');
    expect((await put(t, bytes, 'image/png')).status).toBe(200);
    // Let the ticket's 15 minutes pass: move its expiry into the past in the local table.
    const info = JSON.parse(readFileSync(join(inject('dataDir'), 'stack.json'), 'utf8')) as LocalStackInfo;
    const ddb = new DynamoDBClient({
      endpoint: info.dynamodbEndpoint,
      region: 'us-east-1',
      credentials: info.dynamodbCredentials,
    });
    await ddb.send(
      new UpdateItemCommand({
        TableName: info.tableName,
        Key: { pk: { S: `ORG#${ws.orgId}` }, sk: { S: `MEDIA#${t.asset_id}` } },
        UpdateExpression: 'SET expires_at = :past',
        ExpressionAttributeValues: { ':past': { S: new Date(Date.now() - 1000).toISOString() } },
      }),
    );
    ddb.destroy();
    expect((await put(t, bytes, 'image/png')).status).toBe(403);
    const res = await complete(t.asset_id);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'resource_conflict' });
  });

  it('validates the upload request', async () => {
    const bad = await api('POST', '/v1/media/uploads', {
      key: ws.key,
      body: { filename: 'x.png', content_type: 'image/tiff' },
    });
    expect(bad.status).toBe(400);
    const ext = await api('POST', '/v1/media/uploads', {
      key: ws.key,
      body: { filename: 'x.gif', content_type: 'image/png' },
    });
    expect(ext.status).toBe(400);
    const big = await api('POST', '/v1/media/uploads', {
      key: ws.key,
      body: { filename: 'x.png', content_type: 'image/png', size_bytes: 21 * 1024 * 1024 },
    });
    expect(big.status).toBe(400);
    expect((await complete('med_01JD0000000000000000000000')).status).toBe(404);
  });

  it('lists media newest first with cursors', async () => {
    const first = await api<{ data: Asset[]; has_more: boolean; next_cursor: string | null }>(
      'GET',
      '/v1/media?limit=2',
      { key: ws.key },
    );
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(2);
    expect(first.body.has_more).toBe(true);
    const ids = first.body.data.map((a) => a.id);
    expect([...ids].sort().reverse()).toEqual(ids);
    const next = await api<{ data: Asset[] }>(
      'GET',
      `/v1/media?limit=2&after=${encodeURIComponent(first.body.next_cursor ?? '')}`,
      { key: ws.key },
    );
    expect(next.status).toBe(200);
    expect((next.body.data[0]?.id ?? '') < (ids[1] ?? '')).toBe(true);
  });

  it('a post with an image reaches Bluesky and Mastodon with the identical bytes', async () => {
    const { asset, bytes } = await upload('png');
    await dangerous(ws, true);
    const media = [{ url: asset.url, type: 'image', alt: 'a test pattern' }];
    const created = await api<{ id: string; status: string }>('POST', '/v1/posts', {
      key: ws.key,
      body: {
        variants: [
          { channel_id: ws.channels.bluesky, body: 'media e2e bluesky', media },
          { channel_id: ws.channels.mastodon, body: 'media e2e mastodon', media },
        ],
        publish_now: true,
      },
    });
    expect(created.status, created.text).toBe(201);
    await waitForPost(ws.key, created.body.id, (p) => p.status === 'published' || p.status === 'failed');
    const post = await waitForPost<{ status: string }>(
      ws.key,
      created.body.id,
      (p) => p.status !== 'publishing',
    );
    expect(post.status).toBe('published');
    const bsky = await fakeState('bluesky');
    const bPost = (bsky.posts ?? []).find((p) => p.text === 'media e2e bluesky') as
      | { media: Array<{ bytes: string; mimeType: string }> }
      | undefined;
    expect(bPost?.media).toHaveLength(1);
    expect(sha(Buffer.from(bPost?.media[0]?.bytes ?? '', 'base64'))).toBe(sha(bytes));
    const masto = await fakeState('mastodon');
    const mPost = (masto.posts ?? []).find((p) => p.text === 'media e2e mastodon') as
      | { media: Array<{ bytes: string }> }
      | undefined;
    expect(mPost?.media).toHaveLength(1);
    expect(sha(Buffer.from(mPost?.media[0]?.bytes ?? '', 'base64'))).toBe(sha(bytes));
  });
});
