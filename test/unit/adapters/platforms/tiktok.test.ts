import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connector } from '#adapters/platforms/tiktok/index';
import { polling } from '#adapters/platforms/tiktok/publish';
import type { MediaInput, MetricsContext, PublishContext } from '#adapters/platforms/types';
import { FAKE_APPS } from '../../../fakes/oauth.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { createFake, type TikTokFake } from '../../../fakes/tiktok.ts';
import { type Fixture, failure, mediaInput, memoryTokens, patternBytes, publishFixture } from './context.ts';

// The TikTok connector against the contract fake of the Content Posting API.

const MB = 1024 * 1024;
let fakes: FakePlatforms;
let fake: TikTokFake;
const savedPolling = { ...polling };

beforeAll(async () => {
  fakes = await new FakePlatforms([createFake()]).start();
  fake = fakes.fake<TikTokFake>('tiktok');
  process.env.HERALD_PLATFORM_TIKTOK_URL = fakes.url('tiktok');
  polling.delaysMs = [0, 5];
  polling.budgetMs = 2_000;
});

afterAll(async () => {
  Object.assign(polling, savedPolling);
  delete process.env.HERALD_PLATFORM_TIKTOK_URL;
  await fakes.stop();
});

beforeEach(() => fakes.reset());

const bytesOf = (n: number, seed = 7) => patternBytes(n, seed, 31);

function mediaItem(
  type: 'image' | 'video',
  contentType: string,
  bytes: Uint8Array,
  url = 'https://media.example/m/1',
): MediaInput {
  return mediaInput(bytes, type, contentType, { filename: 'file', url });
}

const video = (bytes = bytesOf(3000)) => mediaItem('video', 'video/mp4', bytes);

function ctxOf(over: Partial<PublishContext> = {}): Fixture {
  return publishFixture({
    channel: { id: 'ch_1', handle: '@herald', platform: 'tiktok' },
    credentials: {
      access_token: 'token',
      refresh_token: 'refresh',
      account_id: 'open-id-1',
    },
    text: 'Hello TikTok #herald',
    media: [video()],
    idempotencyKey: 'post_1.ch_1',
    // The tests of Direct Post run as an audited app; the modes' own tests say otherwise.
    app: { audited: true },
    ...over,
  });
}

const paths = () => fakes.requests('tiktok').map((r) => `${r.method} ${r.path}`);

