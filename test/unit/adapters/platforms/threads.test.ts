import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { containerPolling } from '#adapters/platforms/meta/publish';
import { connector } from '#adapters/platforms/threads/index';
import type { PublishContext } from '#adapters/platforms/types';
import { FakePlatforms } from '../../../fakes/server.ts';
import { createFake, type ThreadsFake } from '../../../fakes/threads.ts';
import { cdn, failure, mediaInput, metricsContext, publishContext } from './context.ts';

// The Threads connector against the contract fake: container → status → threads_publish, media
// pulled by URL from a stand-in CDN, error mapping, token refresh, checkpoint and reconcile.

const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from('threads-jpeg-bytes')]);
const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypmp42-threads-video')]);

/** Serves media at public URLs, as Herald's media bucket does for Meta's fetchers. */
const cdnFake = cdn();
const platforms = new FakePlatforms([createFake(), cdnFake]);
let fake: ThreadsFake;
const savedPolling = { ...containerPolling };

beforeAll(async () => {
  await platforms.start();
  fake = platforms.fake<ThreadsFake>('threads');
  process.env.HERALD_PLATFORM_THREADS_URL = platforms.url('threads');
  Object.assign(containerPolling, { firstDelayMs: 5, maxDelayMs: 20, budgetMs: 2000 });
});
afterAll(async () => {
  Object.assign(containerPolling, savedPolling);
  delete process.env.HERALD_PLATFORM_THREADS_URL;
  await platforms.stop();
});
beforeEach(() => platforms.reset());
afterEach(() => Object.assign(containerPolling, { firstDelayMs: 5, maxDelayMs: 20, budgetMs: 2000 }));

function media(name: string, type: 'image' | 'video', bytes: Buffer, alt = '') {
  const contentType = type === 'image' ? 'image/jpeg' : 'video/mp4';
  cdnFake.files.set(name, { bytes, type: contentType });
  const url = `${platforms.url('cdn')}/${name}`;
  return mediaInput(new Uint8Array(bytes), type, contentType, { alt, filename: name, url });
}

function context(over: Partial<PublishContext> = {}) {
  const { saved, ...recorded } = publishContext({
    channel: { id: 'ch_threads', handle: 'herald_test', platform: 'threads' },
    credentials: { access_token: 'token', account_id: fake.userId },
    ...over,
  });
  return { ...recorded, credentials: saved };
}

const requests = (method: string, path: RegExp) =>
  platforms.requests('threads').filter((r) => r.method === method && path.test(r.path));
const form = (r: { body: Buffer }) => new URLSearchParams(r.body.toString('utf8'));

describe('threads publish', () => {
  it('posts text through a TEXT container and threads_publish, returning the permalink', async () => {
    const { ctx } = context();

    const result = await connector.publish(ctx);

    expect(fake.posts).toHaveLength(1);
    const post = fake.posts[0]!;
    expect(result).toEqual({ externalId: post.id, url: post.permalink });
    expect(post.text).toBe('Hello from Herald');
    const [create] = requests('POST', /^\/v1\.0\/\d+\/threads$/);
    expect(create).toBeDefined();
    const params = form(create!);
    expect(params.get('media_type')).toBe('TEXT');
    expect(params.get('text')).toBe('Hello from Herald');
    expect(params.get('access_token')).toBe('token');
    const [pub] = requests('POST', /\/threads_publish$/);
    expect(form(pub!).get('creation_id')).toBe(post.containerId);
  });

  it('maps reply_control onto the container', async () => {
    const { ctx } = context({ options: { reply_control: 'mentioned_only' } });

    await connector.publish(ctx);

    expect(fake.posts[0]?.replyControl).toBe('mentioned_only');
  });

  it('posts one image by URL with its alt text; Meta receives the exact bytes', async () => {
    const { ctx } = context({ media: [media('a.jpg', 'image', JPEG, 'A red kite')] });

    await connector.publish(ctx);

    const post = fake.posts[0]!;
    expect(post.mediaType).toBe('IMAGE');
    expect(post.media).toHaveLength(1);
    expect(post.media[0]?.bytes.equals(JPEG)).toBe(true);
    expect(post.media[0]?.altText).toBe('A red kite');
    const params = form(requests('POST', /\/threads$/)[0]!);
    expect(params.get('image_url')).toBe(`${platforms.url('cdn')}/a.jpg`);
  });

  it('builds a carousel from item containers, waiting while Meta processes them', async () => {
    fake.processingPolls = 2;
    const { ctx } = context({ media: [media('1.jpg', 'image', JPEG), media('2.mp4', 'video', MP4)] });

    await connector.publish(ctx);

    const post = fake.posts[0]!;
    expect(post.mediaType).toBe('CAROUSEL_ALBUM');
    expect(post.media.map((m) => m.type)).toEqual(['IMAGE', 'VIDEO']);
    expect(post.media[0]?.bytes.equals(JPEG)).toBe(true);
    expect(post.media[1]?.bytes.equals(MP4)).toBe(true);
    const creates = requests('POST', /\/threads$/).map(form);
    expect(
      creates.slice(0, 2).map((p) => [p.get('media_type'), p.get('is_carousel_item'), p.get('text')]),
    ).toEqual([
      ['IMAGE', 'true', null],
      ['VIDEO', 'true', null],
    ]);
    const parent = creates[2]!;
    expect(parent.get('media_type')).toBe('CAROUSEL');
    expect(parent.get('text')).toBe('Hello from Herald');
    const children = fake.containers.get(post.containerId)!.children;
    expect(parent.get('children')).toBe(children.join(','));
    // Status was polled until FINISHED (IN_PROGRESS answers included).
    expect(requests('GET', /^\/v1\.0\/\d+$/).length).toBeGreaterThanOrEqual(6);
  });

  it('saves the container as checkpoint before publishing it', async () => {
    let postsAtCheckpoint = -1;
    const { ctx, checkpoints } = context({
      async saveCheckpoint(cp) {
        postsAtCheckpoint = fake.posts.length;
        checkpoints.push(cp);
      },
    });

    await connector.publish(ctx);

    expect(postsAtCheckpoint).toBe(0);
    expect(checkpoints).toHaveLength(1);
    expect(checkpoints[0]?.container_id).toBe(fake.posts[0]?.containerId);
  });
});

