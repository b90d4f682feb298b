import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// What putMediaFile puts on the wire, through the real SDK (no client mock): the file's bytes as
// they are. A stream body makes the SDK's default checksums send it aws-chunked (hex chunk sizes
// and a CRC trailer around the bytes), which a store that does not decode that framing, as the
// local stack's s3rver does not, keeps as the object: a rendition starting "10000\r\n", not FFD8.

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

const received: Received[] = [];
let server: http.Server;
let dir: string;

beforeAll(async () => {
  server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    received.push({
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks),
    });
    res.writeHead(200, { etag: '"e1"' });
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // Read by the SDK, and by shared/s3.ts for path-style addresses, when the module loads below.
  process.env.AWS_ENDPOINT_URL_S3 = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  dir = mkdtempSync(join(tmpdir(), 'herald-media-wire-'));
});

afterAll(async () => {
  delete process.env.AWS_ENDPOINT_URL_S3;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

describe('putMediaFile on the wire', () => {
  it('sends the file as the body, with its length, not aws-chunked', async () => {
    const { putMediaFile } = await import('#adapters/media-store');
    const bytes = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(300_000)]);
    const path = join(dir, 'out.jpg');
    writeFileSync(path, bytes);
    await putMediaFile('orgs/org_1/media/med_1/_fit-image-1000000.jpg', path, 'image/jpeg');
    const puts = received.filter((r) => r.method === 'PUT');
    expect(puts).toHaveLength(1);
    const put = puts[0] as Received;
    expect(put.url).toContain('/herald-test-media/orgs/org_1/media/med_1/_fit-image-1000000.jpg');
    expect(put.headers['content-encoding'] ?? '').not.toContain('aws-chunked');
    expect(put.headers['content-length']).toBe(String(bytes.length));
    expect(put.headers['content-type']).toBe('image/jpeg');
    expect(put.body.equals(bytes)).toBe(true);
  });
});
