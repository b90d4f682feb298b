import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LINKEDIN_VERSION } from '#adapters/platforms/linkedin/client';
import { connector } from '#adapters/platforms/linkedin/index';
import { escapeLittleText, unescapeLittleText } from '#adapters/platforms/linkedin/publish';
import type { MediaInput, PublishContext } from '#adapters/platforms/types';
import { createFake, type FakeLinkedIn } from '../../../fakes/linkedin.ts';
import { FAKE_APPS } from '../../../fakes/oauth.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { failure, mediaInput, metricsContext, publishContext } from './context.ts';

// The LinkedIn connector against the contract fake of LinkedIn's REST API (test/fakes/linkedin.ts).

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

const media = (type: MediaInput['type'], contentType: string, bytes: Uint8Array, alt = '') =>
  mediaInput(bytes, type, contentType, { alt });

const context = (
  over: Partial<PublishContext> = {},
  app?: { clientId: string; clientSecret: string } | null,
) =>
  publishContext(
    {
      channel: { id: 'ch_1', handle: 'acme', platform: 'linkedin' },
      credentials: { access_token: 'token', account_id: AUTHOR },
      ...over,
    },
    app === undefined ? {} : { app },
  );

const calls = (method: string, path: RegExp) =>
  fakes.requests('linkedin').filter((r) => r.method === method && path.test(r.path));

