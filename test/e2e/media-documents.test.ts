import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imageDimensions, sniff } from '#core/media-probe';
import { makePdf, makeSamples, type Samples } from '../support/media-samples.ts';
import { api, stageUpload, type Workspace, workspace } from './helpers.ts';

// Documents (application/pdf) over the local stack: upload → complete (the probe function's real
// PDF reader: page count, first page as the poster) → ready; the refusals (over 300 pages,
// encrypted, not a PDF, a type claimed for other bytes); and an import by URL from a loopback server.

interface Asset {
  id: string;
  status: string;
  kind: string;
  url: string;
  filename: string;
  content_type: string;
  size_bytes: number;
  width: number | null;
  height: number | null;
  duration_sec: number | null;
  poster_url: string | null;
  page_count: number | null;
  source_url: string | null;
  error: string | null;
}
interface Problem {
  code: string;
  errors?: Array<{ pointer: string; code: string; message: string }>;
}

let ws: Workspace;
let samples: Samples;
let server: http.Server;
let origin: string;
const deck = makePdf(10);

beforeAll(async () => {
  samples = await makeSamples(mkdtempSync(join(tmpdir(), 'herald-documents-e2e-')));
  ws = await workspace(['linkedin']);
  server = http.createServer((req, res) => {
    if (req.url === '/deck') {
      // No type and no extension: the bytes decide.
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': deck.length });
      return res.end(deck);
    }
    if (req.url === '/locked.pdf') {
      const locked = makePdf(2, { encrypt: { userPassword: 'secret', ownerPassword: 'owner' } });
      res.writeHead(200, { 'content-type': 'application/pdf' });
      return res.end(locked);
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(samples.dir, { recursive: true, force: true });
});

/** Ticket, PUT, complete: the complete's answer. */
async function upload(filename: string, contentType: string, bytes: Uint8Array) {
  const id = await stageUpload(ws.key, bytes, filename, contentType);
  const res = await api<Asset & Problem>('POST', `/v1/media/uploads/${id}/complete`, { key: ws.key });
  return { id, res };
}

async function expectPoster(url: string | null) {
  expect(url).not.toBeNull();
  const served = await fetch(url ?? '');
  expect(served.status).toBe(200);
  const jpeg = new Uint8Array(await served.arrayBuffer());
  expect(sniff(jpeg)).toBe('image/jpeg');
  const size = imageDimensions(jpeg);
  expect(size?.width).toBeLessThanOrEqual(1280);
  return size;
}

const statusOf = async (id: string) =>
  (await api<Asset>('GET', `/v1/media/${id}`, { key: ws.key })).body.status;

describe('document uploads', () => {
  it('a 10-page PDF: create → PUT → complete → ready, kind document, page_count and the first page as poster', async () => {
    const { id, res } = await upload('deck.pdf', 'application/pdf', deck);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      id,
      status: 'ready',
      kind: 'document',
      content_type: 'application/pdf',
      size_bytes: deck.length,
      page_count: 10,
      width: null,
      height: null,
      duration_sec: null,
    });
    // US Letter at 2 px per point.
    expect(await expectPoster(res.body.poster_url)).toEqual({ width: 1224, height: 1584 });
    const served = await fetch(res.body.url);
    expect(Buffer.from(await served.arrayBuffer()).equals(deck)).toBe(true);
    const got = await api<Asset>('GET', `/v1/media/${id}`, { key: ws.key });
    expect(got.body).toEqual(res.body);
  }, 60_000);

  it('refuses 301 pages (too_many_pages) and takes 300; the refused asset stays pending', async () => {
    const over = await upload('long.pdf', 'application/pdf', makePdf(301));
    expect(over.res.status, over.res.text).toBe(400);
    expect(over.res.body.errors).toEqual([
      expect.objectContaining({
        pointer: '/content_type',
        code: 'too_many_pages',
        message: expect.stringContaining('301 pages'),
      }),
    ]);
    expect(await statusOf(over.id)).toBe('pending');
    const limit = await upload('limit.pdf', 'application/pdf', makePdf(300));
    expect(limit.res.status, limit.res.text).toBe(200);
    expect(limit.res.body.page_count).toBe(300);
  }, 60_000);

  it('refuses an encrypted PDF as content_mismatch, saying why', async () => {
    const locked = makePdf(2, { encrypt: { userPassword: '', ownerPassword: 'owner' } });
    const { id, res } = await upload('locked.pdf', 'application/pdf', locked);
    expect(res.status, res.text).toBe(400);
    expect(res.body.errors).toEqual([
      expect.objectContaining({ code: 'content_mismatch', message: expect.stringContaining('encrypted') }),
    ]);
    expect(await statusOf(id)).toBe('pending');
  }, 60_000);

  it('refuses a .pdf that is not a PDF, a PDF claimed as an image, and an image claimed as a PDF', async () => {
    const text = await upload('notes.pdf', 'application/pdf', Buffer.from('Quarterly notes, plain text.\n'));
    expect(text.res.status, text.res.text).toBe(400);
    expect(text.res.body.errors?.[0]).toMatchObject({ pointer: '/content_type', code: 'content_mismatch' });
    const asImage = await upload('deck.png', 'image/png', deck);
    expect(asImage.res.status).toBe(400);
    expect(asImage.res.body.errors?.[0]).toMatchObject({
      code: 'content_mismatch',
      message: 'The uploaded bytes are application/pdf, not image/png.',
    });
    const png = readFileSync(samples.files.png.path);
    const asPdf = await upload('photo.pdf', 'application/pdf', png);
    expect(asPdf.res.status).toBe(400);
    expect(asPdf.res.body.errors?.[0]).toMatchObject({
      code: 'content_mismatch',
      message: 'The uploaded bytes are image/png, not application/pdf.',
    });
  }, 60_000);

  it('validates the ticket: the .pdf extension and the 100 MB limit', async () => {
    const wrongExt = await api<Problem>('POST', '/v1/media/uploads', {
      key: ws.key,
      body: { filename: 'deck.pptx', content_type: 'application/pdf' },
    });
    expect(wrongExt.status).toBe(400);
    expect(wrongExt.body.errors?.[0]).toMatchObject({ pointer: '/filename', code: 'extension_mismatch' });
    const big = await api<Problem>('POST', '/v1/media/uploads', {
      key: ws.key,
      body: { filename: 'deck.pdf', content_type: 'application/pdf', size_bytes: 100_000_001 },
    });
    expect(big.status).toBe(400);
    expect(big.body.errors?.[0]).toMatchObject({ pointer: '/size_bytes', code: 'too_large' });
    expect(big.body.errors?.[0]?.message).toContain('100 MB');
  });
});

describe('document imports', () => {
  it('imports a PDF by URL: typed by its bytes, named .pdf, ready with page_count and poster', async () => {
    const res = await api<Asset>('POST', '/v1/media/imports', {
      key: ws.key,
      body: { url: `${origin}/deck` },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      status: 'ready',
      kind: 'document',
      content_type: 'application/pdf',
      filename: 'deck.pdf',
      page_count: 10,
      source_url: `${origin}/deck`,
      error: null,
    });
    await expectPoster(res.body.poster_url);
  }, 60_000);

  it('refuses an encrypted PDF at import, and stores nothing', async () => {
    const before = (await api<{ data: Asset[] }>('GET', '/v1/media?limit=100', { key: ws.key })).body.data;
    const res = await api<Problem>('POST', '/v1/media/imports', {
      key: ws.key,
      body: { url: `${origin}/locked.pdf` },
    });
    expect(res.status, res.text).toBe(400);
    expect(res.body.errors?.[0]).toMatchObject({ code: 'content_mismatch' });
    const after = (await api<{ data: Asset[] }>('GET', '/v1/media?limit=100', { key: ws.key })).body.data;
    expect(after.length).toBe(before.length);
  }, 60_000);
});
