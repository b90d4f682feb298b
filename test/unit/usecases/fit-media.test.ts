import { execFileSync } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jpegArgs, mp4Args, remuxArgs, videoEncoding } from '#adapters/fit-tools';
import { ffmpegPath, ffprobe } from '#adapters/media-tools';
import { type FitPlan, fitPlan, renditionKeyOf } from '#core/media-fit';
import { imageDimensions } from '#core/media-probe';
import { fitMedia } from '#usecases/fit-media';
import { makeVideo } from '../../support/media-samples.ts';

// The fit function for real: the installer package's ffmpeg on generated files, S3 mocked. Each
// rendition must be within its limit and decode.

const s3 = mockClient(S3Client);
let dir: string;

function ffmpeg(args: string[]): void {
  execFileSync(ffmpegPath(), ['-v', 'error', '-nostdin', '-y', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
}

/** A noisy photo-like JPEG: noise does not compress, so it is large for its size. */
function noisyJpeg(out: string, w: number, h: number): string {
  ffmpeg([
    '-f',
    'lavfi',
    '-i',
    `testsrc=size=${w}x${h}:rate=1,noise=alls=40:allf=t`,
    '-frames:v',
    '1',
    '-q:v',
    '2',
    out,
  ]);
  return out;
}

const SOURCE = 'orgs/org_1/media/med_1/photo.jpg';
let stored: { key: string; bytes: Uint8Array; contentType: string }[] = [];
/** `<rendition>.pending` markers and when they were written. */
const markers = new Map<string, Date>();

/** The media bucket: `files` by key for GetObject, what PutObject wrote for HeadObject. */
function bucket(files: Record<string, string>) {
  s3.on(GetObjectCommand).callsFake((input: { Key: string }) => {
    const path = files[input.Key];
    if (!path) throw Object.assign(new Error('NoSuchKey'), { name: 'NoSuchKey' });
    return { Body: createReadStream(path) };
  });
  s3.on(HeadObjectCommand).callsFake((input: { Key: string }) => {
    const marker = markers.get(input.Key);
    if (marker) return { ContentLength: 0, LastModified: marker };
    const put = stored.find((o) => o.key === input.Key);
    if (!put) throw Object.assign(new Error('NotFound'), { name: 'NotFound' });
    return { ContentLength: put.bytes.length, ContentType: put.contentType };
  });
  s3.on(DeleteObjectCommand).callsFake((input: { Key: string }) => {
    markers.delete(input.Key);
    return {};
  });
  s3.on(PutObjectCommand).callsFake(async (input: { Key: string; Body: Readable; ContentType: string }) => {
    if (input.Key.endsWith('.pending')) {
      markers.set(input.Key, new Date());
      return {};
    }
    const chunks: Buffer[] = [];
    for await (const c of input.Body) chunks.push(c as Buffer);
    stored.push({
      key: input.Key,
      bytes: new Uint8Array(Buffer.concat(chunks)),
      contentType: input.ContentType,
    });
    return {};
  });
}

const plan = (answer: ReturnType<typeof fitPlan>): FitPlan => {
  if (!answer || 'error' in answer) throw new Error('no plan');
  return answer;
};
const forever = () => 600_000;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'herald-fit-test-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  s3.reset();
  stored = [];
  markers.clear();
});

async function decodes(bytes: Uint8Array, name: string) {
  const path = join(dir, name);
  await writeFile(path, bytes);
  return ffprobe(path);
}

