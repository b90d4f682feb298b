import { beforeAll, describe, expect, it } from 'vitest';
import {
  api,
  dangerous,
  failPlatform,
  fakeState,
  loopbackOrigin,
  uploadMedia,
  type Workspace,
  waitForPost,
  workspace,
} from './helpers.ts';

// LinkedIn's formats over HTTP against the local stack and LinkedIn's contract fake: a PDF as a
// document post (Documents API), a poll (content.poll), a document post whose first attempt fails
// after the upload (retried without a second upload or a second post), and a link card: the page
// this test serves on loopback (allowed by the stack's HERALD_WEBHOOK_ALLOW_CIDRS) posted as an
// article with its image uploaded through the Images API.

type Json = Record<string, unknown>;
type Delivery = {
  channel_id: string;
  stage: string;
  external_id: string | null;
  error: string | null;
  warnings?: Array<{ code: string; detail: string }>;
};
type Post = { id: string; status: string; deliveries: Delivery[] };
type FakePost = {
  urn: string;
  commentary: string;
  body: { content?: Json };
  document?: { urn: string; title: string };
  poll?: { question: string; options: string[]; duration: string };
  article?: { source: string; title: string; description: string | null; thumbnail: string | null };
};

let ws: Workspace;
let origin: string;
// A 1×1 PNG: the card's og:image.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

beforeAll(async () => {
  ws = await workspace(['linkedin']);
  await dangerous(ws, true);
  origin = await loopbackOrigin((req, res) => {
    const path = req.url ?? '/';
    if (path.startsWith('/story')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return res.end(`<!doctype html><html><head>
        <meta property="og:title" content="Herald on LinkedIn">
        <meta property="og:description" content="Posts with a link get their card.">
        <meta property="og:image" content="/card.png">
      </head><body>The story.</body></html>`);
    }
    if (path === '/card.png') {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': PNG.length });
      return res.end(PNG);
    }
    res.writeHead(404, { 'content-type': 'text/html' });
    res.end('<title>Not found</title>');
  });
}, 60_000);