describe('threads errors', () => {
  it('an invalid token is auth_expired (the refresh is refused too)', async () => {
    const { ctx, credentials } = context({
      credentials: { access_token: 'revoked', account_id: fake.userId },
    });

    const err = await failure(connector.publish(ctx));

    expect(err.category).toBe('auth_expired');
    expect(err.retryable).toBe(false);
    expect(credentials).toHaveLength(0);
    expect(fake.posts).toHaveLength(0);
  });

  it('an expired session (190/463) is auth_expired', async () => {
    fake.expiredTokens.add('old');
    const { ctx } = context({ credentials: { access_token: 'old', account_id: fake.userId } });

    expect((await failure(connector.publish(ctx))).category).toBe('auth_expired');
  });

  it('HTTP 401 with a Graph 190 body is auth_expired when refreshing does not help', async () => {
    platforms.failNext('threads', {
      status: 401,
      path: /threads$/,
      times: 2,
      body: {
        error: { message: 'Invalid OAuth access token.', type: 'OAuthException', code: 190, fbtrace_id: 'x' },
      },
    });
    const { ctx } = context();

    expect((await failure(connector.publish(ctx))).category).toBe('auth_expired');
  });

  it('throttling (#4) is rate_limited with the Business Use Case wait', async () => {
    platforms.failNext('threads', {
      status: 400,
      headers: {
        'x-business-use-case-usage': JSON.stringify({
          '1784': [
            {
              type: 'threads',
              call_count: 100,
              total_cputime: 20,
              total_time: 30,
              estimated_time_to_regain_access: 3,
            },
          ],
        }),
      },
      body: {
        error: {
          message: '(#4) Application request limit reached',
          type: 'OAuthException',
          code: 4,
          is_transient: true,
        },
      },
    });
    const { ctx } = context();

    const err = await failure(connector.publish(ctx));

    expect(err.category).toBe('rate_limited');
    expect(err.opts.retryAfterSeconds).toBe(180);
    expect(err.retryable).toBe(true);
    expect(err.opts.scope).toBe('app'); // #4: the app's request limit
  });

  it('HTTP 429 with Retry-After is rate_limited', async () => {
    platforms.failNext('threads', { status: 429, headers: { 'retry-after': '30' }, body: 'slow down' });
    const { ctx } = context();

    const err = await failure(connector.publish(ctx));

    expect(err.category).toBe('rate_limited');
    expect(err.opts.retryAfterSeconds).toBe(30);
  });

  it('a 500 is a retryable system error', async () => {
    platforms.failNext('threads', {
      status: 500,
      body: {
        error: {
          message: 'An unknown error has occurred.',
          type: 'OAuthException',
          code: 1,
          fbtrace_id: 'y',
        },
      },
    });
    const { ctx } = context();

    const err = await failure(connector.publish(ctx));

    expect(err.category).toBe('system');
    expect(err.retryable).toBe(true);
  });

  it('an invalid parameter (#100, text over 500) is user_content', async () => {
    const { ctx } = context({ text: 'x'.repeat(501) });

    const err = await failure(connector.publish(ctx));

    expect(err.category).toBe('user_content');
    expect(err.message).toContain('500 characters');
  });

  it('a video Meta cannot download fails the container: media_error', async () => {
    const video = media('gone.mp4', 'video', MP4);
    cdnFake.files.delete('gone.mp4');
    const { ctx } = context({ media: [video] });

    const err = await failure(connector.publish(ctx));

    expect(err.category).toBe('media_error');
    expect(err.message).toContain('FAILED_DOWNLOADING_VIDEO');
  });

  it('a policy block (#368) is platform_rejected', async () => {
    platforms.failNext('threads', {
      status: 400,
      path: /threads_publish$/,
      body: {
        error: { message: 'It looks like you were misusing this feature', type: 'OAuthException', code: 368 },
      },
    });
    const { ctx } = context();

    expect((await failure(connector.publish(ctx))).category).toBe('platform_rejected');
  });

  it('a container still processing past the budget is retryable, and the next attempt resumes it', async () => {
    fake.processingPolls = 1000;
    Object.assign(containerPolling, { firstDelayMs: 5, maxDelayMs: 5, budgetMs: 30 });
    const first = context({ media: [media('slow.mp4', 'video', MP4)] });

    const err = await failure(connector.publish(first.ctx));
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(true);
    expect(fake.posts).toHaveLength(0);

    const container = fake.containers.get(String(first.checkpoints[0]?.container_id))!;
    container.pollsLeft = 0;
    const second = context({ media: first.ctx.media, checkpoint: first.checkpoints[0] ?? null });
    await connector.publish(second.ctx);

    expect(fake.containers.size).toBe(1);
    expect(fake.posts).toHaveLength(1);
    expect(fake.posts[0]?.containerId).toBe(container.id);
  });
});