describe('fitMedia on images (real ffmpeg)', () => {
  it('re-encodes a 1.5+ MB photo for Bluesky to ≤ 1,000,000 bytes that decodes, under the rendition key', async () => {
    const src = noisyJpeg(join(dir, 'big.jpg'), 1600, 1200);
    const size = (await stat(src)).size;
    expect(size).toBeGreaterThan(1_500_000);
    bucket({ [SOURCE]: src });
    const p = plan(
      fitPlan('bluesky', {
        kind: 'image',
        content_type: 'image/jpeg',
        size_bytes: size,
        width: 1600,
        height: 1200,
        duration_sec: null,
      }),
    );
    const target = renditionKeyOf(SOURCE, p);

    const answer = await fitMedia(
      { source_key: SOURCE, target_key: target, kind: 'image', ops: p.ops },
      forever,
    );

    expect(answer).toMatchObject({ ok: true, key: target, content_type: 'image/jpeg', made: true });
    expect(stored).toHaveLength(1);
    const out = stored[0];
    expect(out?.key).toBe('orgs/org_1/media/med_1/_fit-bluesky-image-1000000.jpg');
    expect(out?.bytes.length).toBeLessThanOrEqual(1_000_000);
    expect(answer.ok && answer.size_bytes).toBe(out?.bytes.length);
    const info = await decodes(out?.bytes as Uint8Array, 'out.jpg');
    expect(info).toMatchObject({ hasVideo: true, videoCodec: 'mjpeg' });
    // Only the rendition was written; the original was only read.
    // Only the rendition (and the marker while it was made, removed after) was written.
    expect(s3.commandCalls(PutObjectCommand).map((c) => c.args[0].input.Key)).toEqual([
      `${target}.pending`,
      target,
    ]);
    expect(markers.size).toBe(0);
  });

  it('answers a rendition already stored without running ffmpeg again (once per asset and rendition)', async () => {
    const target = 'orgs/org_1/media/med_1/_fit-bluesky-image-1000000.jpg';
    stored.push({ key: target, bytes: new Uint8Array(123_456), contentType: 'image/jpeg' });
    bucket({});
    const answer = await fitMedia(
      { source_key: SOURCE, target_key: target, kind: 'image', ops: [{ op: 'jpeg', maxBytes: 1_000_000 }] },
      forever,
    );
    expect(answer).toEqual({
      ok: true,
      key: target,
      content_type: 'image/jpeg',
      size_bytes: 123_456,
      made: false,
    });
    expect(s3.commandCalls(GetObjectCommand)).toHaveLength(0);
    expect(s3.commandCalls(PutObjectCommand)).toHaveLength(0);
  });

  it('does not encode twice: a call under way (a fresh marker) makes a second call wait; a stale one does not', async () => {
    const src = noisyJpeg(join(dir, 'again.jpg'), 800, 600);
    bucket({ [SOURCE]: src });
    const target = 'orgs/org_1/media/med_1/_fit-bluesky-image-1000000.jpg';
    const request = {
      source_key: SOURCE,
      target_key: target,
      kind: 'image' as const,
      ops: [{ op: 'jpeg' as const, maxBytes: 1_000_000 }],
    };
    markers.set(`${target}.pending`, new Date(Date.now() - 60_000));
    expect(await fitMedia(request, forever)).toMatchObject({ ok: false, in_progress: true });
    expect(s3.commandCalls(GetObjectCommand)).toHaveLength(0);
    markers.set(`${target}.pending`, new Date(Date.now() - 901_000));
    expect(await fitMedia(request, forever)).toMatchObject({ ok: true, made: true });
  });

  it('pads a 3:1 image into Instagram’s range, as a JPEG of the planned frame', async () => {
    const src = join(dir, 'wide.png');
    ffmpeg(['-f', 'lavfi', '-i', 'testsrc=size=900x300:rate=1', '-frames:v', '1', src]);
    bucket({ [SOURCE]: src });
    const p = plan(
      fitPlan('instagram', {
        kind: 'image',
        content_type: 'image/png',
        size_bytes: 50_000,
        width: 900,
        height: 300,
        duration_sec: null,
      }),
    );
    const target = renditionKeyOf(SOURCE, p);
    const answer = await fitMedia(
      { source_key: SOURCE, target_key: target, kind: 'image', ops: p.ops },
      forever,
    );
    expect(answer.ok).toBe(true);
    const dims = imageDimensions(stored[0]?.bytes as Uint8Array);
    expect(dims).toEqual({ width: 900, height: 472 });
    expect(900 / 472).toBeLessThanOrEqual(1.91);
  });

  it('refuses an image that does not decode, and writes nothing', async () => {
    const src = join(dir, 'corrupt.jpg');
    const good = await readFile(noisyJpeg(join(dir, 'good.jpg'), 640, 480));
    // A real header (so its sides can be read), then noise where the picture should be.
    await writeFile(
      src,
      Buffer.concat([
        good.subarray(0, 1000),
        Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 251)),
      ]),
    );
    expect(imageDimensions(new Uint8Array(await readFile(src)))).toEqual({ width: 640, height: 480 });
    bucket({ [SOURCE]: src });
    const answer = await fitMedia(
      {
        source_key: SOURCE,
        target_key: 'orgs/org_1/media/med_1/_fit-bluesky-image-1000000.jpg',
        kind: 'image',
        ops: [{ op: 'jpeg', maxBytes: 1_000_000 }],
      },
      forever,
    );
    expect(answer).toMatchObject({ ok: false, message: expect.stringContaining('could not be decoded') });
    // Nothing under the rendition key, and no marker left to hold a later call back.
    expect(stored).toEqual([]);
    expect(markers.size).toBe(0);
  });
});

