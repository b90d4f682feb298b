import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type FetchOptions, fetchMedia, ImportRefusal, MAX_REDIRECTS } from '#adapters/media-fetch';
import type { Resolver } from '#adapters/webhooks/safe-http';
import { parseCidrs } from '#core/address-policy';

// importMedia's fetch against loopback servers (allow-listed the way the local stack allows its
// webhook receivers): the address checks on every hop, sniffing, the size cap while streaming, and
// the time limits.

const LOOPBACK = parseCidrs('127.0.0.0/8');
const servers: http.Server[] = [];
const sockets = new Set<Socket>();

/** A PNG's signature and IHDR (what sniffing and the image probe read), then `extra` bytes of data. */
function png(extra = 0): Buffer {
  const ihdr = Buffer.from('0000000d49484452000000100000001008060000001ff3ff61', 'hex');
  return Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), ihdr, Buffer.alloc(extra, 0x42)]);
}

async function server(handler: http.RequestListener): Promise<{ port: number; url: (p?: string) => string }> {
  const s = http.createServer(handler);
  s.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  servers.push(s);
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  return { port, url: (p = '/file') => `http://127.0.0.1:${port}${p}` };
}

afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  for (const s of servers.splice(0)) await new Promise<void>((resolve) => s.close(() => resolve()));
});

const options = (over: Partial<FetchOptions> = {}): FetchOptions => ({
  policy: { requireHttps: false, allow: LOOPBACK },
  connectTimeoutMs: 2_000,
  firstByteTimeoutMs: 2_000,
  signal: AbortSignal.timeout(10_000),
  ...over,
});

async function drain(chunks: AsyncIterable<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const c of chunks) n += c.length;
  return n;
}

async function refusal(p: Promise<unknown>): Promise<ImportRefusal> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ImportRefusal);
  return err as ImportRefusal;
}

