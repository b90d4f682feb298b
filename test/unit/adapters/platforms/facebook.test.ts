import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connector } from '#adapters/platforms/facebook/index';
import type { PublishContext } from '#adapters/platforms/types';
import { createFake, type FacebookFake } from '../../../fakes/facebook.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { cdn, failure, mediaInput, metricsContext, publishContext } from './context.ts';

// The Facebook Pages connector against the contract fake: feed posts, unpublished photos attached to
// one feed post, videos by file_url, Graph error codes, checkpoint + feed lookup reconcile, metrics.

const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from('facebook-jpeg-1')]);
const PNG = Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), Buffer.from('facebook-png-2')]);
const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypmp42-page-video')]);

const cdnFake = cdn();
const platforms = new FakePlatforms([createFake(), cdnFake]);
let fake: FacebookFake;

beforeAll(async () => {
  await platforms.start();
  fake = platforms.fake<FacebookFake>('facebook');
  process.env.HERALD_PLATFORM_FACEBOOK_URL = platforms.url('facebook');
});
afterAll(async () => {
  delete process.env.HERALD_PLATFORM_FACEBOOK_URL;
  await platforms.stop();
});
beforeEach(() => platforms.reset());

function media(name: string, type: 'image' | 'video', bytes: Buffer, contentType: string, alt = '') {
  cdnFake.files.set(name, { bytes, type: contentType });
  const url = `${platforms.url('cdn')}/${name}`;
  return mediaInput(new Uint8Array(bytes), type, contentType, { alt, filename: name, url });
}

function context(over: Partial<PublishContext> = {}) {
  const { saved, ...recorded } = publishContext({
    channel: { id: 'ch_fb', handle: 'Herald Page', platform: 'facebook' },
    credentials: { access_token: 'token', account_id: fake.pageId },
    text: 'We are open on Sunday!',
    ...over,
  });
  return { ...recorded, credentials: saved };
}

const posted = (edge: string) =>
  platforms
    .requests('facebook')
    .filter((r) => r.method === 'POST' && r.path.endsWith(`/${fake.pageId}/${edge}`))
    .map((r) => new URLSearchParams(r.body.toString('utf8')));

const graphBody = (code: number, message: string, subcode?: number) => ({
  error: {
    message,
    type: 'OAuthException',
    code,
    ...(subcode ? { error_subcode: subcode } : {}),
    fbtrace_id: 'Fb1',
  },
});

describe('facebook publish', () => {
  it('posts text to the Page feed and returns the permalink, checkpointing first', async () => {
    let postsAtCheckpoint = -1;
    const { ctx, checkpoints } = context({
      async saveCheckpoint(cp) {
        postsAtCheckpoint = fake.posts.length;
        checkpoints.push(cp);
      },
    });

    const result = await connector.publish(ctx);

    const post = fake.posts[0]!;
    expect(result).toEqual({ externalId: post.id, url: post.permalink });
    expect(post.message).toBe('We are open on Sunday!');
    const [feed] = posted('feed');
    expect(feed?.get('message')).toBe('We are open on Sunday!');
    expect(feed?.get('access_token')).toBe('token');
    expect(postsAtCheckpoint).toBe(0);
    expect(checkpoints[0]).toMatchObject({ kind: 'feed', message: 'We are open on Sunday!', photo_ids: [] });
  });

  it('maps the link option onto a link post', async () => {
    await connector.publish(context({ options: { link: 'https://example.com/hours' } }).ctx);

    expect(posted('feed')[0]?.get('link')).toBe('https://example.com/hours');
    expect(fake.posts[0]?.link).toBe('https://example.com/hours');
  });

  it('uploads photos unpublished, then attaches them to one feed post; the bytes arrive intact', async () => {
    const { ctx, checkpoints } = context({
      media: [
        media('a.jpg', 'image', JPEG, 'image/jpeg', 'Front door'),
        media('b.png', 'image', PNG, 'image/png'),
      ],
      options: { link: 'https://example.com/hours' },
    });

    await connector.publish(ctx);

    const photos = posted('photos');
    expect(photos.map((p) => [p.get('url'), p.get('published'), p.get('alt_text_custom')])).toEqual([
      [`${platforms.url('cdn')}/a.jpg`, 'false', 'Front door'],
      [`${platforms.url('cdn')}/b.png`, 'false', null],
    ]);
    const ids = [...fake.photos.keys()];
    const feed = posted('feed')[0]!;
    expect(JSON.parse(feed.get('attached_media[0]') ?? '')).toEqual({ media_fbid: ids[0] });
    expect(JSON.parse(feed.get('attached_media[1]') ?? '')).toEqual({ media_fbid: ids[1] });
    // A photo post cannot carry a link attachment; the link joins the text.
    expect(feed.get('link')).toBeNull();
    expect(feed.get('message')).toBe('We are open on Sunday!\n\nhttps://example.com/hours');
    const post = fake.posts[0]!;
    expect(post.media.map((m) => m.bytes.toString('hex'))).toEqual([
      JPEG.toString('hex'),
      PNG.toString('hex'),
    ]);
    expect(post.media[0]?.alt).toBe('Front door');
    expect(checkpoints[0]?.photo_ids).toEqual(ids);
  });

  it('posts a video by file_url with description and title; the permalink is absolute', async () => {
    const { ctx } = context({ media: [media('v.mp4', 'video', MP4, 'video/mp4')], title: 'Opening hours' });

    const result = await connector.publish(ctx);

    const video = posted('videos')[0]!;
    expect(video.get('file_url')).toBe(`${platforms.url('cdn')}/v.mp4`);
    expect(video.get('description')).toBe('We are open on Sunday!');
    expect(video.get('title')).toBe('Opening hours');
    const post = fake.posts[0]!;
    expect(post.media[0]?.bytes.equals(MP4)).toBe(true);
    expect(result).toEqual({
      externalId: post.videoId,
      url: `https://www.facebook.com/${fake.pageId}/videos/${post.videoId}/`,
    });
  });
});

