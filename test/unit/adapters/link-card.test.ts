import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type CardReadOptions,
  CardTagReader,
  charsetOf,
  clamp,
  LinkCardUnavailable,
  PAGE_MAX_BYTES,
  readCardImage,
  readPageMeta,
} from '#adapters/link-card';
import { parseCidrs } from '#core/address-policy';

// Link cards' page read against loopback servers: the tags (Open Graph, Twitter, <title>), the
// charset, the 1 MiB and 5 s limits, HTML only, and the address policy on every redirect. The
// servers listen on 127.0.0.2, the one address the policy allows here, so a redirect to 127.0.0.1
// (loopback but not exempted) is refused like any private address.

const servers: http.Server[] = [];
const sockets = new Set<Socket>();
const HOST = '127.0.0.2';

async function server(handler: http.RequestListener, host = HOST) {
  const s = http.createServer(handler);
  s.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  servers.push(s);
  await new Promise<void>((resolve) => s.listen(0, host, resolve));
  const port = (s.address() as AddressInfo).port;
  return { port, url: (p = '/page') => `http://${host}:${port}${p}` };
}

afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  for (const s of servers.splice(0)) await new Promise<void>((resolve) => s.close(() => resolve()));
});

const options = (over: Partial<CardReadOptions> = {}): CardReadOptions => ({
  policy: { requireHttps: false, allow: parseCidrs(`${HOST}/32`) },
  ...over,
});

async function refusal(p: Promise<unknown>): Promise<LinkCardUnavailable> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LinkCardUnavailable);
  return err as LinkCardUnavailable;
}

async function tags(html: string, base = 'https://example.com/blog/post') {
  const r = await CardTagReader.open(new URL(base));
  r.write(html);
  return r.end();
}

const png = (extra = 0) =>
  Buffer.concat([
    Buffer.from('89504e470d0a1a0a0000000d49484452000000100000001008060000001ff3ff61', 'hex'),
    Buffer.alloc(extra, 0x42),
  ]);

describe('the card tags', async () => {
  it('reads Open Graph first, its image resolved against the page, entities decoded', async () => {
    expect(
      await tags(`<!doctype html><html><head>
        <title>Plain title</title>
        <meta name="description" content="Plain description">
        <meta property="og:title" content="Launch &amp; learn">
        <meta property="og:description" content="  What   we\n shipped  ">
        <meta property="og:image" content="/img/card.png">
        <meta property="og:image" content="/img/second.png">
        <meta name="twitter:title" content="Twitter title">
      </head><body></body></html>`),
    ).toEqual({
      title: 'Launch & learn',
      description: 'What we shipped',
      imageUrl: 'https://example.com/img/card.png',
    });
  });

  it('falls back to Twitter tags, then to <title> and <meta name="description">', async () => {
    expect(
      await tags(`<head><meta name="twitter:title" content="T title"><meta name="twitter:description" content="T desc">
        <meta name="twitter:image" content="https://cdn.example.net/t.jpg"><title>Plain</title></head>`),
    ).toEqual({ title: 'T title', description: 'T desc', imageUrl: 'https://cdn.example.net/t.jpg' });
    expect(
      await tags(
        '<html><head><TITLE>  Only a\ttitle </TITLE><META NAME="Description" CONTENT="Words"></head>',
      ),
    ).toEqual({ title: 'Only a title', description: 'Words', imageUrl: null });
  });

  it('takes og:image:secure_url before og:image, and skips an image that is not an http(s) URL', async () => {
    expect(
      (
        await tags(
          '<meta property="og:image" content="http://e.com/a.png"><meta property="og:image:secure_url" content="https://e.com/a.png"><title>x</title>',
        )
      ).imageUrl,
    ).toBe('https://e.com/a.png');
    expect(
      (await tags('<meta property="og:image" content="data:image/png;base64,AAAA"><title>x</title>'))
        .imageUrl,
    ).toBe(null);
  });

  it('ignores an SVG <title> and keeps the first document title', async () => {
    expect(
      (await tags('<head><title>Doc</title></head><body><svg><title>Icon</title></svg><title>Later</title>'))
        .title,
    ).toBe('Doc');
    expect((await tags('<body><svg><title>Icon</title></svg></body>')).title).toBe('');
  });

  it('clamps a long title and description at a word, with an ellipsis', async () => {
    const long = `${'word '.repeat(100)}end`;
    const t = await tags(
      `<meta property="og:title" content="${long}"><meta property="og:description" content="${'x'.repeat(2000)}">`,
    );
    expect([...t.title].length).toBeLessThanOrEqual(300);
    expect(t.title.endsWith('word…')).toBe(true);
    expect([...t.description].length).toBe(1000);
    expect(clamp('short', 300)).toBe('short');
  });
});

