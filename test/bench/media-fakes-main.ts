import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakePlatforms } from '../fakes/server.ts';
import { type FakeX, createFake as x } from '../fakes/x.ts';
import { type YouTubeFake, createFake as youtube } from '../fakes/youtube.ts';
import { PATTERN_BYTES, pattern } from './media-pattern.ts';

// The media bench's other process (test/bench/media.ts): the YouTube and X contract fakes counting and
// hashing what they receive (never keeping it), and an S3 stand-in whose objects are generated, not
// stored: `GET /<bucket>/gen/<size>/<seed>/<name>` answers the pattern bytes, ranged or whole, as a
// stream. Nothing here runs in the worker's process, so its memory is not the worker's.

const fakes = await new FakePlatforms([youtube(), x()], { keepBodies: false }).start();
fakes.fake<YouTubeFake>('youtube').countOnly = true;
fakes.fake<FakeX>('x').countOnly = true;

const s3 = createServer((req, res) => {
  const m = /^\/[^/]+\/gen\/(\d+)\/(\d+)\//.exec(req.url ?? '');
  if (req.method !== 'GET' || !m) {
    res.writeHead(404, { 'content-type': 'application/xml' }).end('<Error><Code>NoSuchKey</Code></Error>');
    return;
  }
  const size = Number(m[1]);
  const block = pattern(Number(m[2]));
  const r = /^bytes=(\d+)-(\d+)?$/.exec(req.headers.range ?? '');
  const start = r ? Number(r[1]) : 0;
  const end = r ? Math.min(size, r[2] === undefined ? size : Number(r[2]) + 1) : size;
  res.writeHead(r ? 206 : 200, {
    'content-type': 'video/mp4',
    'content-length': String(end - start),
    ...(r ? { 'content-range': `bytes ${start}-${end - 1}/${size}` } : {}),
    etag: '"generated"',
  });
  let at = start;
  const pump = () => {
    while (at < end) {
      const from = at % PATTERN_BYTES;
      const n = Math.min(end - at, PATTERN_BYTES - from, 256 * 1024);
      at += n;
      if (!res.write(block.subarray(from, from + n))) return void res.once('drain', pump);
    }
    res.end();
  };
  pump();
});
await new Promise<void>((ok) => s3.listen(0, '127.0.0.1', ok));

const send = (msg: unknown) => process.send?.(msg);
send({
  ready: true,
  youtube: fakes.url('youtube'),
  x: fakes.url('x'),
  s3: `http://127.0.0.1:${(s3.address() as AddressInfo).port}`,
});

process.on('message', (msg: { state?: boolean; reset?: boolean }) => {
  if (msg.reset) {
    fakes.reset();
    fakes.fake<YouTubeFake>('youtube').countOnly = true;
    fakes.fake<FakeX>('x').countOnly = true;
    return send({ reset: true });
  }
  if (msg.state) {
    const yt = fakes.fake<YouTubeFake>('youtube');
    const xf = fakes.fake<FakeX>('x');
    send({
      state: true,
      rssMb: process.memoryUsage.rss() / 2 ** 20,
      youtube: yt.videos.map((v) => ({ id: v.id, size: v.size, sha256: v.sha256 })),
      x: [...xf.media.values()].map((m) => ({ id: m.id, size: m.size, sha256: m.sha256 })),
      tweets: xf.posts.map((p) => p.media.map((m) => m.id)),
    });
  }
});
process.on('disconnect', () => process.exit(0));