describe('fetchMedia', () => {
  it('reads a PNG whatever the server calls it: the bytes decide the type', async () => {
    const body = png(1000);
    const s = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': body.length });
      res.end(body);
    });
    const fetched = await fetchMedia(s.url(), options());
    expect(fetched.type).toBe('image/png');
    expect(fetched.contentLength).toBe(body.length);
    expect(await drain(fetched.chunks)).toBe(body.length);
  });

  it('refuses an HTML page as unsupported_media_type', async () => {
    const s = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end('<!DOCTYPE html><html><body>not an image</body></html>');
    });
    const err = await refusal(fetchMedia(s.url(), options()));
    expect(err.code).toBe('unsupported_media_type');
    expect(err.message).toMatch(/web page/);
  });

  it('refuses a private address given directly, before any connection', async () => {
    const err = await refusal(fetchMedia('http://10.0.0.7/cat.png', options()));
    expect(err.code).toBe('address_not_allowed');
  });

  it('refuses a name resolving to a private address (every answer checked)', async () => {
    const resolver: Resolver = async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '192.168.1.2', family: 4 },
    ];
    const err = await refusal(fetchMedia('http://media.test/cat.png', options({ resolver })));
    expect(err.code).toBe('address_not_allowed');
    expect(err.message).toMatch(/192\.168\.1\.2/);
  });

  it('follows a redirect to a checked address, and refuses one to the metadata address', async () => {
    const body = png(10);
    let metadataHits = 0;
    const s = await server((req, res) => {
      if (req.url === '/hop') {
        res.writeHead(302, { location: '/file' });
        return res.end();
      }
      if (req.url === '/evil') {
        res.writeHead(301, { location: 'http://169.254.169.254/latest/meta-data/' });
        return res.end();
      }
      if (req.url === '/evil-name') {
        res.writeHead(307, { location: 'http://metadata.test/latest/meta-data/' });
        return res.end();
      }
      res.writeHead(200);
      res.end(body);
    });
    const fetched = await fetchMedia(s.url('/hop'), options());
    expect(fetched.url.pathname).toBe('/file');
    expect(await drain(fetched.chunks)).toBe(body.length);

    const direct = await refusal(fetchMedia(s.url('/evil'), options()));
    expect(direct.code).toBe('address_not_allowed');
    expect(direct.message).toMatch(/^Redirect 1/);

    const resolver: Resolver = async (host) => {
      if (host === 'metadata.test') metadataHits++;
      return [{ address: host === 'metadata.test' ? '169.254.169.254' : '127.0.0.1', family: 4 }];
    };
    const byName = await refusal(fetchMedia(s.url('/evil-name'), options({ resolver })));
    expect(byName.code).toBe('address_not_allowed');
    expect(metadataHits).toBe(1);
  });

  it(`follows at most ${MAX_REDIRECTS} redirects`, async () => {
    const s = await server((req, res) => {
      const n = Number(req.url?.slice(1));
      res.writeHead(302, { location: `/${n + 1}` });
      res.end();
    });
    const err = await refusal(fetchMedia(s.url('/0'), options()));
    expect(err.code).toBe('fetch_failed');
    expect(err.message).toMatch(/more than 5 times/);
  });

  it('refuses credentials in the URL, and what is not an http(s) URL', async () => {
    expect((await refusal(fetchMedia('https://user:pw@example.com/a.png', options()))).code).toBe(
      'credentials_not_allowed',
    );
    expect((await refusal(fetchMedia('not a url', options()))).code).toBe('invalid_url');
    expect((await refusal(fetchMedia('ftp://example.com/a.png', options()))).code).toBe('invalid_url');
    const https = options({ policy: { requireHttps: true, allow: LOOPBACK } });
    expect((await refusal(fetchMedia('http://example.com/a.png', https))).code).toBe('https_required');
  });

  it('refuses a Content-Length over the limit before reading the body', async () => {
    let written = 0;
    const s = await server((_req, res) => {
      // Claims 2 GiB; sends the head only.
      res.writeHead(200, { 'content-length': String(2 * 1024 ** 3) });
      const head = png(100);
      written += head.length;
      res.write(head);
    });
    const err = await refusal(fetchMedia(s.url(), options()));
    expect(err.code).toBe('media_too_large');
    expect(err.message).toMatch(/2048 MiB|1024 MiB/);
    expect(written).toBeGreaterThan(0);
  });

  it("refuses a Content-Length over the sniffed type's limit before the rest is read", async () => {
    const s = await server((_req, res) => {
      res.writeHead(200, { 'content-length': String(30 * 1024 * 1024) });
      res.write(png(70_000)); // the head; 30 MiB claimed, over an image's 20 MiB
    });
    const fetched = fetchMedia(s.url(), options());
    const err = await refusal(fetched);
    expect(err.code).toBe('media_too_large');
    expect(err.message).toMatch(/image\/png files are limited to 20 MiB/);
  });

  it('stops at the limit + 1 byte while streaming a body without Content-Length', async () => {
    const limit = 300_000; // past the sniffed head (64 KiB and a chunk)
    let sent = 0;
    let closed = false;
    const s = await server((req, res) => {
      res.writeHead(200); // chunked: no length to refuse up front
      res.write(png(0));
      sent += png(0).length;
      const chunk = Buffer.alloc(16 * 1024, 1);
      const pump = () => {
        while (!closed && res.write(chunk)) sent += chunk.length;
        if (!closed) res.once('drain', pump);
      };
      req.socket.on('close', () => {
        closed = true;
      });
      pump();
    });
    const fetched = await fetchMedia(s.url(), options({ maxBytes: () => limit }));
    const err = await refusal(drain(fetched.chunks));
    expect(err.code).toBe('media_too_large');
    // Exactly one byte over the limit was taken from the response, never more.
    expect(fetched.bytesRead()).toBe(limit + 1);
    expect(sent).toBeGreaterThan(limit + 1); // the server offered more: the cap is what stopped it
    await new Promise((r) => setTimeout(r, 100));
    expect(closed).toBe(true);
  });

  it('times out a server that accepts the connection and never answers', async () => {
    const s = await server(() => {
      /* never answers */
    });
    const started = Date.now();
    const err = await refusal(fetchMedia(s.url(), options({ firstByteTimeoutMs: 300 })));
    expect(err.code).toBe('fetch_timeout');
    expect(err.message).toMatch(/did not answer within 0.3 s/);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('times out a body that trickles past the budget', async () => {
    const s = await server((_req, res) => {
      res.writeHead(200);
      res.write(png(70_000)); // the head arrives, then nothing
    });
    const budget = new AbortController();
    const fetched = await fetchMedia(s.url(), options({ signal: budget.signal }));
    setTimeout(() => budget.abort(), 200);
    const err = await refusal(drain(fetched.chunks));
    expect(err.code).toBe('fetch_timeout');
  });

  it('answers a server error as fetch_failed', async () => {
    const s = await server((_req, res) => {
      res.writeHead(404);
      res.end('gone');
    });
    const err = await refusal(fetchMedia(s.url(), options()));
    expect(err.code).toBe('fetch_failed');
    expect(err.message).toMatch(/404/);
  });
});
