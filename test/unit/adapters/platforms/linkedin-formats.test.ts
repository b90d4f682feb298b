import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { REST_HEADERS } from '#adapters/platforms/linkedin/client';
import { POLL_DURATIONS } from '#adapters/platforms/linkedin/formats';
import { connector } from '#adapters/platforms/linkedin/index';
import type { PublishContext } from '#adapters/platforms/types';
import type { DeliveryWarningCode } from '#core/constants';
import type { LinkCard } from '#core/link-cards';
import { createFake, type FakeLinkedIn } from '../../../fakes/linkedin.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { type Checkpoint, failure, mediaInput, publishContext } from './context.ts';

// LinkedIn's post formats against the contract fake: a PDF as a document post (Documents API), a
// poll (content.poll), a link card as an article (content.article with an Images API thumbnail).

let fakes: FakePlatforms;
let fake: FakeLinkedIn;
const env = { ...process.env };
const AUTHOR = 'urn:li:person:8675309';

beforeAll(async () => {
  fakes = await new FakePlatforms([createFake()]).start();
  fake = fakes.fake<FakeLinkedIn>('linkedin');
});
afterAll(() => fakes.stop());
beforeEach(() => {
  fakes.reset();
  process.env.HERALD_PLATFORM_LINKEDIN_URL = fakes.url('linkedin');
});
afterEach(() => {
  process.env = { ...env };
});

/** A small well-formed PDF of `pages` pages (what the fake and LinkedIn count as pages). */
function pdf(pages: number): Uint8Array {
  const kids = Array.from({ length: pages }, (_, i) => `${i + 3} 0 R`).join(' ');
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${kids}] /Count ${pages} >>`,
    ...Array.from({ length: pages }, () => '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>'),
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const at of offsets) out += `${String(at).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return new Uint8Array(Buffer.from(out, 'latin1'));
}

const pdfMedia = (bytes = pdf(3), filename = 'deck.pdf') =>
  mediaInput(bytes, 'document', 'application/pdf', { filename });

const context = (over: Partial<PublishContext> = {}, opts: { keepCheckpoint?: boolean } = {}) =>
  publishContext(
    {
      channel: { id: 'ch_1', handle: 'acme', platform: 'linkedin' },
      credentials: { access_token: 'token', account_id: AUTHOR },
      ...over,
    },
    opts,
  );

const calls = (method: string, path: RegExp) =>
  fakes.requests('linkedin').filter((r) => r.method === method && path.test(r.path));

