import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3 } from '../../../bin/local/services.ts';

// readMediaObject on the wire (no client mock, a loopback store as the local stack's s3rver is):
// a path-style signed GET of the media bucket's key, the bytes as stored, and S3's error code when
// the store refuses.

interface Seen {
  url: string;
  headers: http.IncomingHttpHeaders;
}
const seen: Seen[] = [];
const objects = new Map<string, Buffer>([
  ['/herald-media/media/org_1/asset%201.png', Buffer.from([0x89, 0x50, 0x4e, 0x47])],
]);
let server: http.Server;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    const body = objects.get(req.url ?? '');
    if (!body) {
      res.writeHead(404, { 'content-type': 'application/xml' });
      res.end('<?xml version="1.0"?><Error><Code>NoSuchKey</Code><Message>gone</Message></Error>');
      return;
    }
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  process.env.AWS_ENDPOINT_URL_S3 = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  process.env.HERALD_MEDIA_BUCKET = 'herald-media';
});

afterAll(async () => {
  delete process.env.AWS_ENDPOINT_URL_S3;
  await new Promise<void>((r) => server.close(() => r()));
});

describe('readMediaObject', () => {
  it('reads the whole object by one signed path-style GET', async () => {
    const { readMediaObject } = await import('#adapters/media-read');
    const bytes = await readMediaObject('media/org_1/asset 1.png');
    expect([...bytes]).toEqual([0x89, 0x50, 0x4e, 0x47]);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.url).toBe('/herald-media/media/org_1/asset%201.png');
    expect(seen[0]?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=unit\/\d{8}\/us-east-1\/s3\/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$/,
    );
    expect(seen[0]?.headers.host).toBe(new URL(process.env.AWS_ENDPOINT_URL_S3 ?? '').host);
  });

  it("fails with S3's code when the object is not there", async () => {
    const { readMediaObject } = await import('#adapters/media-read');
    await expect(readMediaObject('media/org_1/missing.png')).rejects.toThrow(
      'media object media/org_1/missing.png: S3 answered 404 NoSuchKey',
    );
  });
});

describe('readMediaObject at the local stack’s S3 (s3rver)', () => {
  it('reads back, byte for byte, what the SDK’s own S3 client put', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-media-read-'));
    // The unit project's credentials: what the DynamoDB client (and so the signed GET) signs with.
    const credentials = { accessKeyId: 'unit', secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? 'unit' };
    const s3 = await startS3(dir, credentials);
    const saved = { endpoint: process.env.AWS_ENDPOINT_URL_S3, bucket: process.env.HERALD_MEDIA_BUCKET };
    const client = new S3Client({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      credentials,
      forcePathStyle: true,
    });
    try {
      const bytes = randomBytes(300_000);
      const key = 'media/org_1/med_1/photo one.jpg';
      await client.send(new PutObjectCommand({ Bucket: s3.buckets.media, Key: key, Body: bytes }));
      process.env.AWS_ENDPOINT_URL_S3 = s3.endpoint;
      process.env.HERALD_MEDIA_BUCKET = s3.buckets.media;
      const { readMediaObject } = await import('#adapters/media-read');
      expect(Buffer.from(await readMediaObject(key)).equals(bytes)).toBe(true);
      await expect(readMediaObject('media/org_1/none.jpg')).rejects.toThrow(/S3 answered 404 NoSuchKey/);
    } finally {
      process.env.AWS_ENDPOINT_URL_S3 = saved.endpoint;
      process.env.HERALD_MEDIA_BUCKET = saved.bucket;
      client.destroy();
      await s3.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
