import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, ffprobe, ProbeError, posterFrame } from '#adapters/media-tools';
import { imageDimensions, sniff } from '#core/media-probe';
import {
  makeLargeMp4,
  makeSamples,
  makeVideo,
  measureProbe,
  type SampleName,
  type Samples,
  silentMp3,
  withRotation,
} from '../../support/media-samples.ts';

// ffprobe and ffmpeg run for real (the installer packages' binaries) on generated files.

let dir: string;
let samples: Samples;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'herald-tools-'));
  samples = await makeSamples(dir);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const savedFfprobe = process.env.HERALD_FFPROBE_PATH;
afterEach(() => {
  if (savedFfprobe === undefined) delete process.env.HERALD_FFPROBE_PATH;
  else process.env.HERALD_FFPROBE_PATH = savedFfprobe;
});

async function probeError(promise: Promise<unknown>): Promise<ProbeError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProbeError);
  return error as ProbeError;
}

describe('ffprobe', () => {
  it('reads duration, size, streams and codecs of the MP4', async () => {
    // Act
    const res = await ffprobe(samples.files.mp4.path);

    // Assert
    expect(res.durationSec).toBeCloseTo(2, 1);
    expect(res).toMatchObject({ width: 320, height: 240, hasVideo: true, hasAudio: true });
    expect(res).toMatchObject({ videoCodec: 'h264', audioCodec: 'aac' });
    expect(res.formatName).toContain('mp4');
  });

  it('reads the MP3 as audio only, about 2 s long', async () => {
    const res = await ffprobe(samples.files.mp3.path);

    expect(Math.abs((res.durationSec ?? 0) - 2)).toBeLessThanOrEqual(0.1);
    expect(res).toMatchObject({
      width: null,
      height: null,
      hasVideo: false,
      hasAudio: true,
      formatName: 'mp3',
    });
  });

  it.each(['mov', 'webm', 'm4a', 'wav'] as SampleName[])('reads the %s sample', async (name) => {
    const expected = samples.files[name];

    const res = await ffprobe(expected.path);

    expect(Math.abs((res.durationSec ?? 0) - 2)).toBeLessThanOrEqual(0.1);
    expect(res).toMatchObject({ width: expected.width, height: expected.height, hasAudio: true });
    expect(res.hasVideo).toBe(expected.width !== null);
  });

  it('reads the hand-made silent MP3 (the fallback when ffmpeg lacks libmp3lame)', async () => {
    const path = join(dir, 'silent.mp3');
    await writeFile(path, silentMp3(2));

    const res = await ffprobe(path);

    expect(Math.abs((res.durationSec ?? 0) - 2)).toBeLessThanOrEqual(0.1);
    expect(res).toMatchObject({ hasVideo: false, hasAudio: true, audioCodec: 'mp3' });
  });

  it('answers the displayed size of a video tagged as rotated 90°', async () => {
    const rotated = withRotation(samples.files.mp4.path, join(dir, 'rotated.mp4'), 90);

    const res = await ffprobe(rotated);

    expect(res).toMatchObject({ width: 240, height: 320 });
  });

  it('throws a ProbeError for a corrupt file', async () => {
    // Arrange: random bytes behind an MP4 name (ffprobe calls them an MPEG-TS with no streams).
    const path = join(dir, 'corrupt.mp4');
    await writeFile(
      path,
      Uint8Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 251),
    );

    // Act
    const error = await probeError(ffprobe(path));

    // Assert
    expect(['unreadable', 'failed']).toContain(error.reason);
  });

  it('throws a ProbeError for a missing file', async () => {
    const error = await probeError(ffprobe(join(dir, 'missing.mp4')));

    expect(error.reason).toBe('failed');
    expect(error.message).toMatch(/No such file/);
  });

  it('runs the binary named by HERALD_FFPROBE_PATH first; a missing one is no ProbeError', async () => {
    process.env.HERALD_FFPROBE_PATH = join(dir, 'no-such-ffprobe');

    const error = await ffprobe(samples.files.mp4.path).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(ProbeError);
    expect(String(error)).toMatch(/cannot run ffprobe at \S*no-such-ffprobe: .*not found/);
  });
});

