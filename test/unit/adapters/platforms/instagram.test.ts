import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connector } from '#adapters/platforms/instagram/index';
import { GRAPH_VERSION } from '#adapters/platforms/meta/client';
import { containerPolling } from '#adapters/platforms/meta/publish';
import type { PublishContext } from '#adapters/platforms/types';
import { checkMediaFacts } from '#core/media-limits';
import { createFake, type InstagramFake } from '../../../fakes/instagram.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { cdn, failure, mediaInput, metricsContext, publishContext } from './context.ts';

// The Instagram connector (Instagram API with Facebook Login) against the contract fake: containers,
// status_code polling, media_publish, carousels, error codes, checkpoint and reconcile, insights.

const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe1]), Buffer.from('instagram-jpeg')]);
const JPEG2 = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xdb]), Buffer.from('second-jpeg')]);
const PNG = Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), Buffer.from('png')]);
const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 0x20]), Buffer.from('ftypisom-reel')]);

const cdnFake = cdn();
const platforms = new FakePlatforms([createFake(), cdnFake]);
let fake: InstagramFake;
const savedPolling = { ...containerPolling };

beforeAll(async () => {
  await platforms.start();
  fake = platforms.fake<InstagramFake>('instagram');
  process.env.HERALD_PLATFORM_INSTAGRAM_URL = platforms.url('instagram');
  Object.assign(containerPolling, { firstDelayMs: 5, maxDelayMs: 20, budgetMs: 2000 });
});
afterAll(async () => {
  Object.assign(containerPolling, savedPolling);
  delete process.env.HERALD_PLATFORM_INSTAGRAM_URL;
  await platforms.stop();
});
beforeEach(() => platforms.reset());

function media(name: string, type: 'image' | 'video', bytes: Buffer, alt = '', contentType = '') {
  const ct = contentType || (type === 'image' ? 'image/jpeg' : 'video/mp4');
  cdnFake.files.set(name, { bytes, type: ct });
  const url = `${platforms.url('cdn')}/${name}`;
  return mediaInput(new Uint8Array(bytes), type, ct, { alt, filename: name, url });
}

function context(over: Partial<PublishContext> = {}) {
  const { saved, ...recorded } = publishContext({
    channel: { id: 'ch_ig', handle: 'herald', platform: 'instagram' },
    credentials: { access_token: 'token', account_id: fake.igUserId },
    text: 'Sunset over the harbour #herald',
    media: [media('photo.jpg', 'image', JPEG, 'Boats at sunset')],
    ...over,
  });
  return { ...recorded, credentials: saved };
}

const posts = (path: RegExp) =>
  platforms
    .requests('instagram')
    .filter((r) => r.method === 'POST' && path.test(r.path))
    .map((r) => new URLSearchParams(r.body.toString('utf8')));

const graphBody = (code: number, message: string, subcode?: number) => ({
  error: {
    message,
    type: 'OAuthException',
    code,
    ...(subcode ? { error_subcode: subcode } : {}),
    fbtrace_id: 'Axyz',
  },
});