describe('facebook errors', () => {
  it('an invalid Page token is auth_expired', async () => {
    const { ctx, credentials } = context({ credentials: { access_token: 'stale', account_id: fake.pageId } });

    const err = await failure(connector.publish(ctx));

    expect(err.category).toBe('auth_expired');
    expect(err.retryable).toBe(false);
    expect(credentials).toHaveLength(0);
  });

  it('HTTP 401 is auth_expired', async () => {
    platforms.failNext('facebook', { status: 401, body: graphBody(190, 'Invalid OAuth access token.') });

    expect((await failure(connector.publish(context().ctx))).category).toBe('auth_expired');
  });

  it('user throttling (#17) is rate_limited with the usage header wait', async () => {
    platforms.failNext('facebook', {
      status: 400,
      headers: {
        'x-business-use-case-usage': JSON.stringify({
          [fake.pageId]: [
            {
              type: 'pages',
              call_count: 100,
              total_cputime: 5,
              total_time: 5,
              estimated_time_to_regain_access: 7,
            },
          ],
        }),
      },
      body: graphBody(17, 'User request limit reached'),
    });

    const err = await failure(connector.publish(context().ctx));

    expect(err.category).toBe('rate_limited');
    expect(err.opts.retryAfterSeconds).toBe(420);
    expect(err.opts.scope).toBeUndefined(); // a user's limit, not the app's
  });

  it('HTTP 429 with Retry-After is rate_limited', async () => {
    platforms.failNext('facebook', {
      status: 429,
      headers: { 'retry-after': '12' },
      body: graphBody(613, 'Calls to this api have exceeded the rate limit.'),
    });

    const err = await failure(connector.publish(context().ctx));

    expect(err.category).toBe('rate_limited');
    expect(err.opts.retryAfterSeconds).toBe(12);
  });

  it('a 500 is a retryable system error', async () => {
    platforms.failNext('facebook', { status: 500, body: graphBody(2, 'Service temporarily unavailable') });

    const err = await failure(connector.publish(context().ctx));

    expect(err.category).toBe('system');
    expect(err.retryable).toBe(true);
  });

  it('a duplicate status (#506) is user_content', async () => {
    await connector.publish(context().ctx);

    const err = await failure(connector.publish(context().ctx));

    expect(err.category).toBe('user_content');
    expect(err.message).toContain('#506');
  });

  it('a policy block (#368) is platform_rejected', async () => {
    platforms.failNext('facebook', {
      status: 400,
      path: /\/feed$/,
      body: graphBody(
        368,
        'The action attempted has been deemed abusive or is otherwise disallowed',
        1390008,
      ),
    });

    expect((await failure(connector.publish(context().ctx))).category).toBe('platform_rejected');
  });

  it('a photo Meta cannot fetch (#324) is media_error', async () => {
    const m = media('gone.jpg', 'image', JPEG, 'image/jpeg');
    cdnFake.files.delete('gone.jpg');

    const err = await failure(connector.publish(context({ media: [m] }).ctx));

    expect(err.category).toBe('media_error');
    expect(fake.posts).toHaveLength(0);
  });
});

