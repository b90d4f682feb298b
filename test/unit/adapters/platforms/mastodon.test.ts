import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connector } from '#adapters/platforms/mastodon/index';
import { htmlToText } from '#adapters/platforms/mastodon/publish';
import type { MediaInput, PublishContext } from '#adapters/platforms/types';
import { createFake, type FakeMastodon } from '../../../fakes/mastodon.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { failure, mediaInput, metricsContext, publishContext } from './context.ts';

// The Mastodon connector against the contract fake of an instance (test/fakes/mastodon.ts).

let fakes: FakePlatforms;
let fake: FakeMastodon;

beforeAll(async () => {
  fakes = await new FakePlatforms([createFake()]).start();
  fake = fakes.fake<FakeMastodon>('mastodon');
});
afterAll(() => fakes.stop());
beforeEach(() => fakes.reset());

const media = (type: MediaInput['type'], contentType: string, bytes: Uint8Array, alt = '') =>
  mediaInput(bytes, type, contentType, { alt });

const context = (over: Partial<PublishContext> = {}) =>
  publishContext({
    channel: { id: 'ch_1', handle: '@acme@example.social', platform: 'mastodon' },
    credentials: { instance: fakes.url('mastodon'), access_token: 'token' },
    ...over,
  });

const calls = (method: string, path: RegExp) =>
  fakes.requests('mastodon').filter((r) => r.method === method && path.test(r.path));

describe('publish', () => {
  it('posts the status with the delivery’s Idempotency-Key and returns id and permalink', async () => {
    const { ctx, checkpoints } = context();
    const result = await connector.publish(ctx);
    const [post] = calls('POST', /^\/api\/v1\/statuses$/);
    expect(post?.headers.authorization).toBe('Bearer token');
    expect(post?.headers['idempotency-key']).toBe('post_1:ch_1');
    expect(post?.json).toEqual({ status: 'Hello from Herald' });
    const status = fake.posts[0];
    expect(result).toEqual({ externalId: status?.id, url: `${fakes.url('mastodon')}/@acme/${status?.id}` });
    // Text only: no checkpoint (a repeat is the same request under the same key); what was
    // created is recorded by the delivery's outcome write.
    expect(checkpoints).toEqual([]);
  });

  it('maps visibility, spoiler_text, sensitive and language', async () => {
    const { ctx } = context({
      options: { visibility: 'unlisted', spoiler_text: 'CW: spoilers', sensitive: true, language: 'de' },
    });
    await connector.publish(ctx);
    expect(calls('POST', /^\/api\/v1\/statuses$/)[0]?.json).toEqual({
      status: 'Hello from Herald',
      visibility: 'unlisted',
      spoiler_text: 'CW: spoilers',
      sensitive: true,
      language: 'de',
    });
    expect(fake.posts[0]).toMatchObject({
      visibility: 'unlisted',
      spoiler_text: 'CW: spoilers',
      sensitive: true,
      language: 'de',
    });
  });

  it('uploads images as multipart `file` + `description` and attaches them; the bytes arrive intact', async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 255, 13, 10]);
    const jpg = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2]);
    const { ctx, checkpoints } = context({
      media: [media('image', 'image/png', png, 'A chart'), media('image', 'image/jpeg', jpg)],
    });
    await connector.publish(ctx);
    const uploads = calls('POST', /^\/api\/v2\/media$/);
    // With media, the attachment ids are saved before the POST (a reconcile repeats it without uploading).
    expect(checkpoints).toEqual([
      expect.objectContaining({
        stage: 'posting',
        params: expect.objectContaining({ media_ids: expect.any(Array) }),
      }),
    ]);
    expect(uploads).toHaveLength(2);
    expect(uploads[0]?.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    const status = fake.posts[0];
    expect(calls('POST', /^\/api\/v1\/statuses$/)[0]?.json).toMatchObject({
      media_ids: status?.media.map((m) => m.id),
    });
    expect(status?.media.map((m) => [m.mimeType, [...m.bytes], m.description])).toEqual([
      ['image/png', [...png], 'A chart'],
      ['image/jpeg', [...jpg], null],
    ]);
  });

  it('waits for an asynchronously processed video (202, then 206 until ready) before posting', async () => {
    fake.processingPolls = 1;
    const mp4 = new Uint8Array(2048).map((_, i) => (i * 7) % 256);
    const { ctx } = context({ media: [media('video', 'video/mp4', mp4, 'Demo')] });
    await connector.publish(ctx);
    expect(calls('GET', /^\/api\/v1\/media\//)).toHaveLength(2);
    expect(Buffer.compare(fake.posts[0]?.media[0]?.bytes ?? Buffer.alloc(0), Buffer.from(mp4))).toBe(0);
  });
});