describe('fitMedia on videos (real ffmpeg)', () => {
  it('re-encodes a MOV as an H.264/AAC MP4 within the budget that decodes', async () => {
    const src = join(dir, 'clip.mov');
    ffmpeg([
      ...['-f', 'lavfi', '-i', 'testsrc=size=640x360:rate=25', '-f', 'lavfi', '-i', 'sine=frequency=440'],
      ...['-t', '3', '-c:v', 'mpeg4', '-q:v', '2', '-c:a', 'pcm_s16le', '-f', 'mov', src],
    ]);
    bucket({ [SOURCE.replace('photo.jpg', 'clip.mov')]: src });
    const source = SOURCE.replace('photo.jpg', 'clip.mov');
    // A 300 KB budget for 3 s: ≈ 600 kbit/s of video.
    const ops = [{ op: 'mp4' as const, maxBytes: 300_000, durationSec: 3 }];
    const target = 'orgs/org_1/media/med_1/_fit-test-video-300000.mp4';
    const answer = await fitMedia({ source_key: source, target_key: target, kind: 'video', ops }, forever);
    expect(answer).toMatchObject({ ok: true, made: true, content_type: 'video/mp4' });
    const out = stored[0]?.bytes as Uint8Array;
    expect(out.length).toBeLessThanOrEqual(300_000);
    const info = await decodes(out, 'out.mp4');
    expect(info).toMatchObject({ videoCodec: 'h264', audioCodec: 'aac', width: 640, height: 360 });
    expect(info.durationSec).toBeCloseTo(3, 0);
  });

  it('copies H.264 streams into MP4 without re-encoding when they fit', async () => {
    const src = makeVideo(join(dir, 'h264.mov'), 320, 240, 2);
    const source = 'orgs/org_1/media/med_1/h264.mov';
    bucket({ [source]: src });
    const target = 'orgs/org_1/media/med_1/_fit-bluesky-video-100000000.mp4';
    const answer = await fitMedia(
      {
        source_key: source,
        target_key: target,
        kind: 'video',
        ops: [{ op: 'mp4', maxBytes: 100_000_000, durationSec: 2 }],
      },
      forever,
    );
    expect(answer.ok).toBe(true);
    const info = await decodes(stored[0]?.bytes as Uint8Array, 'copy.mp4');
    expect(info).toMatchObject({ videoCodec: 'h264', width: 320, height: 240 });
    expect(info.formatName).toContain('mp4');
  });

  it('refuses bytes that are no video, and writes nothing', async () => {
    const src = join(dir, 'noise.mp4');
    await writeFile(src, Buffer.from(Array.from({ length: 50_000 }, (_, i) => (i * 31) % 256)));
    const source = 'orgs/org_1/media/med_1/noise.mp4';
    bucket({ [source]: src });
    const answer = await fitMedia(
      {
        source_key: source,
        target_key: 'orgs/org_1/media/med_1/_fit-x.mp4',
        kind: 'video',
        ops: [{ op: 'mp4', maxBytes: 100_000, durationSec: 2 }],
      },
      forever,
    );
    expect(answer.ok).toBe(false);
    expect(stored).toEqual([]);
    expect(markers.size).toBe(0);
  });
});

describe('the ffmpeg command lines', () => {
  it('JPEG: strict decoding, upright (EXIF), padded, scaled, full-range 4:2:0, metadata dropped, one frame', () => {
    const args = jpegArgs(
      'in',
      'out.jpg',
      [
        { op: 'pad', width: 1000, height: 1250 },
        { op: 'jpeg', maxBytes: 1 },
      ],
      { q: 5, scale: 0.5 },
      6,
    );
    expect(args).toEqual([
      ...['-v', 'error', '-nostdin', '-y', '-err_detect', 'explode', '-i', 'in', '-xerror'],
      ...['-frames:v', '1', '-an', '-sn', '-map_metadata', '-1'],
      '-vf',
      "transpose=1,pad=w='max(iw\\,1000)':h='max(ih\\,1250)':x='(ow-iw)/2':y='(oh-ih)/2':color=black,scale='max(2\\,trunc(iw*0.5/2)*2)':-2,format=yuvj420p",
      ...['-c:v', 'mjpeg', '-q:v', '5', '-f', 'image2', 'out.jpg'],
    ]);
  });

  it('MP4: H.264 high + AAC at the budget’s bitrate, VBV-capped, faststart', () => {
    const enc = videoEncoding(100_000_000, 180);
    // 100 MB × 0.9 × 8 / 180 s = 4000 kbit/s, less 128 for audio.
    expect(enc).toEqual({ videoKbps: 3872, maxSide: 1920 });
    const args = mp4Args('in', 'out.mp4', [{ op: 'mp4', maxBytes: 100_000_000, durationSec: 180 }], enc);
    const s = args.join(' ');
    expect(s).toContain('-map 0:v:0 -map 0:a:0?');
    expect(s).toContain('-c:v libx264 -preset veryfast -profile:v high -pix_fmt yuv420p');
    expect(s).toContain('-b:v 3872k -maxrate 3872k -bufsize 7744k');
    expect(s).toContain('-c:a aac -b:a 128k');
    expect(s).toContain('-movflags +faststart -f mp4 out.mp4');
    expect(videoEncoding(10_000_000, 300).maxSide).toBe(640);
    expect(remuxArgs('in', 'o.mp4').join(' ')).toContain('-c copy -movflags +faststart');
  });
});