describe('facebook reconcile', () => {
  it('without a checkpoint nothing was posted', async () => {
    expect(await connector.reconcile(context().ctx)).toBeNull();
  });

  it('finds the feed post when the worker died after POST /feed; publishing again returns it', async () => {
    fake.loseNextResponse = true;
    const first = context();
    expect((await failure(connector.publish(first.ctx))).category).toBe('system');
    expect(fake.posts).toHaveLength(1);

    const retry = context({ checkpoint: first.checkpoints[0] ?? null });
    const found = await connector.reconcile(retry.ctx);
    const again = await connector.publish(retry.ctx);

    const post = fake.posts[0]!;
    expect(found).toEqual({ externalId: post.id, url: post.permalink });
    expect(again).toEqual(found);
    expect(fake.posts).toHaveLength(1);
    expect(posted('feed')).toHaveLength(1);
    const lookup = platforms
      .requests('facebook')
      .find((r) => r.method === 'GET' && r.path.endsWith(`/${fake.pageId}/feed`));
    expect(Number(lookup?.query.get('since'))).toBeLessThanOrEqual(
      Math.floor(retry.ctx.attemptStartedAt.getTime() / 1000),
    );
    expect(lookup?.query.get('fields')).toBe('id,message,created_time,permalink_url');
  });

  it('a checkpoint whose post never happened reconciles to null; the retry reuses the uploaded photos', async () => {
    platforms.failNext('facebook', { status: 503, path: /\/feed$/, body: 'Service Unavailable' });
    const first = context({ media: [media('a.jpg', 'image', JPEG, 'image/jpeg')] });
    await failure(connector.publish(first.ctx));
    expect(fake.photos.size).toBe(1);

    const retry = context({ media: first.ctx.media, checkpoint: first.checkpoints[0] ?? null });
    expect(await connector.reconcile(retry.ctx)).toBeNull();
    await connector.publish(retry.ctx);

    expect(fake.photos.size).toBe(1);
    expect(fake.posts).toHaveLength(1);
    expect(fake.posts[0]?.media[0]?.bytes.equals(JPEG)).toBe(true);
  });

  it('finds a video whose POST /videos answer was lost', async () => {
    fake.loseNextResponse = true;
    const first = context({ media: [media('v.mp4', 'video', MP4, 'video/mp4')] });
    await failure(connector.publish(first.ctx));

    const found = await connector.reconcile(
      context({ media: first.ctx.media, checkpoint: first.checkpoints[0] ?? null }).ctx,
    );

    const post = fake.posts[0]!;
    expect(found).toEqual({
      externalId: post.videoId,
      url: `https://www.facebook.com/${fake.pageId}/videos/${post.videoId}/`,
    });
  });
});

describe('facebook metrics', () => {
  it('reads reactions, comments and shares from the post, views from insights', async () => {
    const { ctx } = context();
    const { externalId } = await connector.publish(ctx);
    fake.engagement.set(externalId, { reactions: 12, comments: 4, shares: 3, views: 250 });

    const metrics = await connector.metrics!(metricsContext(ctx, [externalId]));

    expect(metrics).toEqual({
      [externalId]: { impressions: 250, likes: 12, comments: 4, shares: 3, clicks: 0 },
    });
    const insights = platforms.requests('facebook').find((r) => r.path.endsWith('/insights'));
    expect(insights?.query.get('metric')).toBe('post_media_view');
  });

  it('reads a video by its counts alone (videos have no shares field)', async () => {
    const { ctx } = context({ media: [media('v.mp4', 'video', MP4, 'video/mp4')] });
    const { externalId } = await connector.publish(ctx);
    fake.engagement.set(externalId, { reactions: 5, comments: 1, shares: 0, views: 0 });

    const metrics = await connector.metrics!(metricsContext(ctx, [externalId]));

    expect(metrics[externalId]).toEqual({ impressions: 0, likes: 5, comments: 1, shares: 0, clicks: 0 });
  });
});