describe('errors', () => {
  it('401 (revoked token) is auth_expired', async () => {
    const { ctx } = context();
    ctx.credentials = { ...ctx.credentials, access_token: 'revoked' };
    const err = await failure(connector.publish(ctx));
    expect(err.category).toBe('auth_expired');
    expect(err.message).toMatch(/The access token is invalid/);
  });

  it('429 is rate_limited, the hint taken from the ISO X-RateLimit-Reset', async () => {
    const reset = new Date(Date.now() + 90_000).toISOString().replace('Z', '123Z');
    fakes.failNext('mastodon', {
      status: 429,
      body: { error: 'Too many requests' },
      headers: { 'x-ratelimit-limit': '300', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': reset },
    });
    const err = await failure(connector.publish(context().ctx));
    expect(err.category).toBe('rate_limited');
    expect(err.opts.retryAfterSeconds).toBeGreaterThanOrEqual(88);
    expect(err.opts.retryAfterSeconds).toBeLessThanOrEqual(91);
  });

  it('500 is a retryable system error', async () => {
    fakes.failNext('mastodon', {
      status: 500,
      body: { error: 'We are sorry, but something went wrong on our end.' },
    });
    const err = await failure(connector.publish(context().ctx));
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(true);
  });

  it('422 on the status is user_content; 422 on the media upload is media_error', async () => {
    const long = await failure(connector.publish(context({ text: 'a'.repeat(501) }).ctx));
    expect(long.category).toBe('user_content');
    expect(long.message).toMatch(/character limit of 500/);

    const bad = await failure(
      connector.publish(context({ media: [media('image', 'application/pdf', new Uint8Array([1]))] }).ctx),
    );
    expect(bad.category).toBe('media_error');
    expect(fake.posts).toHaveLength(0);
  });
});

describe('idempotency and reconcile', () => {
  it('a retry with the same key returns the first status instead of posting twice', async () => {
    const first = await connector.publish(context().ctx);
    const again = await connector.publish(context().ctx);
    expect(again).toEqual(first);
    expect(fake.posts).toHaveLength(1);
  });

  it('after a crash past POST /statuses (text only, no checkpoint), reconcile inside the key’s hour repeats it under the same key', async () => {
    const published = await connector.publish(context().ctx);
    const before = calls('POST', /^\/api\/v1\/statuses$/).length;
    expect(await connector.reconcile(context().ctx)).toEqual(published);
    expect(calls('POST', /^\/api\/v1\/statuses$/)).toHaveLength(before + 1);
    expect(fake.posts).toHaveLength(1);
  });

  it('the key’s hour counts from the earliest unresolved attempt: past it, reconcile looks instead of repeating', async () => {
    // A text status made 50 minutes into the hour of an attempt that started 56 minutes ago.
    const published = await connector.publish(context().ctx);
    fake.forgetIdempotencyKeys();
    const started = new Date(Date.now() - 56 * 60_000);
    expect(await connector.reconcile(context({ attemptStartedAt: started }).ctx)).toEqual(published);
    expect(calls('POST', /^\/api\/v1\/statuses$/)).toHaveLength(1);
    expect(fake.posts).toHaveLength(1);
  });

  it('after a crash past POST /statuses with media, reconcile repeats the saved request and uploads nothing', async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 1]);
    const { ctx, checkpoints } = context({ media: [media('image', 'image/png', png)] });
    const published = await connector.publish(ctx);
    const crashed = checkpoints[0] as Record<string, unknown>;
    expect(await connector.reconcile(context({ checkpoint: crashed }).ctx)).toEqual(published);
    expect(calls('POST', /^\/api\/v2\/media$/)).toHaveLength(1);
    expect(fake.posts).toHaveLength(1);
  });

  it.each([
    ['text only (no checkpoint): dated from the attempt’s start', false],
    ['a checkpoint saved by an earlier version', true],
  ])('outside the idempotency window reconcile finds the status by its text, %s', async (_, saved) => {
    const text = 'Launch day & more:\nhttps://example.com/a/very/long/path/that/gets/shortened?x=1 <3';
    const published = await connector.publish(context({ text }).ctx);
    fake.forgetIdempotencyKeys();
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    const checkpoint = saved
      ? { stage: 'posting', params: { status: text }, sentAt: twoHoursAgo.toISOString() }
      : null;
    const before = fakes.requests('mastodon').length;
    const found = await connector.reconcile(context({ text, checkpoint, attemptStartedAt: twoHoursAgo }).ctx);
    expect(found).toEqual(published);
    const used = fakes.requests('mastodon').slice(before);
    expect(used.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /api/v1/accounts/verify_credentials',
      `GET /api/v1/accounts/${fake.account.id}/statuses`,
    ]);
    expect(fake.posts).toHaveLength(1);
  });

  it('reconcile is null when nothing was sent (media, no checkpoint), or when no matching status exists', async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 1]);
    expect(await connector.reconcile(context({ media: [media('image', 'image/png', png)] }).ctx)).toBeNull();
    expect(fakes.requests('mastodon')).toHaveLength(0);
    const old = {
      stage: 'posting',
      params: { status: 'never arrived' },
      sentAt: new Date(Date.now() - 7200_000).toISOString(),
    };
    expect(await connector.reconcile(context({ text: 'never arrived', checkpoint: old }).ctx)).toBeNull();
    expect(fake.posts).toHaveLength(0);
  });

  it('reconcile says "outcome unknown" when the lookup fails, retryable with the instance’s hint', async () => {
    const old = {
      stage: 'posting',
      params: { status: 'x' },
      sentAt: new Date(Date.now() - 7200_000).toISOString(),
    };
    fakes.failNext('mastodon', {
      status: 503,
      headers: { 'retry-after': '120' },
      body: { error: 'Service Unavailable' },
    });
    const err = await failure(connector.reconcile(context({ checkpoint: old }).ctx));
    expect(err.category).toBe('system');
    expect(err.message).toMatch(/outcome unknown/);
    expect(err.retryable).toBe(true);
    expect(err.opts.retryAfterSeconds).toBe(120);
  });

  it('htmlToText undoes Mastodon’s rendering', () => {
    expect(htmlToText('<p>a &amp; b<br />c</p><p>d &#39;e&#x27;</p>')).toBe("a & b\nc\n\nd 'e'");
  });
});