/** A small well-formed PDF of `pages` pages. */
function pdf(pages: number, marker: string): Buffer {
  const kids = Array.from({ length: pages }, (_, i) => `${i + 3} 0 R`).join(' ');
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${kids}] /Count ${pages} >>`,
    ...Array.from({ length: pages }, () => '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>'),
  ];
  let out = `%PDF-1.4\n% ${marker}\n`;
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const at of offsets) out += `${String(at).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

const uploadPdf = async (bytes: Buffer, filename: string): Promise<string> =>
  (await uploadMedia(ws.key, bytes, filename, 'application/pdf')).url;

async function publishNow(variant: Json, title: string | null = null): Promise<Post> {
  const res = await api<Post>('POST', '/v1/posts', {
    key: ws.key,
    body: { title, publish_now: true, variants: [{ channel_id: ws.channels.linkedin, ...variant }] },
  });
  expect(res.status, res.text).toBe(201);
  return waitForPost<Post>(ws.key, res.body.id, (p) =>
    p.deliveries.every((d) => d.stage === 'published' || d.stage === 'failed'),
  );
}

async function fakePostsWith(marker: string): Promise<FakePost[]> {
  const state = await fakeState('linkedin');
  return ((state.posts ?? []) as FakePost[]).filter((p) => p.commentary.includes(marker));
}

const requestsTo = async (method: string, path: RegExp) =>
  (await fakeState('linkedin')).requests.filter((r) => r.method === method && path.test(r.path));

describe('LinkedIn formats end to end', () => {
  it('a PDF as a document post: uploaded through the Documents API, posted once with its title', async () => {
    const marker = `doc-${Date.now()}`;
    const url = await uploadPdf(pdf(4, marker), 'q3-deck.pdf');
    const post = await publishNow({
      body: `The Q3 deck ${marker}`,
      media: [{ url, type: 'document' }],
      options: { format: 'document', document_title: 'Q3 in four pages' },
    });
    const d = post.deliveries[0];
    expect(d?.stage, JSON.stringify(d)).toBe('published');
    const [onFake, ...more] = await fakePostsWith(marker);
    expect(more).toEqual([]);
    expect(onFake?.urn).toBe(d?.external_id);
    expect(onFake?.document?.title).toBe('Q3 in four pages');
    expect(onFake?.body.content).toEqual({ media: { id: onFake?.document?.urn, title: 'Q3 in four pages' } });
  });

  it('a poll: the title is the question, the choices and the duration as LinkedIn stores them', async () => {
    const marker = `poll-${Date.now()}`;
    const post = await publishNow(
      {
        body: `Tell us ${marker}`,
        options: { poll: { choices: ['Monday', 'Wednesday', 'Friday'], duration_minutes: 1440 } },
      },
      'Which day for the launch?',
    );
    expect(post.deliveries[0]?.stage, JSON.stringify(post)).toBe('published');
    const [onFake, ...more] = await fakePostsWith(marker);
    expect(more).toEqual([]);
    expect(onFake?.poll).toEqual({
      question: 'Which day for the launch?',
      options: ['Monday', 'Wednesday', 'Friday'],
      duration: 'ONE_DAY',
    });
  });

  it('the post call fails after the document was uploaded: the retry reuses the document, one post', async () => {
    const marker = `doc-retry-${Date.now()}`;
    const url = await uploadPdf(pdf(2, marker), 'retry.pdf');
    // LinkedIn answers the first POST /rest/posts of this post 500 (it may or may not have acted).
    await failPlatform('linkedin', {
      status: 500,
      body: { status: 500, message: 'Internal Server Error' },
      pathPattern: '^/rest/posts$',
      bodyIncludes: marker,
    });
    const post = await publishNow({
      body: `Retried deck ${marker}`,
      media: [{ url, type: 'document' }],
      options: { format: 'document' },
    });
    expect(post.deliveries[0]?.stage, JSON.stringify(post)).toBe('published');
    const posted = await fakePostsWith(marker);
    expect(posted).toHaveLength(1);
    const documentUrn = posted[0]?.document?.urn ?? '';
    expect(posted[0]?.document?.title).toBe('retry.pdf');
    // One upload of that document: the retry went straight to the post.
    const puts = await requestsTo('PUT', /^\/dms-uploads\/document\//);
    expect(puts.filter((r) => decodeURIComponent(r.path).endsWith(documentUrn))).toHaveLength(1);
    const creates = (await requestsTo('POST', /^\/rest\/posts$/)).filter((r) =>
      JSON.stringify(r.json).includes(marker),
    );
    expect(creates).toHaveLength(2);
    expect(
      creates.map((r) => (r.json as { content?: { media?: { id?: string } } }).content?.media?.id),
    ).toEqual([documentUrn, documentUrn]);
  });

  it('a link card: an article of the page read by Herald, its image uploaded as the thumbnail', async () => {
    const url = `${origin}/story?id=${Date.now()}`;
    const marker = `card-${Date.now()}`;
    const post = await publishNow({ body: `Read ${marker}: ${url}` });
    const d = post.deliveries[0];
    expect(d?.stage, JSON.stringify(post)).toBe('published');
    expect(d?.warnings ?? []).toEqual([]);
    const [onFake, ...more] = await fakePostsWith(marker);
    expect(more).toEqual([]);
    expect(onFake?.article).toMatchObject({
      source: url,
      title: 'Herald on LinkedIn',
      description: 'Posts with a link get their card.',
    });
    expect(Buffer.from(onFake?.article?.thumbnail ?? '', 'base64').equals(PNG)).toBe(true);
    const thumb = (onFake?.body.content as { article?: { thumbnail?: string } } | undefined)?.article
      ?.thumbnail;
    expect(thumb).toMatch(/^urn:li:image:/);
  });

  it('a page that cannot be read: the post goes without a card and the delivery says so', async () => {
    const url = `${origin}/gone-${Date.now()}`;
    const marker = `nocard-${Date.now()}`;
    const post = await publishNow({ body: `Broken ${marker} ${url}` });
    const d = post.deliveries[0];
    expect(d?.stage, JSON.stringify(post)).toBe('published');
    expect(d?.warnings?.map((w) => w.code)).toEqual(['link_card_unavailable']);
    const [onFake] = await fakePostsWith(marker);
    expect(onFake?.body.content).toBeUndefined();
  });

  it('link_card: false posts the text alone', async () => {
    const marker = `off-${Date.now()}`;
    const post = await publishNow({
      body: `No card ${marker} ${origin}/story?off=1`,
      options: { link_card: false },
    });
    expect(post.deliveries[0]?.stage, JSON.stringify(post)).toBe('published');
    const [onFake] = await fakePostsWith(marker);
    expect(onFake?.body.content).toBeUndefined();
  });
});