describe('threads token refresh', () => {
  it('refreshes once when the token is refused, stores it, and retries', async () => {
    platforms.failNext('threads', {
      status: 400,
      path: /\/threads$/,
      body: {
        error: {
          message: 'Error validating access token',
          type: 'OAuthException',
          code: 190,
          error_subcode: 467,
        },
      },
    });
    const { ctx, credentials } = context({
      credentials: { access_token: 'token', account_id: fake.userId, extra: 'kept' },
    });

    await connector.publish(ctx);

    expect(fake.posts).toHaveLength(1);
    expect(fake.refreshed).toEqual(['threads-refreshed-1']);
    expect(credentials).toHaveLength(1);
    expect(credentials[0]).toMatchObject({
      access_token: 'threads-refreshed-1',
      account_id: fake.userId,
      extra: 'kept',
    });
    expect(Date.parse(String(credentials[0]?.expires_at))).toBeGreaterThan(Date.now() + 59 * 24 * 3600_000);
    const refresh = platforms.requests('threads').find((r) => r.path === '/refresh_access_token');
    expect(refresh?.query.get('grant_type')).toBe('th_refresh_token');
    expect(form(requests('POST', /threads_publish$/)[0]!).get('access_token')).toBe('threads-refreshed-1');
  });

  it('refreshes a token about to expire (within the minute) first and uses the new token throughout', async () => {
    // Earlier renewals are the channel sync's (usecases/channel-sync.ts): half the token's life ahead.
    const soon = new Date(Date.now() + 30_000).toISOString();
    const { ctx, credentials } = context({
      credentials: { access_token: 'token', account_id: fake.userId, expires_at: soon },
    });

    await connector.publish(ctx);

    expect(credentials).toHaveLength(1);
    const api = platforms.requests('threads').filter((r) => r.path.startsWith('/v1.0/'));
    expect(api.length).toBeGreaterThan(0);
    for (const r of api)
      expect(r.query.get('access_token') ?? form(r).get('access_token')).toBe('threads-refreshed-1');
  });
});