describe('tiktok publish', () => {
  it('posts a small video in one chunk, with the documented init shape, and returns the permalink', async () => {
    const bytes = bytesOf(3000);
    const res = await connector.publish(ctxOf({ media: [video(bytes)] }));

    expect(fake.posts).toHaveLength(1);
    const post = fake.posts[0]!;
    expect(res).toEqual({ externalId: post.id, url: `https://www.tiktok.com/@herald/video/${post.id}` });
    // The 19-digit id survived JSON parsing intact.
    expect(post.id).toMatch(/^74\d{17}$/);
    expect(Buffer.from(post.bytes!).equals(Buffer.from(bytes))).toBe(true);
    expect(post.chunks).toEqual(['bytes 0-2999/3000']);
    expect(post.contentType).toBe('video/mp4');

    const init = fakes.requests('tiktok').find((r) => r.path === '/v2/post/publish/video/init/')!;
    expect(init.headers.authorization).toBe('Bearer token');
    expect(init.json).toEqual({
      post_info: {
        title: 'Hello TikTok #herald',
        privacy_level: 'PUBLIC_TO_EVERYONE',
        disable_comment: false,
        disable_duet: false,
        disable_stitch: false,
        brand_content_toggle: false,
        brand_organic_toggle: false,
      },
      source_info: { source: 'FILE_UPLOAD', video_size: 3000, chunk_size: 3000, total_chunk_count: 1 },
    });
    expect(paths()).toEqual([
      'POST /v2/post/publish/creator_info/query/',
      'POST /v2/post/publish/video/init/',
      'PUT /upload/',
      'POST /v2/post/publish/status/fetch/',
      'POST /v2/post/publish/status/fetch/',
    ]);
  });

  it('uploads a large video in sequential chunks, the last one carrying the remainder', async () => {
    const bytes = bytesOf(2 * 10 * MB + 12_345);
    const f = ctxOf({ media: [video(bytes)] });
    await connector.publish(f);

    const post = fake.posts[0]!;
    expect(post.sourceInfo).toMatchObject({
      video_size: bytes.length,
      chunk_size: 10 * MB,
      total_chunk_count: 2,
    });
    expect(post.chunks).toEqual([
      `bytes 0-${10 * MB - 1}/${bytes.length}`,
      `bytes ${10 * MB}-${bytes.length - 1}/${bytes.length}`,
    ]);
    expect(Buffer.from(post.bytes!).equals(Buffer.from(bytes))).toBe(true);
    expect(f.checkpoints[0]).toMatchObject({
      media: 'video',
      video_size: bytes.length,
      publish_id: post.publishId,
    });
  });

  it('maps options and honours the creator’s disabled interactions', async () => {
    fake.creator.stitch_disabled = true;
    await connector.publish(
      ctxOf({
        options: { privacy_level: 'MUTUAL_FOLLOW_FRIENDS', disable_comment: true, disable_duet: false },
      }),
    );
    expect(fake.posts[0]!.postInfo).toMatchObject({
      privacy_level: 'MUTUAL_FOLLOW_FRIENDS',
      disable_comment: true,
      disable_duet: false,
      disable_stitch: true,
    });
  });

  it('defaults to the most public privacy level the creator allows', async () => {
    fake.creator.privacy_level_options = ['FOLLOWER_OF_CREATOR', 'SELF_ONLY'];
    await connector.publish(ctxOf());
    expect(fake.posts[0]!.privacyLevel).toBe('FOLLOWER_OF_CREATOR');
  });

  it('refuses a privacy level the creator does not offer before posting anything', async () => {
    fake.creator.privacy_level_options = ['SELF_ONLY'];
    const err = await failure(connector.publish(ctxOf({ options: { privacy_level: 'PUBLIC_TO_EVERYONE' } })));
    expect(err.category).toBe('user_content');
    expect(err.retryable).toBe(false);
    expect(paths()).not.toContain('POST /v2/post/publish/video/init/');
  });

  it('returns the publish_id and no permalink for a private post', async () => {
    const res = await connector.publish(ctxOf({ options: { privacy_level: 'SELF_ONLY' } }));
    expect(res).toEqual({ externalId: fake.posts[0]!.publishId, url: null });
  });

  it('posts photos by URL with the caption as description and the title cut to 90 characters', async () => {
    const photos = [
      mediaItem('image', 'image/jpeg', bytesOf(10), 'https://media.example/a.jpg'),
      mediaItem('image', 'image/webp', bytesOf(10), 'https://media.example/b.webp'),
    ];
    const f = ctxOf({ media: photos, title: 'T'.repeat(120) });
    const res = await connector.publish(f);

    const post = fake.posts[0]!;
    expect(res).toEqual({ externalId: post.id, url: `https://www.tiktok.com/@herald/photo/${post.id}` });
    const init = fakes.requests('tiktok').find((r) => r.path === '/v2/post/publish/content/init/')!;
    expect(init.json).toEqual({
      media_type: 'PHOTO',
      post_mode: 'DIRECT_POST',
      post_info: {
        title: 'T'.repeat(90),
        description: 'Hello TikTok #herald',
        privacy_level: 'PUBLIC_TO_EVERYONE',
        disable_comment: false,
        auto_add_music: true,
        brand_content_toggle: false,
        brand_organic_toggle: false,
      },
      source_info: {
        source: 'PULL_FROM_URL',
        photo_images: ['https://media.example/a.jpg', 'https://media.example/b.webp'],
        photo_cover_index: 0,
      },
    });
    expect(f.checkpoints).toEqual([
      { phase: 'photo_init', media: 'photo', mode: 'direct' },
      { publish_id: post.publishId, media: 'photo', mode: 'direct' },
    ]);
  });

  it('rejects PNG photos as a media error without calling TikTok', async () => {
    const err = await failure(
      connector.publish(ctxOf({ media: [mediaItem('image', 'image/png', bytesOf(10))] })),
    );
    expect(err.category).toBe('media_error');
    expect(fakes.requests('tiktok')).toHaveLength(0);
  });

  it('maps a FAILED post’s fail_reason', async () => {
    fake.failNextPost = 'file_format_check_failed';
    const err = await failure(connector.publish(ctxOf()));
    expect(err.category).toBe('media_error');
    expect(err.message).toContain('file_format_check_failed');
  });

  it('gives up polling after its budget with a retryable system error, and the retry resumes the same post', async () => {
    fake.processingPolls = 1_000;
    polling.budgetMs = 30;
    const f = ctxOf();
    const err = await failure(connector.publish(f));
    polling.budgetMs = 2_000;
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(true);

    fake.settle();
    // The worker's next attempt calls publish again with the saved checkpoint.
    const done = fake.posts.length;
    const res = await connector.publish(f);
    expect(fake.posts.length).toBe(done);
    expect(res.externalId).toBe(fake.posts[0]!.id);
    expect(paths().filter((p) => p.endsWith('/video/init/'))).toHaveLength(1);
  });
});

