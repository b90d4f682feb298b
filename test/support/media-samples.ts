import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ffmpegPath, ffprobe, posterFrame } from '#adapters/media-tools';

// Real media files for tests and benchmarks, generated with the ffmpeg binary from lavfi sources
// (testsrc, sine). The ffmpeg of @ffmpeg-installer is a 2018 static build; it has libwebp,
// libmp3lame and libx264, but a binary swapped in through HERALD_FFMPEG_PATH may not, so each
// optional encoder is checked and replaced by a hand-made file when missing (`makeSamples` then
// reports what it did in `fallbacks`).

export interface Sample {
  path: string;
  contentType: string;
  width: number | null;
  height: number | null;
  /** Expected duration; null for images. */
  durationSec: number | null;
}

export type SampleName = 'png' | 'jpeg' | 'gif' | 'webp' | 'mp4' | 'mp3' | 'mov' | 'webm' | 'm4a' | 'wav';

export interface Samples {
  dir: string;
  files: Record<SampleName, Sample>;
  /** Encoders that were missing, and replaced (e.g. `webp: hand-written 1x1 VP8L`). */
  fallbacks: string[];
}

const W = 320;
const H = 240;
const SECONDS = 2;

function ffmpeg(args: readonly string[]): void {
  execFileSync(ffmpegPath(), ['-v', 'error', '-nostdin', '-y', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
}

let encoders: Set<string> | undefined;
/** The encoder names this ffmpeg build has (`ffmpeg -encoders`). */
export function ffmpegEncoders(): Set<string> {
  if (!encoders) {
    const out = execFileSync(ffmpegPath(), ['-hide_banner', '-encoders'], { encoding: 'utf8' });
    encoders = new Set(
      out
        .split('\n')
        .map((line) => /^\s[VAS][\w.]{5}\s+(\S+)/.exec(line)?.[1])
        .filter((name): name is string => name !== undefined),
    );
  }
  return encoders;
}

/**
 * The smallest lossless WebP: RIFF/WEBP with one VP8L chunk holding a 1x1 image (the bytes are the
 * well-known 1x1 feature-detection image). Used when ffmpeg has no libwebp.
 */
export function tinyWebp(): Uint8Array {
  return Buffer.from('UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==', 'base64');
}

/**
 * A silent constant-bitrate MP3 without an encoder: MPEG-1 Layer III frames, 128 kbit/s, 44.1 kHz,
 * mono, whose side info is all zero (no granule data, so every decoder outputs silence). A frame
 * is 417 bytes and lasts 1152 samples. Used when ffmpeg has no libmp3lame.
 */
export function silentMp3(seconds: number): Uint8Array {
  const frameBytes = Math.floor((144 * 128_000) / 44_100);
  const frames = Math.ceil((seconds * 44_100) / 1152);
  const out = new Uint8Array(frameBytes * frames);
  for (let i = 0; i < frames; i++) out.set([0xff, 0xfb, 0x90, 0xc4], i * frameBytes);
  return out;
}

/** Generates one file of each kind in `dir` (about 0.5 s in all) with the metadata to expect. */
export async function makeSamples(dir: string): Promise<Samples> {
  const has = ffmpegEncoders();
  const fallbacks: string[] = [];
  const p = (name: string) => join(dir, name);
  const still = ['-f', 'lavfi', '-i', `testsrc=size=${W}x${H}:rate=1`, '-frames:v', '1'];
  const motion = ['-f', 'lavfi', '-i', `testsrc=size=${W}x${H}:rate=25`];
  const tone = ['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100'];
  const h264 = has.has('libx264')
    ? ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p']
    : ['-c:v', 'mpeg4'];
  if (!has.has('libx264')) fallbacks.push('h264: libx264 missing, MP4/MOV use the native mpeg4 encoder');

  const image = (contentType: string, path: string): Sample => ({
    path,
    contentType,
    width: W,
    height: H,
    durationSec: null,
  });
  const av = (contentType: string, path: string, video: boolean): Sample => ({
    path,
    contentType,
    width: video ? W : null,
    height: video ? H : null,
    durationSec: SECONDS,
  });

  ffmpeg([...still, p('sample.png')]);
  ffmpeg([...still, '-q:v', '3', p('sample.jpg')]);
  ffmpeg([...still, p('sample.gif')]);
  let webp = image('image/webp', p('sample.webp'));
  if (has.has('libwebp')) ffmpeg([...still, '-c:v', 'libwebp', webp.path]);
  else {
    await writeFile(webp.path, tinyWebp());
    webp = { ...webp, width: 1, height: 1 };
    fallbacks.push('webp: libwebp missing, wrote a hand-made 1x1 lossless (VP8L) WebP');
  }
  const t = ['-t', String(SECONDS)];
  ffmpeg([...motion, ...tone, ...t, ...h264, '-c:a', 'aac', '-movflags', '+faststart', p('sample.mp4')]);
  ffmpeg([...motion, ...tone, ...t, ...h264, '-c:a', 'aac', '-f', 'mov', p('sample.mov')]);
  if (has.has('libvpx')) {
    const vp8 = ['-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '300k'];
    const opus = has.has('libopus') ? ['-c:a', 'libopus'] : ['-c:a', 'libvorbis'];
    ffmpeg([...motion, ...tone, ...t, ...vp8, ...opus, p('sample.webm')]);
  } else {
    // No VP8: a WebM holding only audio still sniffs as WebM (its stream check then fails).
    ffmpeg([...tone, ...t, '-c:a', 'libvorbis', p('sample.webm')]);
    fallbacks.push('webm: libvpx missing, sample.webm is audio-only');
  }
  ffmpeg([...tone, ...t, '-c:a', 'aac', p('sample.m4a')]);
  ffmpeg([...tone, ...t, p('sample.wav')]);
  if (has.has('libmp3lame')) ffmpeg([...tone, ...t, '-c:a', 'libmp3lame', '-b:a', '64k', p('sample.mp3')]);
  else {
    await writeFile(p('sample.mp3'), silentMp3(SECONDS));
    fallbacks.push('mp3: libmp3lame missing, wrote hand-made silent CBR MPEG-1 Layer III frames');
  }

  return {
    dir,
    fallbacks,
    files: {
      png: image('image/png', p('sample.png')),
      jpeg: image('image/jpeg', p('sample.jpg')),
      gif: image('image/gif', p('sample.gif')),
      webp,
      mp4: av('video/mp4', p('sample.mp4'), true),
      mov: av('video/quicktime', p('sample.mov'), true),
      webm: av('video/webm', p('sample.webm'), has.has('libvpx')),
      m4a: av('audio/mp4', p('sample.m4a'), false),
      wav: av('audio/wav', p('sample.wav'), false),
      mp3: av('audio/mpeg', p('sample.mp3'), false),
    },
  };
}

/**
 * A ~10 MB MP4 (h264 + aac, 640x360, 4 s) for probe-time measurements. Lossless x264 (`-qp 0`) of a
 * test pattern with light temporal noise: large like a phone clip yet encoded in well under a
 * second (a lossy high-bitrate encode of the same size takes over 10 s on two cores).
 */
export async function makeLargeMp4(dir: string): Promise<Sample & { bytes: number }> {
  const path = join(dir, 'large.mp4');
  const video = ['-f', 'lavfi', '-i', 'testsrc=size=640x360:rate=25'];
  const codec = ffmpegEncoders().has('libx264')
    ? ['-c:v', 'libx264', '-preset', 'ultrafast', '-qp', '0', '-pix_fmt', 'yuv420p']
    : ['-c:v', 'mpeg4', '-q:v', '1'];
  ffmpeg([
    ...video,
    ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100', '-t', '4'],
    ...['-vf', 'noise=alls=2:allf=t', ...codec, '-c:a', 'aac', '-movflags', '+faststart', path],
  ]);
  return {
    path,
    contentType: 'video/mp4',
    width: 640,
    height: 360,
    durationSec: 4,
    bytes: (await stat(path)).size,
  };
}

export interface ProbeTiming {
  ffprobeMs: number;
  posterMs: number;
  totalMs: number;
}

/** What completeMediaUpload spends on a video already in /tmp: ffprobe, then the poster frame. */
export async function measureProbe(path: string): Promise<ProbeTiming> {
  const dir = await mkdtemp(join(tmpdir(), 'herald-poster-'));
  try {
    const t0 = performance.now();
    await ffprobe(path);
    const t1 = performance.now();
    await posterFrame(path, join(dir, 'poster.jpg'));
    const t2 = performance.now();
    return { ffprobeMs: t1 - t0, posterMs: t2 - t1, totalMs: t2 - t0 };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A copy of `src` whose video track says "display rotated by `degrees`", as phones write portrait
 * clips. Stream copy, because this ffmpeg drops the rotate tag when re-encoding.
 */
export function withRotation(src: string, out: string, degrees: number): string {
  ffmpeg(['-i', src, '-c', 'copy', '-metadata:s:v:0', `rotate=${degrees}`, out]);
  return out;
}

/** A video of `seconds` at `width`x`height`, h264 without audio (for edge cases). */
export function makeVideo(out: string, width: number, height: number, seconds: number): string {
  const codec = ffmpegEncoders().has('libx264')
    ? ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p']
    : ['-c:v', 'mpeg4'];
  ffmpeg([
    '-f',
    'lavfi',
    '-i',
    `testsrc=size=${width}x${height}:rate=25`,
    '-t',
    String(seconds),
    ...codec,
    out,
  ]);
  return out;
}
