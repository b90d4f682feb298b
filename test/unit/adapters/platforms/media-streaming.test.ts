import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectorFor } from '#adapters/platforms/index';
import { polling } from '#adapters/platforms/tiktok/publish';
import type { MediaInput, PublishContext } from '#adapters/platforms/types';
import { uploadBudget } from '#adapters/platforms/upload';
import { processing } from '#adapters/platforms/x/upload';
import type { Platform } from '#core/platforms';
import { createFake as bluesky } from '../../../fakes/bluesky.ts';
import { createFake as linkedin } from '../../../fakes/linkedin.ts';
import { createFake as mastodon } from '../../../fakes/mastodon.ts';
import { DEFAULT_BOARD, createFake as pinterest } from '../../../fakes/pinterest.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { createFake as tiktok } from '../../../fakes/tiktok.ts';
import { type FakeX, createFake as x } from '../../../fakes/x.ts';
import { type YouTubeFake, createFake as youtube } from '../../../fakes/youtube.ts';
import { failure, patternBytes, publishFixture, streamedMedia } from './context.ts';

// Videos go to the platforms a chunk at a time (ranged reads of the media object) or as one streamed
// request body, never read whole: a worker's memory per delivery is one chunk whatever the file's size.
// Each test's media input fails a whole read and records the ranges it was asked for.

const MiB = 1024 * 1024;
let fakes: FakePlatforms;
const savedPolling = { ...polling };