describe('the charset', () => {
  it('takes a BOM, then the Content-Type, then a <meta> in the first 1024 bytes, else UTF-8', () => {
    expect(charsetOf('text/html; charset=iso-8859-1', Buffer.from([0xef, 0xbb, 0xbf, 0x3c]))).toBe('utf-8');
    expect(charsetOf('text/html; charset=ISO-8859-1', Buffer.from('<meta charset="utf-8">'))).toBe(
      'iso-8859-1',
    );
    expect(charsetOf('text/html', Buffer.from('<meta charset="windows-1252">'))).toBe('windows-1252');
    expect(
      charsetOf(
        'text/html',
        Buffer.from('<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">'),
      ),
    ).toBe('shift_jis');
    expect(charsetOf('text/html; charset=nonsense', Buffer.from('<p>'))).toBe('utf-8');
    expect(charsetOf('', Buffer.from(`${' '.repeat(1100)}<meta charset="koi8-r">`))).toBe('utf-8');
  });

  it('decodes a Latin-1 page by its <meta> and a Shift_JIS page by its header', async () => {
    const latin1 = Buffer.from(
      '<html><head><meta charset="iso-8859-1"><meta property="og:title" content="Café crème"></head>',
      'latin1',
    );
    const sjis = Buffer.from(
      '3c7469746c653e93fa967b8cea3c2f7469746c653e', // <title>日本語</title> in Shift_JIS
      'hex',
    );
    const s = await server((req, res) => {
      if (req.url === '/latin1') {
        res.writeHead(200, { 'content-type': 'text/html' });
        return res.end(latin1);
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=Shift_JIS' });
      res.end(sjis);
    });
    expect((await readPageMeta(s.url('/latin1'), options())).title).toBe('Café crème');
    expect((await readPageMeta(s.url('/sjis'), options())).title).toBe('日本語');
  });

  it('decodes a multi-byte character split across chunks', async () => {
    const s = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      // Past the 1024 bytes the charset is decided on, so the split lands in the streamed part.
      const html = Buffer.from(`<!-- ${'a'.repeat(1500)} --><title>${'a'.repeat(100)} – ünïcødé</title>`);
      const cut = html.indexOf(Buffer.from('ü')) + 1; // inside the two bytes of ü
      res.write(html.subarray(0, cut));
      setTimeout(() => res.end(html.subarray(cut)), 20);
    });
    expect((await readPageMeta(s.url(), options())).title).toMatch(/– ünïcødé$/);
  });
});

