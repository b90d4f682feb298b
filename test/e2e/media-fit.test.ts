import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffmpegPath } from '#adapters/media-tools';
import { imageDimensions } from '#core/media-probe';
import { api, dangerous, fakeState, uploadMedia, type Workspace, waitForPost, workspace } from './helpers.ts';

// media_fit over the local stack: createPost takes an image Bluesky would refuse only under
// `media_fit: "auto"`; the delivery worker has the fit function (the real ffmpeg, through the
// Lambda stand-in) make a rendition within Bluesky's 1,000,000 bytes, publishes that, and says so
// in the delivery's warnings; an image that does not decode fails the delivery with nothing posted.

interface Asset {
  id: string;
  url: string;
  size_bytes: number;
}
interface Delivery {
  stage: string;
  error: string | null;
  warnings?: { code: string; detail: string }[];
}
interface Post {
  id: string;
  status: string;
  deliveries: Record<string, Delivery> | Delivery[];
}

let ws: Workspace;
let dir: string;
let big: Buffer;
let corrupt: Buffer;

function noisyJpeg(out: string, w: number, h: number): Buffer {
  execFileSync(
    ffmpegPath(),
    [
      ...[
        '-v',
        'error',
        '-nostdin',
        '-y',
        '-f',
        'lavfi',
        '-i',
        `testsrc=size=${w}x${h}:rate=1,noise=alls=40:allf=t`,
      ],
      ...['-frames:v', '1', '-q:v', '2', out],
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return readFileSync(out);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'herald-fit-e2e-'));
  big = noisyJpeg(join(dir, 'big.jpg'), 1600, 1200);
  // A real header (its sides read at upload), then bytes no decoder makes a picture of; over 1 MB
  // so Bluesky needs a rendition.
  const head = noisyJpeg(join(dir, 'head.jpg'), 1200, 900).subarray(0, 1000);
  corrupt = Buffer.concat([head, Buffer.from(Array.from({ length: 1_200_000 }, (_, i) => (i * 7919) % 251))]);
  writeFileSync(join(dir, 'corrupt.jpg'), corrupt);
  ws = await workspace(['bluesky']);
  await dangerous(ws, true);
}, 90_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const upload = (bytes: Buffer, filename: string): Promise<Asset> =>
  uploadMedia<Asset>(ws.key, bytes, filename, 'image/jpeg');

const variant = (asset: Asset, body: string, fit?: 'auto') => ({
  channel_id: ws.channels.bluesky,
  body,
  media: [{ url: asset.url, type: 'image', alt: 'noise' }],
  ...(fit ? { options: { media_fit: fit } } : {}),
});

const deliveryOf = (post: Post): Delivery | undefined =>
  Array.isArray(post.deliveries)
    ? post.deliveries[0]
    : (post.deliveries[ws.channels.bluesky as string] ?? Object.values(post.deliveries)[0]);

describe('media_fit auto (Bluesky images ≤ 1,000,000 bytes)', () => {
  it('without media_fit, a 1.5 MB image is refused at createPost (media_too_large) and nothing is written', async () => {
    expect(big.length).toBeGreaterThan(1_500_000);
    const asset = await upload(big, 'big.jpg');
    const res = await api<{ errors: { pointer: string; code: string }[] }>('POST', '/v1/posts', {
      key: ws.key,
      body: { variants: [variant(asset, 'fit e2e refused')], publish_now: true },
    });
    expect(res.status, res.text).toBe(400);
    expect(res.body.errors).toContainEqual(
      expect.objectContaining({ pointer: '/variants/0/media/0', code: 'media_too_large' }),
    );
    // validatePost says the same, and that media_fit auto would take it.
    const check = await api<{ valid: boolean; errors: { code: string }[] }>('POST', '/v1/posts/validate', {
      key: ws.key,
      body: { variants: [variant(asset, 'fit e2e check', 'auto')], publish_now: true },
    });
    expect(check.status, check.text).toBe(200);
    expect(check.body).toMatchObject({ valid: true, errors: [] });
  });

  it('with media_fit auto, it publishes a ≤ 1,000,000-byte JPEG of it and the delivery warns media_fitted', async () => {
    const asset = await upload(big, 'big2.jpg');
    const created = await api<Post>('POST', '/v1/posts', {
      key: ws.key,
      body: { variants: [variant(asset, 'fit e2e fitted', 'auto')], publish_now: true },
    });
    expect(created.status, created.text).toBe(201);
    const post = await waitForPost<Post>(ws.key, created.body.id, (p) => p.status !== 'publishing', 60_000);
    expect(post.status, JSON.stringify(post.deliveries)).toBe('published');
    const d = deliveryOf(post);
    expect(d?.warnings).toContainEqual(
      expect.objectContaining({ code: 'media_fitted', detail: expect.stringContaining('JPEG') }),
    );
    const bsky = await fakeState('bluesky');
    const sent = (bsky.posts ?? []).find((p) => p.text === 'fit e2e fitted') as
      | { media: Array<{ bytes: string; mimeType: string }> }
      | undefined;
    expect(sent?.media).toHaveLength(1);
    const bytes = Buffer.from(sent?.media[0]?.bytes ?? '', 'base64');
    expect(bytes.length).toBeGreaterThan(10_000);
    expect(bytes.length).toBeLessThanOrEqual(1_000_000);
    expect(sent?.media[0]?.mimeType).toBe('image/jpeg');
    // A picture still (decodable, same shape or scaled), not the original.
    const dims = imageDimensions(new Uint8Array(bytes));
    expect(dims && dims.width / dims.height).toBeCloseTo(1600 / 1200, 2);
    // The original is unchanged.
    const original = await fetch(asset.url);
    expect(Buffer.from(await original.arrayBuffer()).equals(big)).toBe(true);
  });

  it('an image that does not decode: the delivery fails with the reason, nothing posted', async () => {
    const asset = await upload(corrupt, 'corrupt.jpg');
    const created = await api<Post>('POST', '/v1/posts', {
      key: ws.key,
      body: { variants: [variant(asset, 'fit e2e corrupt', 'auto')], publish_now: true },
    });
    expect(created.status, created.text).toBe(201);
    const post = await waitForPost<Post>(ws.key, created.body.id, (p) => p.status !== 'publishing', 60_000);
    expect(post.status).toBe('failed');
    expect(deliveryOf(post)).toMatchObject({
      stage: 'failed',
      error: expect.stringContaining('could not be decoded'),
    });
    const bsky = await fakeState('bluesky');
    expect((bsky.posts ?? []).find((p) => p.text === 'fit e2e corrupt')).toBeUndefined();
  });
});
