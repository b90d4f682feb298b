import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DeliveryWarningCode } from '#core/constants';
import { cardImageTarget, type ImageFitter, readLinkCard } from '#usecases/support/link-card';

// The root part's card as the delivery worker reads it: the URL core/link-cards.ts picks, the page
// under the local stack's address policy (loopback exempted, as for its webhook receivers), the
// image kept, fitted or dropped, and a warning (never a failure) when the page gives no card.

vi.stubEnv('HERALD_WEBHOOK_ALLOW_CIDRS', '127.0.0.0/8');

const PNG_HEAD = Buffer.from('89504e470d0a1a0a0000000d49484452000000100000001008060000001ff3ff61', 'hex');
const png = (size: number) => Buffer.concat([PNG_HEAD, Buffer.alloc(size - PNG_HEAD.length, 0x42)]);

let server: http.Server;
let origin: string;
const sockets = new Set<Socket>();
const hits: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    hits.push(path);
    const page = (image: string) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(
        `<html><head><meta property="og:title" content="Title"><meta property="og:description" content="Desc">${image ? `<meta property="og:image" content="${image}">` : ''}</head></html>`,
      );
    };
    if (path === '/small') return page('/img/small.png');
    if (path === '/big') return page('/img/big.png');
    if (path === '/broken-image') return page('/img/missing.png');
    if (path === '/plain') return page('');
    if (path === '/img/small.png') {
      res.writeHead(200, { 'content-type': 'image/png' });
      return res.end(png(2000));
    }
    if (path === '/img/big.png') {
      res.writeHead(200, { 'content-type': 'image/png' });
      return res.end(png(1_200_000));
    }
    if (path === '/to-private') {
      res.writeHead(302, { location: 'http://10.0.0.8/' });
      return res.end();
    }
    res.writeHead(404);
    res.end();
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(() => {
  hits.length = 0;
});

const variant = (body: string, options: Record<string, unknown> = {}, media: unknown[] = []) => ({
  body,
  media,
  options,
});

function warnings() {
  const list: Array<{ code: DeliveryWarningCode; detail: string }> = [];
  return { list, warn: (code: DeliveryWarningCode, detail: string) => list.push({ code, detail }) };
}

describe('readLinkCard', () => {
  it('reads the card of the first URL, its image kept when it fits', async () => {
    const w = warnings();
    const card = await readLinkCard('bluesky', variant(`See ${origin}/small.`), w.warn);
    expect(card).toMatchObject({ url: `${origin}/small`, title: 'Title', description: 'Desc' });
    expect(card?.image?.contentType).toBe('image/png');
    expect(card?.image?.bytes.length).toBe(2000);
    expect(w.list).toEqual([]);
  });

  it('a page that 404s or redirects to a private address: no card, and the warning says why', async () => {
    const w = warnings();
    expect(await readLinkCard('bluesky', variant(`${origin}/gone`), w.warn)).toBeNull();
    expect(await readLinkCard('linkedin', variant(`${origin}/to-private`), w.warn)).toBeNull();
    expect(w.list).toEqual([
      {
        code: 'link_card_unavailable',
        detail: `No link card for ${origin}/gone: The page answered HTTP 404.`,
      },
      {
        code: 'link_card_unavailable',
        detail: `No link card for ${origin}/to-private: Redirect 1 points at a private, loopback, link-local or metadata address, which Herald never fetches.`,
      },
    ]);
  });

  it('an image over the platform limit is fitted when a fitter is at hand, else dropped', async () => {
    const w = warnings();
    const dropped = await readLinkCard('bluesky', variant(`${origin}/big`), w.warn);
    expect(dropped).toMatchObject({ title: 'Title', image: null });

    const fit = vi.fn<ImageFitter>(async () => ({
      bytes: new Uint8Array(900_000),
      contentType: 'image/jpeg',
    }));
    const fitted = await readLinkCard('bluesky', variant(`${origin}/big`), w.warn, { fit });
    expect(fit).toHaveBeenCalledWith(expect.objectContaining({ contentType: 'image/png' }), {
      maxBytes: 1_000_000,
      types: ['image/jpeg', 'image/png'],
    });
    expect(fitted?.image).toMatchObject({ contentType: 'image/jpeg' });

    // A fitter's answer still over the limit is not trusted.
    const lying = vi.fn<ImageFitter>(async () => ({
      bytes: new Uint8Array(1_000_001),
      contentType: 'image/jpeg',
    }));
    expect(
      (await readLinkCard('bluesky', variant(`${origin}/big`), w.warn, { fit: lying }))?.image,
    ).toBeNull();
    // LinkedIn takes the same image as it is.
    expect((await readLinkCard('linkedin', variant(`${origin}/big`), w.warn))?.image?.bytes.length).toBe(
      1_200_000,
    );
    expect(w.list).toEqual([]);
  });

  it('an image that cannot be read leaves a card without one', async () => {
    const w = warnings();
    const card = await readLinkCard('bluesky', variant(`${origin}/broken-image`), w.warn);
    expect(card).toEqual({ url: `${origin}/broken-image`, title: 'Title', description: 'Desc', image: null });
    expect(w.list).toEqual([]);
  });

  it('reads nothing when the card is turned off, the post has media, or the platform has no cards', async () => {
    const w = warnings();
    expect(
      await readLinkCard('bluesky', variant(`${origin}/small`, { link_card: false }), w.warn),
    ).toBeNull();
    expect(await readLinkCard('bluesky', variant(`${origin}/small`, {}, [{}]), w.warn)).toBeNull();
    expect(await readLinkCard('x', variant(`${origin}/small`), w.warn)).toBeNull();
    expect(await readLinkCard('bluesky', variant('no link here'), w.warn)).toBeNull();
    expect(hits).toEqual([]);
    expect(w.list).toEqual([]);
  });

  it('targets each platform: Bluesky 1,000,000 bytes, LinkedIn the fetch limit; JPEG or PNG', () => {
    expect(cardImageTarget('bluesky')).toEqual({ maxBytes: 1_000_000, types: ['image/jpeg', 'image/png'] });
    expect(cardImageTarget('linkedin')).toEqual({
      maxBytes: 5 * 1024 * 1024,
      types: ['image/jpeg', 'image/png'],
    });
  });
});
