import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ALLOWED_MEDIA,
  HEAD_BYTES,
  imageDimensions,
  kindOf,
  MAX_IMAGE_HEAD_BYTES,
  matchesClaim,
  sniff,
  streamsMatchClaim,
} from '#core/media-probe';
import {
  makePdf,
  makeSamples,
  type SampleName,
  type Samples,
  silentMp3,
  tinyWebp,
} from '../../support/media-samples.ts';

// Magic-byte sniffing and image dimensions (core/media-probe.ts) over real files made by ffmpeg.

let dir: string;
let samples: Samples;
const head = async (name: SampleName, bytes = HEAD_BYTES) =>
  (await readFile(samples.files[name].path)).subarray(0, bytes);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'herald-probe-'));
  samples = await makeSamples(dir);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const bytes = (...parts: (string | number[])[]) =>
  Uint8Array.from(parts.flatMap((p) => (typeof p === 'string' ? [...Buffer.from(p, 'latin1')] : p)));
const u32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
const ftyp = (major: string, ...compatible: string[]) =>
  bytes(u32(16 + 4 * compatible.length), 'ftyp', major, u32(0), ...compatible);

describe('ALLOWED_MEDIA and kindOf', () => {
  it('lists the eleven allowed types with their size limits', () => {
    expect(Object.keys(ALLOWED_MEDIA).sort()).toEqual([
      'application/pdf',
      'audio/mp4',
      'audio/mpeg',
      'audio/wav',
      'image/gif',
      'image/jpeg',
      'image/png',
      'image/webp',
      'video/mp4',
      'video/quicktime',
      'video/webm',
    ]);
    expect(ALLOWED_MEDIA['image/webp'].maxBytes).toBe(20 * 1024 * 1024);
    expect(ALLOWED_MEDIA['video/webm'].maxBytes).toBe(1024 * 1024 * 1024);
    expect(ALLOWED_MEDIA['audio/wav'].maxBytes).toBe(200 * 1024 * 1024);
    // LinkedIn's "100MB", read as decimal megabytes.
    expect(ALLOWED_MEDIA['application/pdf']).toEqual({
      kind: 'document',
      maxBytes: 100_000_000,
      extensions: ['pdf'],
    });
  });

  it('answers the kind, ignoring case and parameters, and null for other types', () => {
    expect(kindOf('IMAGE/PNG')).toBe('image');
    expect(kindOf('video/mp4; codecs="avc1.42E01E"')).toBe('video');
    expect(kindOf('audio/mpeg')).toBe('audio');
    expect(kindOf('Application/PDF')).toBe('document');
    expect(kindOf('application/msword')).toBeNull();
    expect(kindOf('toString')).toBeNull();
  });
});

describe('sniff', () => {
  const names: SampleName[] = ['png', 'jpeg', 'gif', 'webp', 'mp4', 'mov', 'webm', 'm4a', 'wav', 'mp3'];

  it.each(names)('recognises the generated %s from its first bytes', async (name) => {
    // Act
    const type = sniff(await head(name));

    // Assert
    expect(type).toBe(samples.files[name].contentType);
    expect(matchesClaim(samples.files[name].contentType, type)).toBe(true);
  });

  it('refuses a PNG claimed as image/jpeg', async () => {
    const type = sniff(await head('png'));

    expect(type).toBe('image/png');
    expect(matchesClaim('image/jpeg', type)).toBe(false);
  });

  it('answers null for truncated, empty and unknown bytes', async () => {
    expect(sniff(new Uint8Array())).toBeNull();
    expect(sniff((await head('png')).subarray(0, 5))).toBeNull();
    expect(sniff(bytes('GIF8'))).toBeNull();
    expect(sniff(bytes('%PDF-'))).toBeNull();
    expect(sniff(bytes('%PDF-x.y\n'))).toBeNull();
    expect(sniff(bytes('RIFF', u32(0), 'AVI LIST'))).toBeNull();
    expect(sniff(bytes([0x1a, 0x45, 0xdf, 0xa3]))).toBeNull();
    expect(matchesClaim('image/png', null)).toBe(false);
  });

  it('tells MPEG audio from AAC (ADTS), with or without an ID3 tag in front', () => {
    const adts = [0xff, 0xf1, 0x50, 0x80];
    const mp3Frame = [0xff, 0xfb, 0x90, 0xc4];
    const id3 = (frame: number[]) => bytes('ID3', [4, 0, 0, 0, 0, 0, 2], new Array(2).fill(0), frame);

    expect(sniff(bytes(mp3Frame))).toBe('audio/mpeg');
    expect(sniff(bytes(adts))).toBe('audio/aac');
    expect(sniff(id3(mp3Frame))).toBe('audio/mpeg');
    expect(sniff(id3(adts))).toBe('audio/aac');
    // A tag bigger than the head (cover art): the tag alone decides.
    expect(sniff(bytes('ID3', [4, 0, 0, 0, 0x7f, 0x7f]))).toBe('audio/mpeg');
    expect(sniff(silentMp3(0.1))).toBe('audio/mpeg');
  });

  it('reads ISO media brands: major first, else the compatible list', () => {
    expect(sniff(ftyp('mp42', 'isom'))).toBe('video/mp4');
    expect(sniff(ftyp('MSNV', 'mp42', 'isom'))).toBe('video/mp4');
    expect(sniff(ftyp('qt  ', 'qt  '))).toBe('video/quicktime');
    expect(sniff(ftyp('M4A ', 'isom'))).toBe('audio/mp4');
    expect(sniff(ftyp('heic', 'mif1'))).toBe('image/heic');
    expect(sniff(ftyp('zzzz', 'yyyy'))).toBeNull();
    // Old QuickTime files start with a movie atom, no ftyp.
    expect(sniff(bytes(u32(1000), 'moov'))).toBe('video/quicktime');
  });

  it('tells WebM from other Matroska by the EBML DocType', () => {
    const ebml = (docType: string) =>
      bytes(
        [0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01],
        [0x42, 0x82, 0x80 | docType.length],
        docType,
      );

    expect(sniff(ebml('webm'))).toBe('video/webm');
    expect(sniff(ebml('matroska'))).toBe('video/x-matroska');
    expect(matchesClaim('video/webm', sniff(ebml('matroska')))).toBe(false);
  });
});

