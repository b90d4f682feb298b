import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffmpegPath } from '#adapters/media-tools';
import { makeSamples, type Samples } from '../support/media-samples.ts';
import {
  api,
  dangerous,
  fakeState,
  loopbackOrigin,
  type Workspace,
  waitForPost,
  workspace,
} from './helpers.ts';

// Link cards on Bluesky over the local stack: the delivery worker reads a page this test serves on
// loopback (exempted by the stack's HERALD_WEBHOOK_ALLOW_CIDRS=127.0.0.0/8, as for the webhook
// receivers and media imports), uploads its og:image as the thumb blob and embeds
// app.bsky.embed.external; a page that cannot be read publishes the post without a card and the
// delivery's warnings say so; link_card: false reads nothing.

type Json = Record<string, unknown>;
interface Delivery {
  channel_id: string;
  stage: string;
  warnings: Array<{ code: string; detail: string }>;
}
interface Post {
  id: string;
  status: string;
  deliveries: Delivery[];
}
interface FakePost {
  text: string;
  record: { embed?: Json };
  external?: {
    uri: string;
    title: string;
    description: string;
    thumb: { mimeType: string; bytes: string } | null;
  };
}

let samples: Samples;
let ws: Workspace;
let origin: string;
const hits = new Map<string, number>();
let png: Buffer;
/** A photo-like JPEG over Bluesky's 1,000,000-byte blob limit. */
let big: Buffer;

beforeAll(async () => {
  samples = await makeSamples(mkdtempSync(join(tmpdir(), 'herald-cards-e2e-')));
  ws = await workspace(['bluesky']);
  await dangerous(ws, true);
  png = readFileSync(samples.files.png.path);
  const bigPath = join(samples.dir, 'card-big.jpg');
  execFileSync(ffmpegPath(), [
    ...['-v', 'error', '-nostdin', '-y', '-f', 'lavfi'],
    ...['-i', 'testsrc=size=1600x1200:rate=1,noise=alls=40:allf=t', '-frames:v', '1', '-q:v', '2', bigPath],
  ]);
  big = readFileSync(bigPath);
  origin = await loopbackOrigin((req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path.startsWith('/photo-story')) {
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end(
        '<head><meta property="og:title" content="A big photo"><meta property="og:image" content="/images/big.jpg"></head>',
      );
    }
    if (path === '/images/big.jpg') {
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': big.length });
      return res.end(big);
    }
    if (path.startsWith('/article')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return res.end(`<!doctype html><html><head>
        <title>Fallback title</title>
        <meta property="og:title" content="Herald ships link cards">
        <meta property="og:description" content="Bluesky posts get a preview of the page they link.">
        <meta property="og:image" content="/images/card.png">
      </head><body><p>The article.</p></body></html>`);
    }
    if (path === '/images/card.png') {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
      return res.end(png);
    }
    if (path === '/to-metadata') {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
      return res.end();
    }
    res.writeHead(404, { 'content-type': 'text/html' });
    res.end('<title>Not found</title>');
  });
}, 120_000);

afterAll(async () => {
  rmSync(samples.dir, { recursive: true, force: true });
});

/** Publishes `body` to the Bluesky channel now and waits for the delivery to settle. */
async function publish(body: string, options: Json = {}): Promise<{ post: Post; onFake: FakePost }> {
  const res = await api<Post>('POST', '/v1/posts', {
    key: ws.key,
    body: { variants: [{ channel_id: ws.channels.bluesky, body, options }], publish_now: true },
  });
  expect(res.status, res.text).toBe(201);
  const post = await waitForPost<Post>(
    ws.key,
    res.body.id,
    (p) => p.status !== 'publishing' && p.status !== 'scheduled',
  );
  expect(post.status, JSON.stringify(post)).toBe('published');
  const onFake = ((await fakeState('bluesky')).posts as unknown as FakePost[]).filter((p) => p.text === body);
  expect(onFake).toHaveLength(1);
  return { post, onFake: onFake[0] as FakePost };
}

describe('link cards on Bluesky', () => {
  it('a post with a URL gets a card with the page title, description and its image as the thumb', async () => {
    const url = `${origin}/article?id=${Date.now()}`;
    const { post, onFake } = await publish(`New on the blog: ${url}`);
    expect(post.deliveries[0]?.warnings).toEqual([]);
    expect(onFake.record.embed?.$type).toBe('app.bsky.embed.external');
    expect(onFake.external).toMatchObject({
      uri: url,
      title: 'Herald ships link cards',
      description: 'Bluesky posts get a preview of the page they link.',
      thumb: { mimeType: 'image/png' },
    });
    expect(Buffer.from(onFake.external?.thumb?.bytes ?? '', 'base64').equals(png)).toBe(true);
  });

  it('an image over 1,000,000 bytes is re-encoded by the fit function into a JPEG thumb within the limit', async () => {
    expect(big.length).toBeGreaterThan(1_000_000);
    const url = `${origin}/photo-story?id=${Date.now()}`;
    const { post, onFake } = await publish(`Look: ${url}`);
    expect(post.deliveries[0]?.warnings).toEqual([]);
    expect(onFake.external).toMatchObject({ uri: url, title: 'A big photo', description: '' });
    expect(onFake.external?.thumb?.mimeType).toBe('image/jpeg');
    const thumb = Buffer.from(onFake.external?.thumb?.bytes ?? '', 'base64');
    expect(thumb.length).toBeGreaterThan(10_000);
    expect(thumb.length).toBeLessThanOrEqual(1_000_000);
    expect(thumb.subarray(0, 3).equals(Buffer.from([0xff, 0xd8, 0xff]))).toBe(true);
  });

  it('a page that 404s publishes without a card; the delivery warns link_card_unavailable', async () => {
    const url = `${origin}/missing-${Date.now()}`;
    const { post, onFake } = await publish(`Broken link ${url}`);
    expect(onFake.record.embed).toBeUndefined();
    expect(post.deliveries[0]?.warnings).toEqual([
      { code: 'link_card_unavailable', detail: `No link card for ${url}: The page answered HTTP 404.` },
    ]);
  });

  it('a page that redirects to the metadata address publishes without a card; the warning says why', async () => {
    const { post, onFake } = await publish(`Sneaky ${origin}/to-metadata #${Date.now()}`);
    expect(onFake.record.embed).toBeUndefined();
    const [warning] = post.deliveries[0]?.warnings ?? [];
    expect(warning?.code).toBe('link_card_unavailable');
    expect(warning?.detail).toMatch(
      /^No link card for .*\/to-metadata: Redirect 1 points at a private, loopback, link-local or metadata address/,
    );
  });

  it('link_card: false reads no page and embeds no card', async () => {
    const path = `/article?off=${Date.now()}`;
    const { post, onFake } = await publish(`No card please ${origin}${path}`, { link_card: false });
    expect(onFake.record.embed).toBeUndefined();
    expect(post.deliveries[0]?.warnings).toEqual([]);
    expect(hits.get(path)).toBeUndefined();
  });
});
