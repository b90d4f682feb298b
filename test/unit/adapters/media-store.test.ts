import { beforeEach, describe, expect, it } from 'vitest';
import { readRange, streamObject } from '#adapters/media-store';
import { s3 } from '#shared/s3';
import { FakeS3 } from '../faults/support/s3.ts';

// The media bucket's reads for connectors: a range is one ranged GET of exactly those bytes, a stream
// opens its GET only when first read.

const bucket = new FakeS3();
bucket.install(s3);
const MEDIA = process.env.HERALD_MEDIA_BUCKET as string;
const KEY = 'orgs/org_1/media/med_1/v.mp4';
const bytes = Uint8Array.from({ length: 100_000 }, (_, i) => (i * 7) & 0xff);

beforeEach(() => {
  bucket.reset();
  bucket.put(MEDIA, KEY, bytes, 'video/mp4');
});

describe('media store reads', () => {
  it('readRange: bytes [start, end) in one ranged GET', async () => {
    expect(await readRange('media', KEY, 10_000, 20_000)).toEqual(bytes.slice(10_000, 20_000));
    expect(await readRange('media', KEY, 99_999, 100_000)).toEqual(bytes.slice(99_999));
    expect(bucket.callsOf('GetObject')).toHaveLength(2);
  });

  it('readRange: an answer of another length is an error, never a chunk', async () => {
    await expect(readRange('media', KEY, 90_000, 110_000)).rejects.toThrow(/asked for 20000 bytes/);
  });

  it('streamObject: no GET until read; then the whole object', async () => {
    const stream = streamObject('media', KEY);
    expect(bucket.callsOf('GetObject')).toHaveLength(0);
    const got = Buffer.from(await new Response(stream).arrayBuffer());
    expect(got.equals(Buffer.from(bytes))).toBe(true);
    expect(bucket.callsOf('GetObject')).toHaveLength(1);
  });
});