describe('sniff: PDF', () => {
  it('recognises a generated PDF by its %PDF- header, and tells it from the claimed image', () => {
    const pdf = makePdf(2);
    expect(sniff(pdf.subarray(0, HEAD_BYTES))).toBe('application/pdf');
    expect(matchesClaim('application/pdf', sniff(pdf))).toBe(true);
    expect(matchesClaim('image/png', sniff(pdf))).toBe(false);
  });

  it('finds the header behind junk within the first KiB, as PDF readers do, but not past it', () => {
    const behind = (junk: number) => Buffer.concat([Buffer.alloc(junk, 0x20), makePdf(1)]);
    expect(sniff(behind(1000))).toBe('application/pdf');
    expect(sniff(behind(1024))).toBeNull();
  });

  it('answers the real type of an image named and claimed as a PDF', async () => {
    const type = sniff(await head('png'));
    expect(type).toBe('image/png');
    expect(matchesClaim('application/pdf', type)).toBe(false);
  });
});

describe('matchesClaim and streamsMatchClaim', () => {
  it('lets a generic MP4 be claimed as audio/mp4, but never an M4A as video/mp4', async () => {
    expect(matchesClaim('audio/mp4', sniff(ftyp('isom', 'mp41')))).toBe(true);
    expect(matchesClaim('video/mp4', sniff(await head('m4a')))).toBe(false);
    expect(matchesClaim('video/mp4', sniff(await head('mov')))).toBe(false);
    expect(matchesClaim('video/quicktime', sniff(await head('mp4')))).toBe(false);
    expect(matchesClaim('Video/MP4; codecs=avc1', sniff(await head('mp4')))).toBe(true);
  });

  it('settles the ambiguity with the streams ffprobe found', () => {
    const av = { hasVideo: true, hasAudio: true };
    const audioOnly = { hasVideo: false, hasAudio: true };

    expect(streamsMatchClaim('video/mp4', av)).toBe(true);
    expect(streamsMatchClaim('video/mp4', audioOnly)).toBe(false);
    expect(streamsMatchClaim('audio/mp4', audioOnly)).toBe(true);
    expect(streamsMatchClaim('audio/mp4', av)).toBe(false);
    expect(streamsMatchClaim('video/webm', audioOnly)).toBe(false);
  });
});

describe('imageDimensions', () => {
  it.each(['png', 'jpeg', 'gif', 'webp'] as const)(
    'reads the %s size from the first HEAD_BYTES',
    async (name) => {
      const { width, height } = samples.files[name];

      expect(imageDimensions(await head(name))).toEqual({ width, height });
    },
  );

  it('reads the hand-made 1x1 WebP (the fallback when ffmpeg lacks libwebp)', () => {
    expect(sniff(tinyWebp())).toBe('image/webp');
    expect(imageDimensions(tinyWebp())).toEqual({ width: 1, height: 1 });
  });

  it('answers null while the head is too short, and the size once it is long enough', async () => {
    // Arrange: 120 KiB of APP segments before the JPEG's SOF marker, as a big EXIF thumbnail does.
    const jpeg = await readFile(samples.files.jpeg.path);
    const segment = (fill: number) => [0xff, 0xe2, 0xff, 0xff, ...new Array(0xffff - 2).fill(fill)];
    const padded = Buffer.concat([jpeg.subarray(0, 2), bytes(segment(1), segment(2)), jpeg.subarray(2)]);

    // Act + Assert
    expect(imageDimensions(padded.subarray(0, HEAD_BYTES))).toBeNull();
    expect(imageDimensions(padded.subarray(0, MAX_IMAGE_HEAD_BYTES))).toEqual({ width: 320, height: 240 });
    expect(imageDimensions(jpeg.subarray(0, 40))).toBeNull();
    expect(imageDimensions((await head('png')).subarray(0, 20))).toBeNull();
  });

  it('answers the displayed size of a JPEG rotated by EXIF orientation 6', async () => {
    // Arrange: an APP1 Exif segment whose IFD0 holds Orientation (0x0112) = 6, in front of the rest.
    const jpeg = await readFile(samples.files.jpeg.path);
    const tiff = bytes('MM', [0, 0x2a], u32(8), [0, 1], [0x01, 0x12, 0, 3], u32(1), [0, 6, 0, 0], u32(0));
    const exif = bytes('Exif', [0, 0], [...tiff]);
    const app1 = bytes([0xff, 0xe1, (exif.length + 2) >> 8, (exif.length + 2) & 0xff], [...exif]);
    const rotated = Buffer.concat([jpeg.subarray(0, 2), app1, jpeg.subarray(2)]);

    expect(imageDimensions(rotated)).toEqual({ width: 240, height: 320 });
  });

  it('answers null for bytes that are not an allowed image', async () => {
    expect(imageDimensions(await head('mp4'))).toBeNull();
    expect(imageDimensions(bytes('BM', new Array(60).fill(1)))).toBeNull();
  });
});