describe('metrics', () => {
  it('maps favourites, replies and reblogs', async () => {
    const { ctx } = context();
    const { externalId } = await connector.publish(ctx);
    Object.assign(fake.posts[0] ?? {}, { favourites_count: 5, replies_count: 2, reblogs_count: 4 });
    const m = await connector.metrics?.(metricsContext(ctx, [externalId, '999']));
    expect(m).toEqual({ [externalId]: { impressions: 0, likes: 5, comments: 2, shares: 4, clicks: 0 } });
  });
});

describe('mastodon: a thread of replies', () => {
  it('a thread item is POST /api/v1/statuses with in_reply_to_id (the part before it)', async () => {
    const root = await connector.publish(context({ text: 'one', idempotencyKey: 'k' }).ctx);
    const two = await connector.publish(
      context({
        text: 'two',
        idempotencyKey: 'k.t0',
        part: { kind: 'thread', index: 0 },
        replyTo: { root, parent: root },
      }).ctx,
    );
    const bodies = calls('POST', /^\/api\/v1\/statuses$/).map((c) => c.json as Record<string, unknown>);
    expect(bodies[0]?.in_reply_to_id).toBeUndefined();
    expect(bodies[1]).toMatchObject({ status: 'two', in_reply_to_id: root.externalId });
    expect(fake.posts.find((s) => s.id === two.externalId)?.in_reply_to_id).toBe(root.externalId);
  });

  it('a reply to a status that does not exist is refused (404), nothing posted', async () => {
    const gone = { externalId: '999999', url: null };
    const err = await failure(
      connector.publish(context({ text: 'two', replyTo: { root: gone, parent: gone } }).ctx),
    );
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/does not appear to exist/);
    expect(fake.posts).toHaveLength(0);
  });

  it("a part's lookup (past the key's hour) matches the status answering its parent", async () => {
    const root = await connector.publish(context({ text: 'one', idempotencyKey: 'k' }).ctx);
    const other = await connector.publish(context({ text: 'other', idempotencyKey: 'k-other' }).ctx);
    const started = new Date(Date.now() - 1000);
    const made = await connector.publish(
      context({ text: 'two', idempotencyKey: 'k.t0', replyTo: { root, parent: root } }).ctx,
    );
    // Newer, the same text, answering another status: not this part.
    await connector.publish(
      context({ text: 'two', idempotencyKey: 'k2', replyTo: { root: other, parent: other } }).ctx,
    );
    const again = context({
      text: 'two',
      idempotencyKey: 'k.t0',
      part: { kind: 'thread', index: 0 },
      replyTo: { root, parent: root },
      checkpoint: {
        stage: 'posting',
        params: null,
        sentAt: new Date(Date.now() - 2 * 3600_000).toISOString(),
      },
      attemptStartedAt: new Date(started.getTime() - 2 * 3600_000),
    });
    expect(await connector.reconcile(again.ctx)).toEqual(made);
  });
});
