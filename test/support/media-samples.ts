import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
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

// ---- PDF --------------------------------------------------------------------------------------
// Hand-written PDFs (ISO 32000-1): a catalog, a page tree, one Helvetica font (a standard font, not
// embedded) and per page a content stream that writes "Page N" and fills a blue rectangle, then the
// cross-reference table at exact byte offsets. No PDF library: a few lines keep the test honest.

export interface PdfOptions {
  /** Page size in PDF points (1/72 in); US Letter by default. */
  width?: number;
  height?: number;
  /**
   * Encrypts with the standard security handler, revision 2 (RC4, 40-bit; ISO 32000-1 7.6.3).
   * An empty user password opens without one (owner-password-only protection).
   */
  encrypt?: { userPassword: string; ownerPassword: string };
}

/** The standard security handler's padding string (ISO 32000-1, 7.6.3.3, Algorithm 2 step a). */
const PDF_PAD = Buffer.from('28bf4e5e4e758a4164004e56fffa01082e2e00b6d0683e802f0ca9fe6453697a', 'hex');

function rc4(key: Uint8Array, data: Uint8Array): Buffer {
  const S = Array.from({ length: 256 }, (_, i) => i);
  let j = 0;
  for (let i = 0; i < 256; i++) {
    j = (j + S[i]! + key[i % key.length]!) & 0xff;
    [S[i], S[j]] = [S[j]!, S[i]!];
  }
  const out = Buffer.alloc(data.length);
  let i = 0;
  j = 0;
  for (let n = 0; n < data.length; n++) {
    i = (i + 1) & 0xff;
    j = (j + S[i]!) & 0xff;
    [S[i], S[j]] = [S[j]!, S[i]!];
    out[n] = data[n]! ^ S[(S[i]! + S[j]!) & 0xff]!;
  }
  return out;
}

const md5 = (...parts: Uint8Array[]) => {
  const h = createHash('md5');
  for (const part of parts) h.update(part);
  return h.digest();
};
const padded = (password: string) =>
  Buffer.concat([Buffer.from(password, 'latin1'), PDF_PAD]).subarray(0, 32);

/** A PDF of `pages` pages, as bytes. */
export function makePdf(pages: number, opts: PdfOptions = {}): Buffer {
  const width = opts.width ?? 612;
  const height = opts.height ?? 792;
  const id = md5(Buffer.from(`herald-test-${pages}-${width}x${height}`));
  // Algorithms 3, 2 and 4 of ISO 32000-1 7.6.3 (revision 2, a 5-byte key).
  let key: Buffer | null = null;
  let encryptDict = '';
  if (opts.encrypt) {
    const permissions = -44; // printing and copying not allowed; the high bits set as required
    const O = rc4(md5(padded(opts.encrypt.ownerPassword)).subarray(0, 5), padded(opts.encrypt.userPassword));
    const P = Buffer.alloc(4);
    P.writeInt32LE(permissions);
    key = md5(padded(opts.encrypt.userPassword), O, P, id).subarray(0, 5);
    const U = rc4(key, PDF_PAD);
    encryptDict = `<< /Filter /Standard /V 1 /R 2 /O <${O.toString('hex')}> /U <${U.toString('hex')}> /P ${permissions} >>`;
  }
  /** Algorithm 1: each object's streams are RC4 with a key of its number and generation. */
  const sealed = (objectNumber: number, data: Buffer) => {
    if (!key) return data;
    const salt = Buffer.from([
      objectNumber & 0xff,
      (objectNumber >> 8) & 0xff,
      (objectNumber >> 16) & 0xff,
      0,
      0,
    ]);
    return rc4(md5(key, salt).subarray(0, 10), data);
  };

  const objects: Buffer[] = [];
  const set = (n: number, body: string | Buffer) => {
    objects[n] = typeof body === 'string' ? Buffer.from(body, 'latin1') : body;
  };
  set(1, '<< /Type /Catalog /Pages 2 0 R >>');
  set(3, '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  const kids: string[] = [];
  let n = 4;
  for (let page = 1; page <= pages; page++) {
    const content = sealed(
      n,
      Buffer.from(
        `BT /F1 36 Tf 36 ${height - 72} Td (Page ${page}) Tj ET 0 0 1 rg 36 36 ${width / 3} 72 re f`,
      ),
    );
    set(
      n,
      Buffer.concat([
        Buffer.from(`<< /Length ${content.length} >>\nstream\n`),
        content,
        Buffer.from('\nendstream'),
      ]),
    );
    set(
      n + 1,
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 ${width} ${height}] /Resources << /Font << /F1 3 0 R >> >> /Contents ${n} 0 R >>`,
    );
    kids.push(`${n + 1} 0 R`);
    n += 2;
  }
  set(2, `<< /Type /Pages /Kids [${kids.join(' ')}] /Count ${pages} >>`);
  const encryptRef = key ? n : null;
  if (encryptRef !== null) set(encryptRef, encryptDict);

  const chunks: Buffer[] = [Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
  let offset = chunks[0]!.length;
  const offsets: number[] = [];
  for (let i = 1; i < objects.length; i++) {
    offsets[i] = offset;
    const chunk = Buffer.concat([Buffer.from(`${i} 0 obj\n`), objects[i]!, Buffer.from('\nendobj\n')]);
    chunks.push(chunk);
    offset += chunk.length;
  }
  const rows = offsets.slice(1).map((o) => `${String(o).padStart(10, '0')} 00000 n \n`);
  const hexId = id.toString('hex');
  chunks.push(
    Buffer.from(
      `xref\n0 ${objects.length}\n0000000000 65535 f \n${rows.join('')}` +
        `trailer\n<< /Size ${objects.length} /Root 1 0 R /ID [<${hexId}> <${hexId}>]` +
        `${encryptRef !== null ? ` /Encrypt ${encryptRef} 0 R` : ''} >>\nstartxref\n${offset}\n%%EOF\n`,
      'latin1',
    ),
  );
  return Buffer.concat(chunks);
}

/** Writes `makePdf(pages, opts)` to `path` and returns the path. */
export async function writePdf(path: string, pages: number, opts: PdfOptions = {}): Promise<string> {
  await writeFile(path, makePdf(pages, opts));
  return path;
}