describe('instagram publish', () => {
  it('publishes one image: container with image_url, caption and alt_text, then media_publish', async () => {
    const { ctx } = context();

    const result = await connector.publish(ctx);

    expect(fake.media).toHaveLength(1);
    const m = fake.media[0]!;
    expect(result).toEqual({ externalId: m.id, url: m.permalink });
    expect(m.mediaType).toBe('IMAGE');
    expect(m.caption).toBe('Sunset over the harbour #herald');
    expect(m.items[0]?.bytes.equals(JPEG)).toBe(true);
    const [create] = posts(new RegExp(`^/${GRAPH_VERSION.replace('.', '\\.')}/${fake.igUserId}/media$`));
    expect(create?.get('image_url')).toBe(`${platforms.url('cdn')}/photo.jpg`);
    expect(create?.get('alt_text')).toBe('Boats at sunset');
    expect(create?.get('media_type')).toBeNull();
    expect(posts(/\/media_publish$/)[0]?.get('creation_id')).toBe(m.containerId);
  });

  it('publishes a single video as a reel once processing finished', async () => {
    fake.processingPolls = 2;
    const { ctx } = context({ media: [media('clip.mp4', 'video', MP4)] });

    await connector.publish(ctx);

    const m = fake.media[0]!;
    expect(m.productType).toBe('REELS');
    expect(m.items[0]?.bytes.equals(MP4)).toBe(true);
    const create = posts(/\/media$/)[0]!;
    expect(create.get('media_type')).toBe('REELS');
    expect(create.get('video_url')).toBe(`${platforms.url('cdn')}/clip.mp4`);
    expect(create.get('caption')).toBe('Sunset over the harbour #herald');
  });

  it('publishes a carousel of item containers (VIDEO items) under one CAROUSEL container', async () => {
    const { ctx } = context({
      media: [
        media('1.jpg', 'image', JPEG, 'first'),
        media('2.mp4', 'video', MP4),
        media('3.jpg', 'image', JPEG2),
      ],
    });

    await connector.publish(ctx);

    const m = fake.media[0]!;
    expect(m.mediaType).toBe('CAROUSEL_ALBUM');
    expect(m.items.map((i) => i.kind)).toEqual(['IMAGE', 'VIDEO', 'IMAGE']);
    expect(m.items.map((i) => i.bytes.toString('hex'))).toEqual(
      [JPEG, MP4, JPEG2].map((b) => b.toString('hex')),
    );
    const creates = posts(/\/media$/);
    expect(
      creates.slice(0, 3).map((p) => [p.get('media_type'), p.get('is_carousel_item'), p.get('caption')]),
    ).toEqual([
      [null, 'true', null],
      ['VIDEO', 'true', null],
      [null, 'true', null],
    ]);
    expect(creates[3]?.get('media_type')).toBe('CAROUSEL');
    expect(creates[3]?.get('caption')).toBe('Sunset over the harbour #herald');
    expect(creates[3]?.get('children')?.split(',')).toHaveLength(3);
  });
});

describe('instagram errors', () => {
  it('an invalid token is auth_expired and nothing is refreshed', async () => {
    const { ctx, credentials } = context({
      credentials: { access_token: 'nope', account_id: fake.igUserId },
    });

    const err = await failure(connector.publish(ctx));

    expect(err.category).toBe('auth_expired');
    expect(credentials).toHaveLength(0);
  });

  it('throttling (#32 with the BUC header) is rate_limited with the wait', async () => {
    platforms.failNext('instagram', {
      status: 400,
      headers: {
        'x-business-use-case-usage': JSON.stringify({
          [fake.igUserId]: [{ type: 'instagram', call_count: 100, estimated_time_to_regain_access: 2 }],
        }),
      },
      body: graphBody(32, 'Page request limit reached'),
    });
    const err = await failure(connector.publish(context().ctx));

    expect(err.category).toBe('rate_limited');
    expect(err.opts.retryAfterSeconds).toBe(120);
  });

  it('the daily publishing limit (9/2207042) is rate_limited', async () => {
    fake.publishLimit = 0;

    const err = await failure(connector.publish(context().ctx));

    expect(err.category).toBe('rate_limited');
    expect(err.message).toContain('2207042');
    expect(err.opts.scope).toBeUndefined(); // the account's own 24-hour limit
  });

  it('a 500 is a retryable system error', async () => {
    platforms.failNext('instagram', { status: 500, body: graphBody(2, 'Service temporarily unavailable') });

    const err = await failure(connector.publish(context().ctx));

    expect(err.category).toBe('system');
    expect(err.retryable).toBe(true);
  });

  it('a non-JPEG image (36001/2207005) is media_error', async () => {
    const { ctx } = context({ media: [media('x.png', 'image', PNG, '', 'image/png')] });

    const err = await failure(connector.publish(ctx));

    expect(err.category).toBe('media_error');
    expect(err.message).toContain('2207005');
  });

  it('an image outside 4:5–1.91:1 (36003/2207009) is media_error, as core/media-limits.ts predicts', async () => {
    // A JPEG header (SOI, APP0, SOF0) that says 600×200: 3:1.
    const app0 = [0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 1, 1, 0, 0, 1, 0, 1, 0, 0];
    const sof = [
      0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0xc8, 0x02, 0x58, 0x03, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1,
    ];
    const wide = Buffer.from([0xff, 0xd8, ...app0, ...sof, 0xff, 0xd9]);
    const { ctx } = context({ media: [media('wide.jpg', 'image', wide)] });

    const err = await failure(connector.publish(ctx));

    expect(err.category).toBe('media_error');
    expect(err.message).toContain('2207009');
    expect(
      checkMediaFacts(
        'instagram',
        {
          kind: 'image',
          content_type: 'image/jpeg',
          size_bytes: wide.length,
          width: 600,
          height: 200,
          duration_sec: null,
        },
        '/p',
      ).map((e) => e.code),
    ).toEqual(['unsupported_aspect_ratio']);
  });

  it('media Meta cannot fetch (9004/2207052) is media_error', async () => {
    const m = media('missing.jpg', 'image', JPEG);
    cdnFake.files.delete('missing.jpg');

    const err = await failure(connector.publish(context({ media: [m] }).ctx));

    expect(err.category).toBe('media_error');
  });

  it('a reel whose download fails ends the container in ERROR: media_error', async () => {
    const m = media('gone.mp4', 'video', MP4);
    cdnFake.files.delete('gone.mp4');

    const err = await failure(connector.publish(context({ media: [m] }).ctx));

    expect(err.category).toBe('media_error');
    expect(err.message).toContain('2207052');
  });

  it('an invalid parameter (#100, caption too long) is user_content', async () => {
    const err = await failure(connector.publish(context({ text: 'y'.repeat(2201) }).ctx));

    expect(err.category).toBe('user_content');
  });

  it('a spam restriction (4/2207051) is platform_rejected, a missing permission (#10) too', async () => {
    platforms.failNext('instagram', {
      status: 400,
      path: /media_publish$/,
      body: graphBody(4, 'Action is blocked', 2207051),
    });
    expect((await failure(connector.publish(context().ctx))).category).toBe('platform_rejected');

    platforms.failNext('instagram', {
      status: 403,
      body: graphBody(10, 'Application does not have permission for this action'),
    });
    expect((await failure(connector.publish(context().ctx))).category).toBe('platform_rejected');
  });
});