describe('posterFrame', () => {
  it('writes a JPEG of the video size', async () => {
    // Act
    const out = await posterFrame(samples.files.mp4.path, join(dir, 'poster.jpg'));

    // Assert
    const jpeg = await readFile(out);
    expect(sniff(jpeg)).toBe('image/jpeg');
    expect(imageDimensions(jpeg)).toEqual({ width: 320, height: 240 });
  });

  it('takes the first frame of a video shorter than 0.5 s, scaled down to 1280 px wide', async () => {
    const video = makeVideo(join(dir, 'short-wide.mp4'), 1600, 900, 0.2);

    const out = await posterFrame(video, join(dir, 'short-wide.jpg'));

    expect(imageDimensions(await readFile(out))).toEqual({ width: 1280, height: 720 });
  });

  it('applies the display rotation, like ffprobe', async () => {
    const rotated = withRotation(samples.files.mp4.path, join(dir, 'rotated-poster.mp4'), 90);

    const out = await posterFrame(rotated, join(dir, 'rotated.jpg'));

    expect(imageDimensions(await readFile(out))).toEqual({ width: 240, height: 320 });
  });

  it('throws a ProbeError for a file without video', async () => {
    await probeError(posterFrame(samples.files.mp3.path, join(dir, 'none.jpg')));
  });
});

describe('limits of every run', () => {
  /** A stand-in for ffprobe: a shell script with `body`, named by HERALD_FFPROBE_PATH. */
  async function fakeFfprobe(name: string, body: string): Promise<string> {
    const path = join(dir, name);
    await writeFile(path, `#!/bin/sh\n${body}\n`);
    await chmod(path, 0o755);
    process.env.HERALD_FFPROBE_PATH = path;
    return path;
  }

  it('kills a tool that runs past its time limit, with a timeout ProbeError', async () => {
    const pidFile = join(dir, 'hang.pid');
    await fakeFfprobe('hang.sh', `echo $$ > ${pidFile}\nexec sleep 30`);
    const started = Date.now();

    const error = await probeError(ffprobe(samples.files.mp4.path, { ...DEFAULT_LIMITS, timeoutMs: 300 }));

    expect(error.reason).toBe('timeout');
    expect(error.message).toBe('ffprobe timed out after 300 ms and was killed');
    expect(Date.now() - started).toBeLessThan(5_000);
    const pid = Number((await readFile(pidFile, 'utf8')).trim());
    expect(() => process.kill(pid, 0)).toThrow(/ESRCH/);
  });

  it('gives the tool no environment of the function: no AWS credentials', async () => {
    const envFile = join(dir, 'env.txt');
    await fakeFfprobe('env.sh', `env > ${envFile}\necho '{}'`);
    process.env.AWS_SECRET_ACCESS_KEY = 'do-not-leak';
    try {
      await probeError(ffprobe(samples.files.mp4.path));
    } finally {
      delete process.env.AWS_SECRET_ACCESS_KEY;
    }
    const names = (await readFile(envFile, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => line.split('=')[0]);
    expect(names).toContain('PATH');
    expect(names.filter((n) => !['PATH', 'LC_ALL', 'PWD', 'SHLVL', '_', 'OLDPWD'].includes(n ?? ''))).toEqual(
      [],
    );
  });

  it('caps the address space (ulimit -v) and every allocation (-max_alloc)', async () => {
    const out = join(dir, 'limits.txt');
    await fakeFfprobe('limits.sh', `{ ulimit -v; echo "$@"; } > ${out}\necho '{}'`);

    await probeError(ffprobe(samples.files.mp4.path, { timeoutMs: 5_000, memoryMb: 300, maxAllocMb: 64 }));

    const [limit, args] = (await readFile(out, 'utf8')).trim().split('\n');
    expect(limit).toBe(String(300 * 1024));
    expect(args).toMatch(/^-max_alloc 67108864 -v error /);
  });

  it('fails the real ffprobe cleanly when its memory limit is too small', async () => {
    const error = await probeError(
      ffprobe(samples.files.mp4.path, { timeoutMs: 10_000, memoryMb: 16, maxAllocMb: 8 }),
    );

    expect(error.reason).toBe('failed');
  });
});

describe('measureProbe', () => {
  it('times ffprobe and the poster frame of a ~10 MB MP4', { timeout: 60_000 }, async () => {
    // Arrange
    const large = await makeLargeMp4(dir);

    // Act
    const timing = await measureProbe(large.path);

    // Assert
    expect(large.bytes).toBeGreaterThan(8 * 1024 * 1024);
    expect(large.bytes).toBeLessThan(14 * 1024 * 1024);
    expect(await ffprobe(large.path)).toMatchObject({ width: 640, height: 360 });
    expect(timing.ffprobeMs).toBeGreaterThan(0);
    expect(timing.posterMs).toBeGreaterThan(0);
    expect(timing.totalMs).toBeCloseTo(timing.ffprobeMs + timing.posterMs, 5);
  });
});