describe('threads reconcile', () => {
  it('without a checkpoint nothing was published', async () => {
    const { ctx } = context();

    expect(await connector.reconcile(ctx)).toBeNull();
  });

  it('finds the post when the worker died after threads_publish, and never posts twice', async () => {
    fake.loseNextPublishResponse = true;
    const first = context();
    const err = await failure(connector.publish(first.ctx));
    expect(err.category).toBe('system');
    expect(fake.posts).toHaveLength(1);

    const retry = context({
      checkpoint: first.checkpoints[0] ?? null,
      attemptStartedAt: new Date(Date.now() + 1000),
    });
    const found = await connector.reconcile(retry.ctx);
    const again = await connector.publish(retry.ctx);

    const post = fake.posts[0]!;
    expect(found).toEqual({ externalId: post.id, url: post.permalink });
    expect(again).toEqual(found);
    expect(fake.posts).toHaveLength(1);
    expect(requests('POST', /threads_publish$/)).toHaveLength(1);
  });

  it('a checkpointed container that was never published reconciles to null and is reused', async () => {
    platforms.failNext('threads', { status: 503, path: /threads_publish$/, body: 'unavailable' });
    const first = context();
    await failure(connector.publish(first.ctx));

    const retry = context({ checkpoint: first.checkpoints[0] ?? null });
    expect(await connector.reconcile(retry.ctx)).toBeNull();
    await connector.publish(retry.ctx);

    expect(fake.containers.size).toBe(1);
    expect(fake.posts).toHaveLength(1);
  });

  it('a PUBLISHED container whose post cannot be found is an unknown outcome', async () => {
    const first = context();
    await connector.publish(first.ctx);
    fake.posts = [];

    const err = await failure(connector.reconcile(context({ checkpoint: first.checkpoints[0] ?? null }).ctx));

    expect(err.category).toBe('system');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('outcome unknown');
  });
});

describe('threads metrics', () => {
  it('maps views, likes, replies and reposts + quotes', async () => {
    const { ctx } = context();
    const { externalId } = await connector.publish(ctx);
    fake.insights.set(externalId, { views: 120, likes: 7, replies: 3, reposts: 2, quotes: 1 });

    const metrics = await connector.metrics!(metricsContext(ctx, [externalId, '999999']));

    expect(metrics).toEqual({
      [externalId]: { impressions: 120, likes: 7, comments: 3, shares: 3, clicks: 0 },
    });
    const call = requests('GET', /\/insights$/)[0]!;
    expect(call.query.get('metric')).toBe('views,likes,replies,reposts,quotes');
  });
});

describe('threads: a thread of replies', () => {
  it('a thread item is a container with reply_to_id (the part before it), published as a reply', async () => {
    const root = await connector.publish(context({ text: 'one' }).ctx);
    const two = await connector.publish(
      context({ text: 'two', part: { kind: 'thread', index: 0 }, replyTo: { root, parent: root } }).ctx,
    );
    await connector.publish(
      context({ text: 'three', part: { kind: 'thread', index: 1 }, replyTo: { root, parent: two } }).ctx,
    );

    const containers = requests('POST', /\/threads$/).map((r) => form(r));
    expect(containers.map((f) => [f.get('text'), f.get('reply_to_id')])).toEqual([
      ['one', null],
      ['two', root.externalId],
      ['three', two.externalId],
    ]);
    expect(fake.posts.map((p) => [p.text, p.repliedTo, p.rootPost])).toEqual([
      ['one', undefined, undefined],
      ['two', root.externalId, root.externalId],
      ['three', two.externalId, root.externalId],
    ]);
  });

  it('a reply to a post that does not exist is refused (Graph code 100), nothing published', async () => {
    const gone = { externalId: '17900000000000000', url: null };
    const err = await failure(
      connector.publish(context({ text: 'two', replyTo: { root: gone, parent: gone } }).ctx),
    );
    expect(err.retryable).toBe(false);
    expect(fake.posts).toHaveLength(0);
  });

  it("an answer lost after threads_publish: reconcile finds the reply under the account's replies, answering its parent", async () => {
    const root = await connector.publish(context({ text: 'one' }).ctx);
    const other = await connector.publish(context({ text: 'other' }).ctx);
    // The same text answering another post: not this part.
    await connector.publish(context({ text: 'two', replyTo: { root: other, parent: other } }).ctx);
    fake.loseNextPublishResponse = true;
    const { ctx, checkpoints } = context({
      text: 'two',
      part: { kind: 'thread', index: 0 },
      replyTo: { root, parent: root },
    });
    await failure(connector.publish(ctx));
    const made = fake.posts.at(-1);

    const again = context({
      text: 'two',
      part: { kind: 'thread', index: 0 },
      replyTo: { root, parent: root },
      checkpoint: checkpoints.at(-1) as Record<string, unknown>,
      attemptStartedAt: ctx.attemptStartedAt,
    });
    expect(await connector.reconcile(again.ctx)).toEqual({ externalId: made?.id, url: made?.permalink });
    const [listed] = requests('GET', /\/replies$/);
    expect(listed?.query.get('fields')).toContain('replied_to');
  });
});
