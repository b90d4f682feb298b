import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectorFor } from '#adapters/platforms/index';
import { polling } from '#adapters/platforms/tiktok/publish';
import type { MediaInput, PublishContext } from '#adapters/platforms/types';
import type { Platform } from '#core/platforms';
import { createFake as bluesky } from '../../../fakes/bluesky.ts';
import { createFake as linkedin } from '../../../fakes/linkedin.ts';
import { createFake as mastodon } from '../../../fakes/mastodon.ts';
import { createFake as pinterest, DEFAULT_BOARD } from '../../../fakes/pinterest.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { createFake as tiktok } from '../../../fakes/tiktok.ts';
import { createFake as x, type FakeX } from '../../../fakes/x.ts';
import { createFake as youtube, type YouTubeFake } from '../../../fakes/youtube.ts';
import { patternBytes, publishFixture, streamedMedia } from './context.ts';

// Videos go to the platforms a chunk at a time (ranged reads of the media object) or as one streamed
// request body, never read whole: a worker's memory per delivery is one chunk whatever the file's size.
// Each test's media input fails a whole read and records the ranges it was asked for.

const MiB = 1024 * 1024;
let fakes: FakePlatforms;
const savedPolling = { ...polling };

beforeAll(async () => {
  fakes = await new FakePlatforms([youtube(), x(), tiktok(), linkedin(), mastodon(), pinterest(), bluesky()]).start();
  for (const p of ['youtube', 'x', 'tiktok', 'linkedin', 'pinterest'])
    process.env[`HERALD_PLATFORM_${p.toUpperCase()}_URL`] = fakes.url(p);
  polling.delaysMs = [0, 5];
  polling.budgetMs = 2_000;
});

afterAll(async () => {
  Object.assign(polling, savedPolling);
  for (const p of ['youtube', 'x', 'tiktok', 'linkedin', 'pinterest'])
    delete process.env[`HERALD_PLATFORM_${p.toUpperCase()}_URL`];
  await fakes.stop();
});

beforeEach(() => fakes.reset());

const CREDS: Record<string, () => Record<string, unknown>> = {
  youtube: () => ({ access_token: 'token', refresh_token: 'refresh', account_id: 'UCherald' }),
  x: () => ({ access_token: 'token', account_id: '1500000000000000001' }),
  tiktok: () => ({ access_token: 'token', refresh_token: 'refresh', account_id: 'open-id-1' }),
  linkedin: () => ({ access_token: 'token', account_id: 'urn:li:person:8675309' }),
  mastodon: () => ({ instance: fakes.url('mastodon'), access_token: 'token' }),
  pinterest: () => ({ access_token: 'token', refresh_token: 'refresh', account_id: DEFAULT_BOARD }),
  bluesky: () => ({ service: fakes.url('bluesky'), identifier: 'acme.bsky.social', app_password: 'app-password' }),
};

function ctxOf(platform: Platform, media: MediaInput, over: Partial<PublishContext> = {}) {
  return publishFixture({
    channel: { id: 'ch_1', handle: platform === 'bluesky' ? 'acme.bsky.social' : 'acme', platform },
    credentials: CREDS[platform]?.() ?? {},
    text: 'Launch day',
    media: [media],
    idempotencyKey: `post_1.${platform}`,
    ...over,
  });
}

const video = (size: number, seed = 5) => {
  const bytes = patternBytes(size, seed, 13);
  return { bytes, ...streamedMedia(bytes, 'video', 'video/mp4', { filename: 'launch.mp4' }) };
};

/** The ranges cover the file from byte 0 in order, one at a time, none longer than `chunk`. */
function expectChunked(reads: ReturnType<typeof video>['reads'], size: number, chunk: number) {
  expect(reads.whole).toBe(0);
  expect(reads.maxInFlight).toBe(1);
  let next = 0;
  for (const [start, end] of reads.ranges) {
    expect(start).toBe(next);
    expect(end - start).toBeLessThanOrEqual(chunk);
    next = end;
  }
  expect(next).toBe(size);
}

describe('chunked uploads read one chunk at a time', () => {
  it('youtube: 8 MiB Content-Range PUTs from ranged reads; the video holds every byte in order', async () => {
    const size = 8 * MiB + 300_000;
    const { bytes, input, reads } = video(size);
    await (await connectorFor('youtube')).publish(ctxOf('youtube', input));
    expectChunked(reads, size, 8 * MiB);
    expect(reads.ranges).toHaveLength(2);
    const v = fakes.fake<YouTubeFake>('youtube').videos[0];
    expect(v?.chunks).toEqual([`bytes 0-${8 * MiB - 1}/${size}`, `bytes ${8 * MiB}-${size - 1}/${size}`]);
    expect(v?.bytes.equals(Buffer.from(bytes))).toBe(true);
  });

  it('x: 4 MiB APPEND segments from ranged reads; FINALIZE finds every byte', async () => {
    const size = 9 * MiB;
    const { bytes, input, reads } = video(size);
    await (await connectorFor('x')).publish(ctxOf('x', input));
    expectChunked(reads, size, 4 * MiB);
    expect(reads.ranges).toHaveLength(3);
    const [media] = [...fakes.fake<FakeX>('x').media.values()];
    expect(media?.bytes.equals(Buffer.from(bytes))).toBe(true);
  });

  it('tiktok: FILE_UPLOAD chunks from ranged reads', async () => {
    const size = 3000;
    const { bytes, input, reads } = video(size);
    await (await connectorFor('tiktok')).publish(ctxOf('tiktok', input));
    expectChunked(reads, size, 20 * MiB);
    const put = fakes.requests('tiktok').find((r) => r.method === 'PUT');
    expect(put?.body.equals(Buffer.from(bytes))).toBe(true);
  });

  it("linkedin: each of initializeUpload's parts from its own ranged read", async () => {
    const size = 5 * MiB;
    const { bytes, input, reads } = video(size);
    await (await connectorFor('linkedin')).publish(ctxOf('linkedin', input));
    expectChunked(reads, size, 4 * MiB);
    expect(reads.ranges).toEqual([
      [0, 4 * MiB],
      [4 * MiB, size],
    ]);
    const parts = fakes.requests('linkedin').filter((r) => r.method === 'PUT');
    expect(Buffer.concat(parts.map((p) => p.body)).equals(Buffer.from(bytes))).toBe(true);
  });
});

describe('single-body uploads stream the file', () => {
  const cases: Array<[Platform, (r: { method: string; path: string }) => boolean]> = [
    ['mastodon', (r) => r.method === 'POST' && r.path === '/api/v2/media'],
    ['pinterest', (r) => r.method === 'POST' && r.path === '/s3-upload/'],
    ['bluesky', (r) => r.method === 'POST' && r.path.endsWith('com.atproto.repo.uploadBlob')],
  ];
  for (const [platform, isUpload] of cases) {
    it(`${platform}: one streamed request body with its length, never a whole read`, async () => {
      const size = 300_000;
      const { bytes, input, reads } = video(size);
      await (await connectorFor(platform)).publish(ctxOf(platform, input));
      expect(reads.whole).toBe(0);
      expect(reads.streams).toBe(1);
      const upload = fakes.requests(platform).find(isUpload);
      expect(upload?.body.includes(Buffer.from(bytes))).toBe(true);
      expect(Number(upload?.headers['content-length'])).toBe(upload?.body.length);
    });
  }
});