describe('readPageMeta', () => {
  it('follows a redirect within the policy and reads the page it lands on', async () => {
    const s = await server((req, res) => {
      if (req.url === '/short') {
        res.writeHead(301, { location: '/long/article' });
        return res.end();
      }
      expect(req.headers.accept).toMatch(/^text\/html/);
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(
        '<head><meta property="og:title" content="Article"><meta property="og:image" content="hero.png"></head>',
      );
    });
    const meta = await readPageMeta(s.url('/short'), options());
    expect(meta).toMatchObject({
      url: s.url('/long/article'),
      title: 'Article',
      description: '',
      imageUrl: s.url('/long/hero.png'),
    });
  });

  it('stops reading at 1 MiB of a body that never ends (a 5 GB Content-Length is not read)', async () => {
    let written = 0;
    let closed = false;
    const s = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': String(5 * 1024 ** 3) });
      res.write('<html><head><meta property="og:title" content="Big">');
      const block = Buffer.alloc(64 * 1024, 0x20);
      const pump = () => {
        while (!closed && written < 5 * 1024 ** 3 && res.write(block)) written += block.length;
        if (!closed) res.once('drain', pump);
      };
      res.on('close', () => {
        closed = true;
      });
      pump();
    });
    const meta = await readPageMeta(s.url(), options());
    expect(meta.title).toBe('Big');
    expect(meta.bytesRead).toBe(PAGE_MAX_BYTES);
    await new Promise((r) => setTimeout(r, 100));
    expect(closed).toBe(true);
    // What the server managed to push into the socket buffers before the close, not 5 GB.
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('says no card when the first 1 MiB has no tags', async () => {
    const s = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.write('<html><body>');
      res.end(Buffer.alloc(2 * 1024 * 1024, 0x61));
    });
    const err = await refusal(readPageMeta(s.url(), options()));
    expect(err.message).toBe('The page has no Open Graph, Twitter or <title> tags in its first 1024 KiB.');
  });

  it('stops at the body once a title is known: the rest of the page is not read', async () => {
    let closed = false;
    const s = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.write(`<html><head><title>Early</title></head><body>${' '.repeat(2048)}`);
      res.on('close', () => {
        closed = true;
      }); // never ends
    });
    const meta = await readPageMeta(s.url(), options({ budgetMs: 2_000 }));
    expect(meta.title).toBe('Early');
    expect(meta.bytesRead).toBeLessThan(4096);
    await new Promise((r) => setTimeout(r, 50));
    expect(closed).toBe(true);
  });

  it('refuses a redirect to 127.0.0.1 (loopback, not exempted) and to the metadata address', async () => {
    let hitsOther = 0;
    const other = await server((_req, res) => {
      hitsOther++;
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<title>private</title>');
    }, '127.0.0.1');
    const s = await server((req, res) => {
      if (req.url === '/to-loopback') res.writeHead(302, { location: `http://127.0.0.1:${other.port}/` });
      else res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
      res.end();
    });
    const loop = await refusal(readPageMeta(s.url('/to-loopback'), options()));
    expect(loop.message).toMatch(/^Redirect 1 points at a private, loopback, link-local or metadata address/);
    const meta = await refusal(readPageMeta(s.url('/to-metadata'), options()));
    expect(meta.message).toMatch(/^Redirect 1 points at a private, loopback, link-local or metadata address/);
    expect(hitsOther).toBe(0);
  });

  it('refuses a name that resolves to a private address', async () => {
    const err = await refusal(
      readPageMeta(
        'http://cards.example.test/',
        options({ resolver: async () => [{ address: '10.1.2.3', family: 4 }] }),
      ),
    );
    expect(err.message).toMatch(/resolves to 10\.1\.2\.3/);
  });

  it('refuses http where https is required', async () => {
    const err = await refusal(
      readPageMeta('http://example.com/', options({ policy: { requireHttps: true, allow: [] } })),
    );
    expect(err.message).toBe('The URL must use https.');
  });

  it('times out a slow page within its budget', async () => {
    const s = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.write('<html><head>');
      const t = setInterval(() => res.write(' '), 100); // a byte now and then, never the tags
      res.on('close', () => clearInterval(t));
    });
    const started = Date.now();
    const err = await refusal(readPageMeta(s.url(), options({ budgetMs: 600 })));
    expect(err.message).toBe('The page was not read within 0.6 s.');
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('times out a server that never answers', async () => {
    const s = await server(() => {});
    const err = await refusal(readPageMeta(s.url(), options({ budgetMs: 500 })));
    expect(err.message).toMatch(
      /^The URL: the server did not answer within 0\.5 s\.|^The page was not read within 0\.5 s\./,
    );
  });

  it('reads only HTML, and says what the server answered otherwise', async () => {
    const s = await server((req, res) => {
      if (req.url === '/json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end('{"title": "no"}');
      }
      if (req.url === '/untyped') {
        res.writeHead(200);
        return res.end('<!DOCTYPE html><title>Untyped</title>');
      }
      if (req.url === '/binary') {
        res.writeHead(200);
        return res.end(png(100));
      }
      res.writeHead(404, { 'content-type': 'text/html' });
      res.end('<title>Not found</title>');
    });
    expect((await refusal(readPageMeta(s.url('/json'), options()))).message).toBe(
      'The page is application/json, not an HTML page.',
    );
    expect((await refusal(readPageMeta(s.url('/missing'), options()))).message).toBe(
      'The page answered HTTP 404.',
    );
    expect((await refusal(readPageMeta(s.url('/binary'), options()))).message).toBe(
      'The page is not an HTML page.',
    );
    expect((await readPageMeta(s.url('/untyped'), options())).title).toBe('Untyped');
  });
});

describe('readCardImage', () => {
  it('reads an image by its bytes, and refuses one over the limit or a page posing as one', async () => {
    const s = await server((req, res) => {
      if (req.url === '/big.png') {
        res.writeHead(200, { 'content-type': 'image/png' });
        return res.end(png(3000));
      }
      if (req.url === '/page.png') {
        res.writeHead(200, { 'content-type': 'image/png' });
        return res.end('<!doctype html><title>no</title>');
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(png(100));
    });
    const image = await readCardImage(s.url('/card'), options());
    expect(image.contentType).toBe('image/png');
    expect(image.bytes.length).toBe(png(100).length);
    expect(
      (await refusal(readCardImage(s.url('/big.png'), options({ maxImageBytes: 1000 } as never)))).message,
    ).toMatch(/larger than 1000 bytes/);
    expect((await refusal(readCardImage(s.url('/page.png'), options()))).message).toMatch(/web page/);
  });
});