describe('tiktok errors', () => {
  it('401 access_token_invalid → auth_expired when the token cannot be refreshed', async () => {
    const err = await failure(
      connector.publish(ctxOf({ credentials: { access_token: 'stale', account_id: 'x' } })),
    );
    expect(err.category).toBe('auth_expired');
    expect(err.retryable).toBe(false);
  });

  it('429 rate_limit_exceeded → rate_limited with the Retry-After hint', async () => {
    fakes.failNext('tiktok', {
      status: 429,
      headers: { 'retry-after': '42' },
      body: {
        data: {},
        error: { code: 'rate_limit_exceeded', message: 'The API rate limit was exceeded.', log_id: 'l1' },
      },
    });
    const err = await failure(connector.publish(ctxOf()));
    expect(err.category).toBe('rate_limited');
    expect(err.opts.retryAfterSeconds).toBe(42);
    expect(err.retryable).toBe(true);
  });

  it('403 spam_risk_too_many_posts → rate_limited (the daily posting cap)', async () => {
    fakes.failNext('tiktok', {
      status: 403,
      path: /video\/init/,
      body: {
        data: {},
        error: { code: 'spam_risk_too_many_posts', message: 'Daily post cap reached.', log_id: 'l2' },
      },
    });
    const err = await failure(connector.publish(ctxOf()));
    expect(err.category).toBe('rate_limited');
    expect(err.opts.scope).toBeUndefined();
  });

  it('403 reached_active_user_cap → rate_limited for the whole app (its daily posting users)', async () => {
    fakes.failNext('tiktok', {
      status: 403,
      path: /video\/init/,
      body: {
        data: {},
        error: {
          code: 'reached_active_user_cap',
          message: 'Daily quota of active users reached.',
          log_id: 'l3',
        },
      },
    });
    const err = await failure(connector.publish(ctxOf()));
    expect(err.category).toBe('rate_limited');
    expect(err.opts.scope).toBe('app');
  });

  it('403 unaudited_client_can_only_post_to_private_accounts → platform_rejected', async () => {
    fakes.failNext('tiktok', {
      status: 403,
      path: /video\/init/,
      body: {
        data: {},
        error: { code: 'unaudited_client_can_only_post_to_private_accounts', message: '', log_id: 'l3' },
      },
    });
    const err = await failure(connector.publish(ctxOf()));
    expect(err.category).toBe('platform_rejected');
    expect(err.retryable).toBe(false);
  });

  it('400 invalid_params → user_content', async () => {
    const err = await failure(connector.publish(ctxOf({ text: 'x'.repeat(2300) })));
    expect(err.category).toBe('user_content');
    expect(err.message).toContain('invalid_params');
  });

  it('500 internal_error → system, retryable', async () => {
    fakes.failNext('tiktok', {
      status: 500,
      body: { data: {}, error: { code: 'internal_error', message: 'Something went wrong.', log_id: 'l4' } },
    });
    const err = await failure(connector.publish(ctxOf()));
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(true);
  });
});