beforeAll(async () => {
  fakes = await new FakePlatforms([
    youtube(),
    x(),
    tiktok(),
    linkedin(),
    mastodon(),
    pinterest(),
    bluesky(),
  ]).start();
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
  bluesky: () => ({
    service: fakes.url('bluesky'),
    identifier: 'acme.bsky.social',
    app_password: 'app-password',
  }),
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

describe('an attempt out of time stops between chunks; the next continues where it stopped', () => {
  const saved = uploadBudget.ms;
  afterEach(() => {
    uploadBudget.ms = saved;
  });

  it('youtube: the next attempt resumes the session from the offset YouTube reports', async () => {
    const size = 8 * MiB + 300_000;
    const { bytes, input, reads } = video(size);
    const f = ctxOf('youtube', input);
    uploadBudget.ms = 0;
    const stop = await failure((await connectorFor('youtube')).publish(f));
    expect(stop).toMatchObject({ category: 'system', retryable: true });
    expect(reads.ranges).toEqual([[0, 8 * MiB]]);
    uploadBudget.ms = saved;
    const res = await (await connectorFor('youtube')).publish(f);
    expect(reads.ranges).toEqual([
      [0, 8 * MiB],
      [8 * MiB, size],
    ]);
    const yt = fakes.fake<YouTubeFake>('youtube');
    expect(yt.videos).toHaveLength(1);
    expect(res.externalId).toBe(yt.videos[0]?.id);
    expect(yt.videos[0]?.bytes.equals(Buffer.from(bytes))).toBe(true);
  });

  it('x: the media id and the segments sent are the checkpoint; the next attempt appends the rest, no second INIT', async () => {
    const size = 9 * MiB;
    const { bytes, input, reads } = video(size);
    const f = ctxOf('x', input);
    uploadBudget.ms = 0;
    const stop = await failure((await connectorFor('x')).publish(f));
    expect(stop).toMatchObject({ category: 'system', retryable: true });
    expect(f.checkpoint).toMatchObject({ stage: 'uploading', segments: 1, size, item: 0 });
    uploadBudget.ms = saved;
    await (await connectorFor('x')).publish(f);
    expect(reads.ranges).toEqual([
      [0, 4 * MiB],
      [4 * MiB, 8 * MiB],
      [8 * MiB, size],
    ]);
    const calls = fakes.requests('x');
    expect(calls.filter((r) => r.path === '/2/media/upload/initialize')).toHaveLength(1);
    expect(calls.filter((r) => r.path.endsWith('/append'))).toHaveLength(3);
    const x = fakes.fake<FakeX>('x');
    const [media] = [...x.media.values()];
    expect(media?.bytes.equals(Buffer.from(bytes))).toBe(true);
    expect(x.posts).toHaveLength(1);
  });

  it('x: a failed APPEND keeps the segments sent before it; the retry starts at the failed one', async () => {
    const size = 9 * MiB;
    const { bytes, input } = video(size);
    const f = ctxOf('x', input);
    // Segment 1's APPEND fails once (X's 503): segment 0 went through.
    fakes.failNext('x', {
      status: 503,
      path: /\/append$/,
      bodyIncludes: 'name="segment_index"\r\n\r\n1\r\n',
    });
    const err = await failure((await connectorFor('x')).publish(f));
    expect(err.retryable).toBe(true);
    expect(f.checkpoint).toMatchObject({ stage: 'uploading', segments: 1 });
    await (await connectorFor('x')).publish(f);
    const appends = fakes.requests('x').filter((r) => r.path.endsWith('/append')).length;
    expect(appends).toBe(4); // 0, 1 (refused), then 1 and 2
    const [media] = [...fakes.fake<FakeX>('x').media.values()];
    expect(media?.bytes.equals(Buffer.from(bytes))).toBe(true);
  });

  it('x: still processing when the attempt ends: the next one asks STATUS and posts, no second upload', async () => {
    const size = 5 * MiB;
    const { input, reads } = video(size);
    const f = ctxOf('x', input);
    const x = fakes.fake<FakeX>('x');
    const savedProcessing = processing.budgetMs;
    processing.budgetMs = 100;
    x.processingPolls = 1000;
    try {
      const err = await failure((await connectorFor('x')).publish(f));
      expect(err).toMatchObject({ category: 'system', retryable: true });
      expect(f.checkpoint).toMatchObject({ stage: 'uploading', finalized: true, segments: 2 });
    } finally {
      processing.budgetMs = savedProcessing;
    }
    for (const m of x.media.values()) m.pollsLeft = 0;
    await (await connectorFor('x')).publish(f);
    expect(reads.ranges).toHaveLength(2);
    const calls = fakes.requests('x');
    expect(calls.filter((r) => r.path.endsWith('/append'))).toHaveLength(2);
    expect(calls.filter((r) => r.path.endsWith('/finalize'))).toHaveLength(1);
    expect(x.posts).toHaveLength(1);
  });

  it('linkedin (no resume): out of time between parts, the attempt ends retryable instead of running into the Lambda timeout', async () => {
    const size = 5 * MiB;
    const { input, reads } = video(size);
    uploadBudget.ms = 0;
    const err = await failure((await connectorFor('linkedin')).publish(ctxOf('linkedin', input)));
    expect(err).toMatchObject({ category: 'system', retryable: true });
    expect(err.message).toContain('starts over');
    expect(reads.ranges).toEqual([[0, 4 * MiB]]);
    expect(fakes.requests('linkedin').filter((r) => r.path.includes('finalizeUpload'))).toHaveLength(0);
  });

  it("x: refuses a video over X's 512 MB before any upload call", async () => {
    const { input } = video(1000);
    const err = await failure(
      (await connectorFor('x')).publish(ctxOf('x', { ...input, sizeBytes: 600_000_000 })),
    );
    expect(err).toMatchObject({ category: 'media_error', retryable: false });
    expect(fakes.requests('x').filter((r) => r.path.startsWith('/2/media'))).toHaveLength(0);
  });
});

describe('images: what is read whole stays small', () => {
  it('pinterest: a JPEG over 4 MiB goes by its URL, not as base64 bytes', async () => {
    const bytes = patternBytes(1000, 1, 3);
    const { input, reads } = streamedMedia(bytes, 'image', 'image/jpeg', {
      sizeBytes: 5 * MiB,
      url: 'https://media.example/big.jpg',
    });
    await (await connectorFor('pinterest')).publish(ctxOf('pinterest', input));
    expect(reads.whole).toBe(0);
    const pin = fakes.requests('pinterest').find((r) => r.method === 'POST' && r.path === '/v5/pins');
    expect((pin?.json as { media_source?: unknown } | undefined)?.media_source).toEqual({
      source_type: 'image_url',
      url: 'https://media.example/big.jpg',
    });
  });

  it("x: an image over X's 5 MB is refused before it is read", async () => {
    const { input, reads } = streamedMedia(patternBytes(1000, 1, 3), 'image', 'image/png', {
      sizeBytes: 6 * MiB,
    });
    const err = await failure((await connectorFor('x')).publish(ctxOf('x', input)));
    expect(err).toMatchObject({ category: 'media_error', retryable: false });
    expect(reads.whole).toBe(0);
  });
});