describe('instagram reconcile', () => {
  it('without a checkpoint nothing was published', async () => {
    expect(await connector.reconcile(context().ctx)).toBeNull();
  });

  it('finds the media when the worker died after media_publish; publishing again does not repeat it', async () => {
    fake.loseNextPublishResponse = true;
    const first = context();
    expect((await failure(connector.publish(first.ctx))).category).toBe('system');
    expect(first.checkpoints[0]?.container_id).toBe(fake.media[0]?.containerId);

    const retry = context({ checkpoint: first.checkpoints[0] ?? null });
    const found = await connector.reconcile(retry.ctx);
    const again = await connector.publish(retry.ctx);

    const m = fake.media[0]!;
    expect(found).toEqual({ externalId: m.id, url: m.permalink });
    expect(again).toEqual(found);
    expect(fake.media).toHaveLength(1);
    expect(posts(/media_publish$/)).toHaveLength(1);
  });

  it('a container never published reconciles to null; the retry publishes it once', async () => {
    platforms.failNext('instagram', {
      status: 500,
      path: /media_publish$/,
      body: graphBody(1, 'An unknown error occurred'),
    });
    const first = context();
    await failure(connector.publish(first.ctx));

    const retry = context({ checkpoint: first.checkpoints[0] ?? null });
    expect(await connector.reconcile(retry.ctx)).toBeNull();
    await connector.publish(retry.ctx);

    expect(fake.containers.size).toBe(1);
    expect(fake.media).toHaveLength(1);
  });
});

describe('instagram metrics', () => {
  it('reads views, likes, comments and shares (not the deprecated impressions)', async () => {
    const { ctx } = context();
    const { externalId } = await connector.publish(ctx);
    fake.insights.set(externalId, { views: 900, likes: 40, comments: 6, shares: 2 });

    const metrics = await connector.metrics!(metricsContext(ctx, [externalId]));

    expect(metrics).toEqual({
      [externalId]: { impressions: 900, likes: 40, comments: 6, shares: 2, clicks: 0 },
    });
  });
});