describe('tiktok token refresh', () => {
  it('refreshes once after a 401, retries, and stores the rotated tokens', async () => {
    const f = ctxOf({ credentials: { ...ctxOf().credentials, access_token: 'revoked' } });
    await connector.publish(f);

    expect(fake.posts).toHaveLength(1);
    expect(f.saved).toHaveLength(1);
    const saved = f.saved[0]!;
    expect(saved.access_token).toBe(fake.minted[0]);
    expect(saved.refresh_token).toMatch(/^rft\.minted/);
    expect(saved.account_id).toBe('open-id-1');
    expect(Date.parse(String(saved.expires_at))).toBeGreaterThan(Date.now());
    const form = new URLSearchParams(
      fakes
        .requests('tiktok')
        .find((r) => r.path === '/v2/oauth/token/')!
        .body.toString(),
    );
    expect(Object.fromEntries(form)).toEqual({
      client_key: FAKE_APPS.tiktok.clientId,
      client_secret: FAKE_APPS.tiktok.clientSecret,
      grant_type: 'refresh_token',
      refresh_token: 'refresh',
    });
  });

  it('refreshes proactively when expires_at has passed', async () => {
    const f = ctxOf({
      credentials: { ...ctxOf().credentials, access_token: 'old', expires_at: '2020-01-01T00:00:00Z' },
    });
    await connector.publish(f);
    expect(paths()[0]).toBe('POST /v2/oauth/token/');
    expect(f.saved).toHaveLength(1);
    expect(fakes.requests('tiktok').filter((r) => r.headers.authorization === 'Bearer old')).toHaveLength(0);
  });

  it('a refused refresh → auth_expired', async () => {
    const f = ctxOf({
      credentials: { ...ctxOf().credentials, access_token: 'revoked', refresh_token: 'gone' },
    });
    const err = await failure(connector.publish(f));
    expect(err.category).toBe('auth_expired');
    expect(f.saved).toHaveLength(0);
  });
});