/** A POST /rest/posts straight to the fake, as any client would send it. */
async function rawPost(content: unknown): Promise<{ status: number; body: { message?: string } }> {
  const res = await fetch(`${fakes.url('linkedin')}/rest/posts`, {
    method: 'POST',
    headers: { authorization: 'Bearer token', 'content-type': 'application/json', ...REST_HEADERS },
    body: JSON.stringify({
      author: AUTHOR,
      commentary: `raw ${Math.random()}`,
      visibility: 'PUBLIC',
      distribution: { feedDistribution: 'MAIN_FEED', targetEntities: [], thirdPartyDistributionChannels: [] },
      lifecycleState: 'PUBLISHED',
      content,
    }),
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as { message?: string } };
}

describe('document posts', () => {
  it('initializeUpload on /rest/documents, PUT the PDF, wait for AVAILABLE, post content.media {id, title}', async () => {
    fake.processingPolls = 2;
    const bytes = pdf(3);
    const { ctx, checkpoints } = context({
      text: 'Our Q3 deck',
      options: { format: 'document', document_title: 'Q3 results' },
      media: [pdfMedia(bytes)],
    });
    const result = await connector.publish(ctx);

    expect(calls('POST', /^\/rest\/documents$/)[0]?.json).toEqual({
      initializeUploadRequest: { owner: AUTHOR },
    });
    expect(calls('POST', /^\/rest\/documents$/)[0]?.query.get('action')).toBe('initializeUpload');
    expect(calls('PUT', /^\/dms-uploads\/document\//)).toHaveLength(1);
    // PROCESSING twice, then AVAILABLE.
    expect(calls('GET', /^\/rest\/documents\//)).toHaveLength(3);
    const post = fake.posts[0];
    const urn = post?.document?.urn ?? '';
    expect(urn).toMatch(/^urn:li:document:/);
    expect(post?.body.content).toEqual({ media: { id: urn, title: 'Q3 results' } });
    expect(Buffer.compare(post?.media[0]?.bytes ?? Buffer.alloc(0), Buffer.from(bytes))).toBe(0);
    expect(result.externalId).toBe(post?.urn);
    // The document's URN is saved before the post, then the posting checkpoint names it too.
    expect(checkpoints).toEqual([
      { stage: 'document', document: urn },
      { stage: 'posting', media: [urn], document: urn, sentAt: expect.any(String) },
    ]);
  });

  it("the title: document_title, else the post's title, else the file's name", async () => {
    await connector.publish(
      context({ text: 'a', title: 'The post title', options: { format: 'document' }, media: [pdfMedia()] })
        .ctx,
    );
    await connector.publish(
      context({ text: 'b', options: { format: 'document' }, media: [pdfMedia(pdf(1), 'handbook.pdf')] }).ctx,
    );
    expect(fake.posts.map((p) => p.document?.title)).toEqual(['The post title', 'handbook.pdf']);
  });

  it('a file LinkedIn cannot process (not a PDF, or over 300 pages) is media_error, nothing posted', async () => {
    const notPdf = await failure(
      connector.publish(
        context({
          options: { format: 'document' },
          media: [pdfMedia(new Uint8Array(Buffer.from('<html>not a pdf</html>')))],
        }).ctx,
      ),
    );
    expect(notPdf.category).toBe('media_error');
    expect(notPdf.message).toMatch(/processing failed/);
    const long = await failure(
      connector.publish(context({ options: { format: 'document' }, media: [pdfMedia(pdf(301))] }).ctx),
    );
    expect(long.category).toBe('media_error');
    expect(fake.posts).toHaveLength(0);
  });

  it('a document post takes exactly one PDF; a PDF outside a document post is refused', async () => {
    const two = await failure(
      connector.publish(context({ options: { format: 'document' }, media: [pdfMedia(), pdfMedia()] }).ctx),
    );
    expect(two.category).toBe('media_error');
    const stray = await failure(connector.publish(context({ media: [pdfMedia()] }).ctx));
    expect(stray.category).toBe('media_error');
    expect(stray.message).toMatch(/format "document"/);
    expect(fakes.requests('linkedin')).toHaveLength(0);
  });

  it('killed after the PUT, before the post: the next attempt reuses the document and posts once', async () => {
    // Attempt 1 uploads the PDF, saves the document checkpoint, and dies before POST /rest/posts
    // (its posting checkpoint never lands, as when the Lambda stops there).
    const first = context({
      text: 'Deck, crash-tested',
      options: { format: 'document' },
      media: [pdfMedia()],
    });
    const saved: Checkpoint[] = [];
    first.ctx.saveCheckpoint = async (cp) => {
      if (cp.stage === 'posting') throw new Error('worker killed');
      saved.push(structuredClone(cp));
    };
    await expect(connector.publish(first.ctx)).rejects.toThrow('worker killed');
    expect(fake.posts).toHaveLength(0);
    const urn = String(saved[0]?.document);
    expect(urn).toMatch(/^urn:li:document:/);

    // Attempt 2 (the redelivery): reconcile knows no post was sent; publish reuses the document.
    const second = context({
      text: 'Deck, crash-tested',
      options: { format: 'document' },
      media: [pdfMedia()],
      checkpoint: saved[0] ?? null,
    });
    expect(await connector.reconcile(second.ctx)).toBeNull();
    const result = await connector.publish(second.ctx);
    expect(calls('POST', /^\/rest\/documents$/)).toHaveLength(1);
    expect(calls('PUT', /^\/dms-uploads\/document\//)).toHaveLength(1);
    expect(fake.posts).toHaveLength(1);
    expect(fake.posts[0]?.document?.urn).toBe(urn);
    expect(result.externalId).toBe(fake.posts[0]?.urn);
  });

  it('killed while LinkedIn still processed the document: the retry waits for the same one', async () => {
    fake.processingPolls = 100;
    const first = context({ text: 'Slow deck', options: { format: 'document' }, media: [pdfMedia()] });
    const saved: Checkpoint[] = [];
    first.ctx.saveCheckpoint = async (cp) => {
      saved.push(structuredClone(cp));
      // Dies right after the document checkpoint (the status polls never ran).
      throw new Error('worker killed');
    };
    await expect(connector.publish(first.ctx)).rejects.toThrow('worker killed');
    const asset = fake.assets.get(String(saved[0]?.document));
    expect(asset?.status).toBe('PROCESSING');
    if (asset) asset.pollsLeft = 1;
    await connector.publish(
      context({
        text: 'Slow deck',
        options: { format: 'document' },
        media: [pdfMedia()],
        checkpoint: saved[0] ?? null,
      }).ctx,
    );
    expect(calls('POST', /^\/rest\/documents$/)).toHaveLength(1);
    expect(fake.posts.map((p) => p.document?.urn)).toEqual([asset?.urn]);
  });

  it('a checkpointed document that never got its bytes (WAITING_UPLOAD) or is gone is uploaded afresh', async () => {
    const init = await fetch(`${fakes.url('linkedin')}/rest/documents?action=initializeUpload`, {
      method: 'POST',
      headers: { authorization: 'Bearer token', 'content-type': 'application/json', ...REST_HEADERS },
      body: JSON.stringify({ initializeUploadRequest: { owner: AUTHOR } }),
    });
    const waiting = ((await init.json()) as { value: { document: string } }).value.document;
    for (const [i, document] of [waiting, 'urn:li:document:D4Dgone'].entries()) {
      const { ctx, checkpoints } = context({
        text: `fresh ${i}`,
        options: { format: 'document' },
        media: [pdfMedia()],
        checkpoint: { stage: 'document', document },
      });
      await connector.publish(ctx);
      expect(checkpoints[0]?.document).not.toBe(document);
    }
    expect(fake.posts).toHaveLength(2);
  });

  it('the fake refuses what LinkedIn refuses: a document not AVAILABLE, a document without a title', async () => {
    fake.processingPolls = 100;
    const { ctx } = context({ options: { format: 'document' }, media: [pdfMedia()] });
    ctx.saveCheckpoint = async () => {
      throw new Error('stop');
    };
    await expect(connector.publish(ctx)).rejects.toThrow('stop');
    const processing = [...fake.assets.values()].find((a) => a.kind === 'document');
    const early = await rawPost({ media: { id: processing?.urn, title: 'Deck' } });
    expect(early.status).toBe(422);
    expect(early.body.message).toMatch(/not AVAILABLE \(PROCESSING\)/);
    if (processing) processing.status = 'AVAILABLE';
    const untitled = await rawPost({ media: { id: processing?.urn } });
    expect(untitled.status).toBe(422);
    expect(untitled.body.message).toMatch(/title/);
    expect(fake.posts).toHaveLength(0);
  });
});

describe('polls', () => {
  it("posts content.poll: the title as the question, the choices as options, the duration's name", async () => {
    const { ctx } = context({
      title: 'Which launch day?',
      text: 'Vote below',
      options: { poll: { choices: ['Monday', 'Friday'], duration_minutes: 4320 } },
    });
    await connector.publish(ctx);
    const post = fake.posts[0];
    expect(post?.body.content).toEqual({
      poll: {
        question: 'Which launch day?',
        options: [{ text: 'Monday' }, { text: 'Friday' }],
        settings: { duration: 'THREE_DAYS' },
      },
    });
    expect(post?.poll).toEqual({
      question: 'Which launch day?',
      options: ['Monday', 'Friday'],
      duration: 'THREE_DAYS',
    });
    expect(post?.text).toBe('Vote below');
  });

  it('without a title the question is the text; the default lasts a week; each duration maps', async () => {
    await connector.publish(
      context({ text: 'Tabs or spaces?', options: { poll: { choices: ['Tabs', 'Spaces'] } } }).ctx,
    );
    expect(fake.posts[0]?.poll).toEqual({
      question: 'Tabs or spaces?',
      options: ['Tabs', 'Spaces'],
      duration: 'SEVEN_DAYS',
    });
    for (const [minutes, name] of Object.entries(POLL_DURATIONS)) {
      await connector.publish(
        context({
          text: `q ${minutes}`,
          options: { poll: { choices: ['a', 'b', 'c'], duration_minutes: Number(minutes) } },
        }).ctx,
      );
      expect(fake.posts.at(-1)?.poll?.duration).toBe(name);
    }
    expect(Object.values(POLL_DURATIONS)).toEqual(['ONE_DAY', 'THREE_DAYS', 'SEVEN_DAYS', 'FOURTEEN_DAYS']);
  });

  it('a poll with media, a question over 140 characters or another duration is refused before any call', async () => {
    const png = mediaInput(new Uint8Array([0x89, 0x50]), 'image', 'image/png');
    const withMedia = await failure(
      connector.publish(context({ options: { poll: { choices: ['a', 'b'] } }, media: [png] }).ctx),
    );
    expect(withMedia.category).toBe('user_content');
    expect(withMedia.message).toMatch(/no media/);
    const long = await failure(
      connector.publish(context({ text: 'q'.repeat(141), options: { poll: { choices: ['a', 'b'] } } }).ctx),
    );
    expect(long.message).toMatch(/140/);
    const odd = await failure(
      connector.publish(context({ options: { poll: { choices: ['a', 'b'], duration_minutes: 60 } } }).ctx),
    );
    expect(odd.category).toBe('user_content');
    expect(fakes.requests('linkedin')).toHaveLength(0);
  });

  it('the fake refuses what LinkedIn refuses: a poll with media, one option, a long option', async () => {
    const poll = {
      question: 'Q?',
      options: [{ text: 'a' }, { text: 'b' }],
      settings: { duration: 'ONE_DAY' },
    };
    const both = await rawPost({ poll, media: { id: 'urn:li:image:C4D1' } });
    expect(both.status).toBe(422);
    expect(both.body.message).toMatch(/exactly one/);
    expect((await rawPost({ poll: { ...poll, options: [{ text: 'a' }] } })).status).toBe(422);
    expect(
      (await rawPost({ poll: { ...poll, options: [{ text: 'x'.repeat(31) }, { text: 'b' }] } })).status,
    ).toBe(422);
    expect((await rawPost({ poll: { ...poll, settings: { duration: 'ONE_MONTH' } } })).status).toBe(422);
    expect(fake.posts).toHaveLength(0);
    expect((await rawPost({ poll })).status).toBe(201);
  });
});

describe('link cards (articles)', () => {
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 7, 7]);
  const card = (over: Partial<LinkCard> = {}): LinkCard => ({
    url: 'https://example.com/launch',
    title: 'The launch',
    description: 'What we shipped',
    image: { bytes: png, contentType: 'image/png' },
    ...over,
  });
  const withWarnings = (over: Partial<PublishContext>) => {
    const warnings: Array<{ code: DeliveryWarningCode; detail: string }> = [];
    const r = context({ text: 'Read this https://example.com/launch', ...over });
    r.ctx.warn = (code, detail) => warnings.push({ code, detail });
    return { ...r, warnings };
  };

  it('uploads the card image through the Images API and posts content.article {source, title, description, thumbnail}', async () => {
    const { ctx, warnings } = withWarnings({ linkCard: card() });
    await connector.publish(ctx);
    expect(calls('POST', /^\/rest\/images$/)[0]?.json).toEqual({
      initializeUploadRequest: { owner: AUTHOR },
    });
    const post = fake.posts[0];
    const thumbnail = (post?.body.content as { article?: { thumbnail?: string } } | undefined)?.article
      ?.thumbnail;
    expect(thumbnail).toMatch(/^urn:li:image:/);
    expect(post?.body.content).toEqual({
      article: {
        source: 'https://example.com/launch',
        title: 'The launch',
        description: 'What we shipped',
        thumbnail,
      },
    });
    expect([...(post?.article?.thumbnail ?? [])]).toEqual([...png]);
    expect(post?.text).toBe('Read this https://example.com/launch');
    expect(warnings).toEqual([]);
  });

  it('a card without an image or description is an article of source and title (the URL when the page had none)', async () => {
    await connector.publish(
      withWarnings({ linkCard: card({ image: null, description: '', title: '' }) }).ctx,
    );
    expect(fake.posts[0]?.body.content).toEqual({
      article: { source: 'https://example.com/launch', title: 'https://example.com/launch' },
    });
    expect(calls('POST', /^\/rest\/images$/)).toHaveLength(0);
  });

  it('an image LinkedIn refuses, or of a type it does not take, leaves the card without it and says so', async () => {
    fakes.failNext('linkedin', {
      path: /^\/rest\/images$/,
      status: 400,
      body: { status: 400, message: 'Invalid image' },
    });
    const refused = withWarnings({ linkCard: card() });
    await connector.publish(refused.ctx);
    expect(fake.posts[0]?.body.content).toEqual({
      article: { source: 'https://example.com/launch', title: 'The launch', description: 'What we shipped' },
    });
    expect(refused.warnings).toEqual([
      { code: 'link_card_unavailable', detail: expect.stringMatching(/Invalid image/) },
    ]);

    const webp = withWarnings({
      text: 'Another https://example.com/launch',
      linkCard: card({ image: { bytes: png, contentType: 'image/webp' } }),
    });
    await connector.publish(webp.ctx);
    expect(webp.warnings).toEqual([
      { code: 'link_card_unavailable', detail: expect.stringMatching(/image\/webp/) },
    ]);
    expect(fake.posts).toHaveLength(2);
  });

  it('an outage while uploading the card image fails the attempt (retryable), it does not drop the card', async () => {
    fakes.failNext('linkedin', {
      path: /^\/rest\/images$/,
      status: 503,
      body: { status: 503, message: 'down' },
    });
    const err = await failure(connector.publish(withWarnings({ linkCard: card() }).ctx));
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(true);
    expect(fake.posts).toHaveLength(0);
  });

  it('no article with media, a poll or off the root; without a card the text goes alone', async () => {
    const image = mediaInput(new Uint8Array([1, 2]), 'image', 'image/png');
    await connector.publish(withWarnings({ linkCard: card(), media: [image] }).ctx);
    expect(Object.keys(fake.posts[0]?.body.content ?? {})).toEqual(['media']);
    await connector.publish(
      withWarnings({
        text: 'Poll https://example.com/launch',
        linkCard: card(),
        options: { poll: { choices: ['a', 'b'] } },
      }).ctx,
    );
    expect(Object.keys(fake.posts[1]?.body.content ?? {})).toEqual(['poll']);
    await connector.publish(withWarnings({ text: 'Plain https://example.com/launch', linkCard: null }).ctx);
    expect(fake.posts[2]?.body.content).toBeUndefined();
  });

  it('the fake refuses an article without a source or title, or with a thumbnail that is no image', async () => {
    const noSource = await rawPost({ article: { title: 'T' } });
    expect(noSource.status).toBe(422);
    expect(noSource.body.message).toMatch(/\/content\/article\/source/);
    expect((await rawPost({ article: { source: 'https://example.com' } })).status).toBe(422);
    expect((await rawPost({ article: { source: 'not a url', title: 'T' } })).status).toBe(422);
    expect(
      (
        await rawPost({
          article: { source: 'https://example.com', title: 'T', thumbnail: 'urn:li:image:nope' },
        })
      ).status,
    ).toBe(422);
    expect(fake.posts).toHaveLength(0);
  });
});