describe('publish', () => {
  it('POSTs /rest/posts with the versioned headers and the documented body; the URN comes from x-restli-id', async () => {
    const { ctx, checkpoints } = context();
    const result = await connector.publish(ctx);
    const [post] = calls('POST', /^\/rest\/posts$/);
    expect(post?.headers).toMatchObject({
      authorization: 'Bearer token',
      'linkedin-version': LINKEDIN_VERSION,
      'x-restli-protocol-version': '2.0.0',
    });
    expect(post?.json).toEqual({
      author: AUTHOR,
      commentary: 'Hello from Herald',
      visibility: 'PUBLIC',
      distribution: { feedDistribution: 'MAIN_FEED', targetEntities: [], thirdPartyDistributionChannels: [] },
      lifecycleState: 'PUBLISHED',
      isReshareDisabledByAuthor: false,
    });
    const urn = fake.posts[0]?.urn ?? '';
    expect(urn).toMatch(/^urn:li:share:\d+$/);
    expect(result).toEqual({ externalId: urn, url: `https://www.linkedin.com/feed/update/${urn}` });
    expect(checkpoints[0]).toMatchObject({ stage: 'posting' });
  });

  it('escapes little-text markup so the text arrives whole; maps options.visibility', async () => {
    const text = 'Launch (beta) #1 for @team [v2] *really* 50_50 ~ok~ a\\b {c} <d> |e|';
    await connector.publish(context({ text, options: { visibility: 'CONNECTIONS' } }).ctx);
    expect(fake.posts[0]?.text).toBe(text);
    expect(fake.posts[0]?.visibility).toBe('CONNECTIONS');
    expect(unescapeLittleText(escapeLittleText(text))).toBe(text);
  });

  it('uploads one image (initializeUpload, PUT bytes) and attaches it as content.media with altText', async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 1, 255]);
    await connector.publish(context({ media: [media('image', 'image/png', png, 'A chart')] }).ctx);
    expect(calls('POST', /^\/rest\/images$/)[0]?.json).toEqual({
      initializeUploadRequest: { owner: AUTHOR },
    });
    const post = fake.posts[0];
    expect(post?.media.map((m) => [[...m.bytes], m.altText])).toEqual([[[...png], 'A chart']]);
    expect(post?.body.content).toEqual({ media: { id: post?.media[0]?.urn, altText: 'A chart' } });
  });

  it('several images become content.multiImage', async () => {
    const a = new Uint8Array([1, 2]);
    const b = new Uint8Array([3, 4, 5]);
    await connector.publish(
      context({ media: [media('image', 'image/png', a, 'first'), media('image', 'image/jpeg', b)] }).ctx,
    );
    const post = fake.posts[0];
    expect(post?.body.content).toEqual({
      multiImage: { images: [{ id: post?.media[0]?.urn, altText: 'first' }, { id: post?.media[1]?.urn }] },
    });
    expect(post?.media.map((m) => [...m.bytes])).toEqual([[...a], [...b]]);
  });

  it('uploads video in the instructed parts, finalizes with their ETags, waits for AVAILABLE', async () => {
    fake.processingPolls = 1;
    const mp4 = new Uint8Array(9 * 1024 * 1024 + 3).map((_, i) => (i * 13) % 256);
    await connector.publish(context({ media: [media('video', 'video/mp4', mp4, 'ignored for video')] }).ctx);
    expect(calls('POST', /^\/rest\/videos$/)[0]?.json).toEqual({
      initializeUploadRequest: {
        owner: AUTHOR,
        fileSizeBytes: mp4.byteLength,
        uploadCaptions: false,
        uploadThumbnail: false,
      },
    });
    expect(calls('PUT', /^\/dms-uploads\/video\//)).toHaveLength(3);
    const asset = [...fake.assets.values()][0];
    const finalize = calls('POST', /^\/rest\/videos$/)[1];
    expect(finalize?.query.get('action')).toBe('finalizeUpload');
    expect(finalize?.json).toEqual({
      finalizeUploadRequest: {
        video: asset?.urn,
        uploadToken: asset?.uploadToken,
        uploadedPartIds: asset?.parts.map((p) => p.etag),
      },
    });
    expect(calls('GET', /^\/rest\/videos\//)).toHaveLength(2);
    const post = fake.posts[0];
    expect(post?.body.content).toEqual({ media: { id: asset?.urn } });
    expect(Buffer.compare(post?.media[0]?.bytes ?? Buffer.alloc(0), Buffer.from(mp4))).toBe(0);
  });

  it('failed video processing is media_error', async () => {
    fake.failVideoProcessing = true;
    const err = await failure(
      connector.publish(context({ media: [media('video', 'video/mp4', new Uint8Array(10))] }).ctx),
    );
    expect(err.category).toBe('media_error');
    expect(fake.posts).toHaveLength(0);
  });
});

describe('errors', () => {
  it('401 without a refresh token is auth_expired', async () => {
    const { ctx } = context();
    ctx.credentials = { access_token: 'revoked', account_id: AUTHOR };
    const err = await failure(connector.publish(ctx));
    expect(err.category).toBe('auth_expired');
    expect(err.message).toMatch(/INVALID_ACCESS_TOKEN/);
  });

  it('429 is rate_limited, with Retry-After when sent and until UTC midnight for daily throttles', async () => {
    fakes.failNext('linkedin', {
      status: 429,
      body: { status: 429, message: 'Too Many Requests' },
      headers: { 'retry-after': '60' },
    });
    const a = await failure(connector.publish(context().ctx));
    expect(a.category).toBe('rate_limited');
    expect(a.opts.retryAfterSeconds).toBe(60);
    expect(a.opts.scope).toBeUndefined();

    fakes.failNext('linkedin', {
      status: 429,
      body: {
        status: 429,
        message: 'Resource level throttle APPLICATION DAY limit for calls to this resource is reached.',
      },
    });
    const b = await failure(connector.publish(context().ctx));
    expect(b.category).toBe('rate_limited');
    expect(b.opts.retryAfterSeconds).toBeGreaterThan(0);
    expect(b.opts.retryAfterSeconds).toBeLessThanOrEqual(86400);
    expect(b.opts.scope).toBe('app'); // APPLICATION: the app's daily limit, not the member's
  });

  it('500 is a retryable system error', async () => {
    fakes.failNext('linkedin', { status: 500, body: { status: 500, message: 'Internal Server Error' } });
    const err = await failure(connector.publish(context().ctx));
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(true);
  });

  it('422 is user_content, 403 platform_rejected, a refused media upload media_error', async () => {
    const long = await failure(connector.publish(context({ text: 'a'.repeat(3001) }).ctx));
    expect(long.category).toBe('user_content');
    expect(long.message).toMatch(/exceeds 3000/);

    fakes.failNext('linkedin', {
      status: 403,
      body: {
        status: 403,
        serviceErrorCode: 100,
        code: 'ACCESS_DENIED',
        message: 'Not enough permissions to access: partnerApiPostsExternal.CREATE.20240501',
      },
    });
    expect((await failure(connector.publish(context().ctx))).category).toBe('platform_rejected');

    fakes.failNext('linkedin', {
      path: /^\/rest\/images$/,
      status: 400,
      body: { status: 400, message: 'Invalid image' },
    });
    expect(
      (
        await failure(
          connector.publish(context({ media: [media('image', 'image/png', new Uint8Array([1]))] }).ctx),
        )
      ).category,
    ).toBe('media_error');
  });
});

describe('tokens', () => {
  it('on a 401 refreshes once at /oauth/v2/accessToken and retries; saves the new token', async () => {
    const { ctx, saved } = context();
    ctx.credentials = {
      access_token: 'stale',
      refresh_token: 'refresh',
      expires_at: '2099-01-01T00:00:00.000Z',
      account_id: AUTHOR,
    };
    await connector.publish(ctx);
    const [tokenCall] = calls('POST', /^\/oauth\/v2\/accessToken$/);
    // The operator's platform app, its id and secret as form fields (LinkedIn takes no Basic).
    expect(Object.fromEntries(new URLSearchParams(tokenCall?.body.toString()))).toEqual({
      grant_type: 'refresh_token',
      refresh_token: 'refresh',
      client_id: FAKE_APPS.linkedin.clientId,
      client_secret: FAKE_APPS.linkedin.clientSecret,
    });
    const minted = fake.minted[0];
    expect(saved).toEqual([
      {
        access_token: minted?.access_token,
        refresh_token: 'refresh',
        expires_at: expect.any(String),
        account_id: AUTHOR,
      },
    ]);
    expect(calls('POST', /^\/rest\/posts$/).map((r) => r.headers.authorization)).toEqual([
      'Bearer stale',
      `Bearer ${minted?.access_token}`,
    ]);
    expect(fake.posts).toHaveLength(1);
  });

  it('refreshes before the first call when expires_at has passed', async () => {
    const { ctx, saved } = context();
    ctx.credentials = {
      access_token: 'stale',
      refresh_token: 'refresh',
      expires_at: '2020-01-01T00:00:00.000Z',
      account_id: AUTHOR,
    };
    await connector.publish(ctx);
    expect(calls('POST', /^\/rest\/posts$/).map((r) => r.headers.authorization)).toEqual([
      `Bearer ${fake.minted[0]?.access_token}`,
    ]);
    expect(saved).toHaveLength(1);
  });

  it('without the platform app a refused token cannot be renewed: auth_expired (the person must reconnect), the source says why', async () => {
    const { ctx } = context({}, null);
    ctx.credentials = { access_token: 'stale', refresh_token: 'refresh', account_id: AUTHOR };
    const err = await failure(connector.publish(ctx));
    expect(err.category).toBe('auth_expired');
    expect(err.retryable).toBe(false);
    expect((ctx.tokens as unknown as { unrenewable: string }).unrenewable).toMatch(
      /no linkedin platform app is configured/,
    );
  });

  it('without a refresh token a 401 is auth_expired', async () => {
    const { ctx } = context();
    ctx.credentials = { access_token: 'stale', account_id: AUTHOR };
    expect((await failure(connector.publish(ctx))).category).toBe('auth_expired');
  });
});

describe('checkpoint and reconcile', () => {
  const text = 'Big news (really) #launch';

  it('after a crash past POST /rest/posts, reconcile finds the post by its commentary; publish again posts nothing', async () => {
    const { ctx, checkpoints } = context({ text });
    const published = await connector.publish(ctx);
    const again = context({
      text,
      checkpoint: checkpoints[0] ?? null,
      attemptStartedAt: ctx.attemptStartedAt,
    });
    expect(await connector.reconcile(again.ctx)).toEqual(published);
    const [lookup] = calls('GET', /^\/rest\/posts$/);
    expect(lookup?.query.get('q')).toBe('author');
    expect(lookup?.query.get('author')).toBe(AUTHOR);
    expect(await connector.publish(again.ctx)).toEqual(published);
    expect(fake.posts).toHaveLength(1);
  });

  it('a retry that cannot read posts reports the original named by LinkedIn’s DUPLICATE_POST refusal', async () => {
    const { ctx, checkpoints } = context({ text });
    const published = await connector.publish(ctx);
    fake.canReadPosts = false;
    expect(await connector.publish(context({ text, checkpoint: checkpoints[0] ?? null }).ctx)).toEqual(
      published,
    );
    expect(fake.posts).toHaveLength(1);
  });

  it('a fresh duplicate (no earlier attempt) is user_content', async () => {
    await connector.publish(context({ text }).ctx);
    expect((await failure(connector.publish(context({ text }).ctx))).category).toBe('user_content');
  });

  it('reconcile: null without a checkpoint or without a match; "outcome unknown" when posts cannot be read', async () => {
    expect(await connector.reconcile(context().ctx)).toBeNull();
    expect(fakes.requests('linkedin')).toHaveLength(0);
    expect(await connector.reconcile(context({ checkpoint: { stage: 'posting' } }).ctx)).toBeNull();
    fake.canReadPosts = false;
    const err = await failure(connector.reconcile(context({ checkpoint: { stage: 'posting' } }).ctx));
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/outcome unknown/);
  });
});

describe('metrics', () => {
  it('sums reactions and reads the comment count from socialMetadata', async () => {
    const { ctx } = context();
    const { externalId } = await connector.publish(ctx);
    fake.reactions.set(externalId, { likes: 6, comments: 2 });
    const m = await connector.metrics?.(metricsContext(ctx, [externalId]));
    expect(m).toEqual({ [externalId]: { impressions: 0, likes: 6, comments: 2, shares: 0, clicks: 0 } });
  });
});