describe('tiktok reconcile', () => {
  it('finds the post after a crash past the upload; nothing is posted twice', async () => {
    // The attempt dies after the bytes went up: its status fetch fails.
    fakes.failNext('tiktok', { status: 503, path: /status\/fetch/ });
    const first = ctxOf();
    const err = await failure(connector.publish(first));
    expect(err.category).toBe('system');
    expect(fake.posts).toHaveLength(1);

    const found = await connector.reconcile(ctxOf({ checkpoint: first.checkpoint }));
    const post = fake.posts[0]!;
    expect(found).toEqual({ externalId: post.id, url: `https://www.tiktok.com/@herald/video/${post.id}` });
    expect(fake.posts).toHaveLength(1);
    expect(paths().filter((p) => p.endsWith('/video/init/'))).toHaveLength(1);
    expect(paths().filter((p) => p === 'PUT /upload/')).toHaveLength(1);
  });

  it('null without a checkpoint, and null when the upload never completed', async () => {
    expect(await connector.reconcile(ctxOf())).toBeNull();

    fakes.failNext('tiktok', { status: 500, path: /^\/upload\//, times: 5 });
    const f = ctxOf();
    await failure(connector.publish(f));
    expect(f.checkpoint).toMatchObject({ media: 'video' });
    expect(await connector.reconcile(ctxOf({ checkpoint: f.checkpoint }))).toBeNull();
    expect(fake.posts).toHaveLength(0);
  });

  it('null when TikTok reports the post FAILED', async () => {
    fake.failNextPost = 'duration_check_failed';
    const f = ctxOf();
    await failure(connector.publish(f));
    expect(await connector.reconcile(ctxOf({ checkpoint: f.checkpoint }))).toBeNull();
  });

  it('outcome unknown when a photo init was sent but its publish_id never recorded', async () => {
    const err = await failure(
      connector.reconcile(ctxOf({ checkpoint: { phase: 'photo_init', media: 'photo' } })),
    );
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('outcome unknown');
  });

  it('a refused photo init clears the marker: the retry is safe', async () => {
    const f = ctxOf({
      media: [mediaItem('image', 'image/jpeg', bytesOf(10), 'https://media.example/a.jpg')],
    });
    fakes.failNext('tiktok', {
      status: 400,
      path: /content\/init/,
      body: { data: {}, error: { code: 'invalid_params', message: 'bad', log_id: 'l5' } },
    });
    await failure(connector.publish(f));
    expect(f.checkpoint).toEqual({});
    expect(await connector.reconcile(ctxOf({ checkpoint: f.checkpoint }))).toBeNull();
  });
});

describe('tiktok metrics', () => {
  it('reads like/comment/share/view counts through the video query', async () => {
    const res = await connector.publish(ctxOf());
    fake.stats.set(res.externalId, { like_count: 5, comment_count: 2, share_count: 1, view_count: 100 });
    const ctx: MetricsContext = {
      channel: { id: 'ch_1', handle: '@herald', platform: 'tiktok' },
      credentials: { access_token: 'token', account_id: 'open-id-1' },
      externalIds: [res.externalId, 'v_pub_file~v2-1.1'],
      tokens: memoryTokens('tiktok', { access_token: 'token', account_id: 'open-id-1' }, []),
    };
    const m = await connector.metrics!(ctx);
    expect(m).toEqual({
      [res.externalId]: { impressions: 100, likes: 5, comments: 2, shares: 1, clicks: 0 },
    });
    const q = fakes.requests('tiktok').find((r) => r.path === '/v2/video/query/')!;
    expect(q.query.get('fields')).toBe('id,like_count,comment_count,share_count,view_count');
    expect(q.json).toEqual({ filters: { video_ids: [res.externalId] } });
  });
});

describe('tiktok post modes', () => {
  const unaudited = (over: Partial<PublishContext> = {}) => ctxOf({ app: { audited: false }, ...over });

  it('an unaudited app defaults to inbox: source_info only, no creator query, published with the publish_id and no URL', async () => {
    const f = unaudited();
    const res = await connector.publish(f);

    const post = fake.posts[0]!;
    expect(post.mode).toBe('inbox');
    expect(res).toEqual({ externalId: post.publishId, url: null });
    const init = fakes.requests('tiktok').find((r) => r.path === '/v2/post/publish/inbox/video/init/')!;
    expect(init.json).toEqual({
      source_info: { source: 'FILE_UPLOAD', video_size: 3000, chunk_size: 3000, total_chunk_count: 1 },
    });
    expect(paths()).not.toContain('POST /v2/post/publish/creator_info/query/');
    expect(paths()).not.toContain('POST /v2/post/publish/video/init/');
    expect(f.checkpoints).toEqual([
      { publish_id: post.publishId, media: 'video', video_size: 3000, mode: 'inbox' },
    ]);
  });

  it('a context without the app setting is unaudited too; an audited app defaults to direct', async () => {
    await connector.publish(ctxOf({ app: undefined }));
    await connector.publish(ctxOf({ app: { audited: true } }));
    expect(fake.posts.map((p) => p.mode)).toEqual(['inbox', 'direct']);
  });

  it('post_mode direct from an unaudited app without a privacy level posts SELF_ONLY (what TikTok allows it)', async () => {
    fake.configure?.({ audited: false });
    const res = await connector.publish(unaudited({ options: { post_mode: 'direct' } }));
    const post = fake.posts[0]!;
    expect(post.mode).toBe('direct');
    expect(post.privacyLevel).toBe('SELF_ONLY');
    // Private posts get no public id.
    expect(res).toEqual({ externalId: post.publishId, url: null });
  });

  it("a public Direct Post from an unaudited app is TikTok's refusal, with what to do", async () => {
    fake.configure?.({ audited: false });
    const err = await failure(
      connector.publish(unaudited({ options: { post_mode: 'direct', privacy_level: 'PUBLIC_TO_EVERYONE' } })),
    );
    expect(err.category).toBe('platform_rejected');
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/unaudited_client_can_only_post_to_private_accounts/);
    expect(err.message).toMatch(/post_mode inbox/);
    expect(fake.posts).toHaveLength(0);
  });

  it('an app marked audited that TikTok has not audited is refused the same way (the fake checks, not Herald)', async () => {
    fake.configure?.({ audited: false });
    const err = await failure(connector.publish(ctxOf({ app: { audited: true } })));
    expect(err.message).toMatch(/unaudited_client_can_only_post_to_private_accounts/);
  });

  it('the disclosure fields and the cover frame reach post_info', async () => {
    await connector.publish(
      ctxOf({
        options: {
          post_mode: 'direct',
          brand_content: true,
          brand_organic: true,
          ai_generated: true,
          cover_timestamp_ms: 1500,
        },
      }),
    );
    expect(fake.posts[0]!.postInfo).toMatchObject({
      brand_content_toggle: true,
      brand_organic_toggle: true,
      is_aigc: true,
      video_cover_timestamp_ms: 1500,
    });
  });

  it('photos in inbox mode: content/init MEDIA_UPLOAD with the title and description only', async () => {
    const photos = [mediaItem('image', 'image/jpeg', bytesOf(10), 'https://media.example/a.jpg')];
    const f = unaudited({ media: photos, title: 'A title' });
    const res = await connector.publish(f);
    const post = fake.posts[0]!;
    expect(post.mode).toBe('inbox');
    expect(res).toEqual({ externalId: post.publishId, url: null });
    const init = fakes.requests('tiktok').find((r) => r.path === '/v2/post/publish/content/init/')!;
    expect(init.json).toEqual({
      media_type: 'PHOTO',
      post_mode: 'MEDIA_UPLOAD',
      post_info: { title: 'A title', description: 'Hello TikTok #herald' },
      source_info: {
        source: 'PULL_FROM_URL',
        photo_images: ['https://media.example/a.jpg'],
        photo_cover_index: 0,
      },
    });
  });

  it('an inbox upload whose status fetch failed is found by reconcile, still without a URL, never uploaded twice', async () => {
    fakes.failNext('tiktok', { status: 503, path: /status\/fetch/ });
    const first = unaudited();
    await failure(connector.publish(first));
    const found = await connector.reconcile(unaudited({ checkpoint: first.checkpoint }));
    expect(found).toEqual({ externalId: fake.posts[0]!.publishId, url: null });
    expect(paths().filter((p) => p === 'PUT /upload/')).toHaveLength(1);
  });

  it('the fake refuses a post_info on the inbox upload (its body is source_info alone)', async () => {
    const send = (body: unknown) =>
      fetch(`${fakes.url('tiktok')}/v2/post/publish/inbox/video/init/`, {
        method: 'POST',
        headers: { authorization: 'Bearer token', 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const source_info = { source: 'FILE_UPLOAD', video_size: 10, chunk_size: 10, total_chunk_count: 1 };
    const res = await send({ post_info: { title: 'x', privacy_level: 'SELF_ONLY' }, source_info });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_params');
    expect((await send({ source_info })).status).toBe(200);
  });
});
