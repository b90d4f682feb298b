import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { MediaInput, PublishContext } from '#adapters/platforms/types';
import { connector } from '#adapters/platforms/x/index';
import { comparableText } from '#adapters/platforms/x/publish';
import { FAKE_APPS } from '../../../fakes/oauth.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { createFake, type FakeX } from '../../../fakes/x.ts';
import { failure, mediaInput, metricsContext, publishContext } from './context.ts';

// The X connector against the contract fake of the X API v2 (test/fakes/x.ts).

let fakes: FakePlatforms;
let fake: FakeX;
const env = { ...process.env };

beforeAll(async () => {
  fakes = await new FakePlatforms([createFake()]).start();
  fake = fakes.fake<FakeX>('x');
});
afterAll(() => fakes.stop());
beforeEach(() => {
  fakes.reset();
  process.env.HERALD_PLATFORM_X_URL = fakes.url('x');
});
afterEach(() => {
  process.env = { ...env };
});

const media = (type: MediaInput['type'], contentType: string, bytes: Uint8Array, alt = '') =>
  mediaInput(bytes, type, contentType, { alt });

const context = (over: Partial<PublishContext> = {}) =>
  publishContext({
    channel: { id: 'ch_1', handle: '@acme', platform: 'x' },
    credentials: { access_token: 'token', account_id: '1500000000000000001' },
    ...over,
  });

const calls = (method: string, path: RegExp) =>
  fakes.requests('x').filter((r) => r.method === method && path.test(r.path));

describe('publish', () => {
  it('posts POST /2/tweets {text} with the user token and returns the id and x.com permalink', async () => {
    const { ctx, checkpoints } = context();
    const result = await connector.publish(ctx);
    const [post] = calls('POST', /^\/2\/tweets$/);
    expect(post?.headers.authorization).toBe('Bearer token');
    expect(post?.json).toEqual({ text: 'Hello from Herald' });
    const id = fake.posts[0]?.id;
    expect(result).toEqual({ externalId: id, url: `https://x.com/acme/status/${id}` });
    expect(checkpoints[0]).toMatchObject({ stage: 'posting', mediaIds: [] });
  });

  it('maps options.reply_settings', async () => {
    await connector.publish(context({ options: { reply_settings: 'mentionedUsers' } }).ctx);
    expect(calls('POST', /^\/2\/tweets$/)[0]?.json).toEqual({
      text: 'Hello from Herald',
      reply_settings: 'mentionedUsers',
    });
    expect(fake.posts[0]?.reply_settings).toBe('mentionedUsers');
  });

  it('uploads images with the simple v2 upload (base64, tweet_image), sets alt text, attaches media_ids', async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255]);
    const jpg = new Uint8Array([0xff, 0xd8, 0xff, 7]);
    await connector.publish(
      context({ media: [media('image', 'image/png', png, 'A chart'), media('image', 'image/jpeg', jpg)] })
        .ctx,
    );
    const uploads = calls('POST', /^\/2\/media\/upload$/);
    // The body X's OpenAPI document allows (media, media_category; no media_type: X sniffs it).
    expect(uploads.map((u) => u.json)).toEqual([
      { media: Buffer.from(png).toString('base64'), media_category: 'tweet_image' },
      { media: Buffer.from(jpg).toString('base64'), media_category: 'tweet_image' },
    ]);
    const tweet = fake.posts[0];
    expect(tweet?.media.map((m) => [[...m.bytes], m.alt])).toEqual([
      [[...png], 'A chart'],
      [[...jpg], null],
    ]);
    expect(calls('POST', /^\/2\/media\/metadata$/)[0]?.json).toEqual({
      id: tweet?.media[0]?.id,
      metadata: { alt_text: { text: 'A chart' } },
    });
    expect(calls('POST', /^\/2\/tweets$/)[0]?.json).toEqual({
      text: 'Hello from Herald',
      media: { media_ids: tweet?.media.map((m) => m.id) },
    });
  });

  it('uploads video in chunks (initialize, append ×3, finalize), waits for processing, then posts', async () => {
    fake.processingPolls = 1;
    const mp4 = new Uint8Array(9 * 1024 * 1024 + 5).map((_, i) => (i * 31) % 256);
    await connector.publish(context({ media: [media('video', 'video/mp4', mp4)] }).ctx);
    expect(calls('POST', /^\/2\/media\/upload\/initialize$/)[0]?.json).toEqual({
      media_type: 'video/mp4',
      total_bytes: mp4.byteLength,
      media_category: 'tweet_video',
    });
    expect(calls('POST', /\/append$/)).toHaveLength(3);
    expect(calls('POST', /\/finalize$/)).toHaveLength(1);
    expect(calls('GET', /^\/2\/media\/upload$/).map((r) => r.query.get('command'))).toEqual([
      'STATUS',
      'STATUS',
    ]);
    expect(Buffer.compare(fake.posts[0]?.media[0]?.bytes ?? Buffer.alloc(0), Buffer.from(mp4))).toBe(0);
  });

  it('failed video processing is media_error and nothing is posted', async () => {
    fake.failProcessing = true;
    const err = await failure(
      connector.publish(context({ media: [media('video', 'video/mp4', new Uint8Array(100))] }).ctx),
    );
    expect(err.category).toBe('media_error');
    expect(err.message).toMatch(/InvalidMedia/);
    expect(fake.posts).toHaveLength(0);
  });
});

describe('errors', () => {
  it('401 without a refresh token is auth_expired', async () => {
    const { ctx } = context();
    ctx.credentials = { access_token: 'revoked', account_id: '1' };
    const err = await failure(connector.publish(ctx));
    expect(err.category).toBe('auth_expired');
    expect(err.retryable).toBe(false);
  });

  it('429 is rate_limited with the x-rate-limit-reset hint (epoch seconds)', async () => {
    const reset = Math.floor(Date.now() / 1000) + 300;
    fakes.failNext('x', {
      path: /^\/2\/tweets$/,
      status: 429,
      body: { title: 'Too Many Requests', detail: 'Too Many Requests', type: 'about:blank', status: 429 },
      headers: {
        'x-rate-limit-limit': '100',
        'x-rate-limit-remaining': '0',
        'x-rate-limit-reset': String(reset),
      },
    });
    const err = await failure(connector.publish(context().ctx));
    expect(err.category).toBe('rate_limited');
    expect(err.opts.retryAfterSeconds).toBeGreaterThanOrEqual(298);
    expect(err.opts.retryAfterSeconds).toBeLessThanOrEqual(300);
    expect(err.opts.scope).toBeUndefined(); // the account's 15-minute window
  });

  it("429 with the app's 24-hour cap spent names the app and waits for that cap's reset", async () => {
    // Arrange: the 15-minute window still has room; the app's daily cap does not
    const now = Math.floor(Date.now() / 1000);
    fakes.failNext('x', {
      path: /^\/2\/tweets$/,
      status: 429,
      body: { title: 'Too Many Requests', detail: 'Too Many Requests', type: 'about:blank', status: 429 },
      headers: {
        'x-rate-limit-remaining': '99',
        'x-rate-limit-reset': String(now + 60),
        'x-app-limit-24hour-limit': '17',
        'x-app-limit-24hour-remaining': '0',
        'x-app-limit-24hour-reset': String(now + 7200),
        'x-user-limit-24hour-remaining': '5',
        'x-user-limit-24hour-reset': String(now + 600),
      },
    });

    // Act
    const err = await failure(connector.publish(context().ctx));

    // Assert
    expect(err.category).toBe('rate_limited');
    expect(err.opts.scope).toBe('app');
    expect(err.opts.retryAfterSeconds).toBeGreaterThanOrEqual(7198);
    expect(err.opts.retryAfterSeconds).toBeLessThanOrEqual(7200);
  });

  it("429 with the user's 24-hour cap spent pauses the account until that cap's reset", async () => {
    const now = Math.floor(Date.now() / 1000);
    fakes.failNext('x', {
      path: /^\/2\/tweets$/,
      status: 429,
      body: { title: 'Too Many Requests', status: 429 },
      headers: {
        'x-rate-limit-reset': String(now + 60),
        'x-user-limit-24hour-remaining': '0',
        'x-user-limit-24hour-reset': String(now + 36_000),
      },
    });
    const err = await failure(connector.publish(context().ctx));
    expect(err.opts.scope).toBe('channel');
    expect(err.opts.retryAfterSeconds).toBeGreaterThanOrEqual(35_998);
  });

  it('500 is a retryable system error', async () => {
    fakes.failNext('x', { status: 500, body: { title: 'Internal Server Error', status: 500 } });
    const err = await failure(connector.publish(context().ctx));
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(true);
  });

  it('403 duplicate content is user_content; any other 403 is platform_rejected', async () => {
    await connector.publish(context().ctx);
    const dup = await failure(connector.publish(context({ idempotencyKey: 'post_2:ch_1' }).ctx));
    expect(dup.category).toBe('user_content');
    expect(dup.message).toMatch(/duplicate content/);

    fakes.failNext('x', {
      status: 403,
      body: {
        title: 'Forbidden',
        detail: 'You are not permitted to perform this action.',
        type: 'about:blank',
        status: 403,
      },
    });
    expect((await failure(connector.publish(context({ text: 'other' }).ctx))).category).toBe(
      'platform_rejected',
    );
  });

  it('400 invalid request is user_content', async () => {
    const err = await failure(connector.publish(context({ options: { reply_settings: 'everyone' } }).ctx));
    expect(err.category).toBe('user_content');
    expect(err.message).toMatch(/Invalid Request/);
  });
});

describe('tokens', () => {
  it("on a 401 refreshes once (refresh_token grant, the platform app's Basic auth) and retries; saves the new pair", async () => {
    const { ctx, saved } = context();
    ctx.credentials = {
      access_token: 'stale',
      refresh_token: 'refresh',
      expires_at: '2099-01-01T00:00:00.000Z',
      account_id: '1500000000000000001',
    };
    const result = await connector.publish(ctx);
    expect(result.externalId).toBe(fake.posts[0]?.id);
    const [tokenCall] = calls('POST', /^\/2\/oauth2\/token$/);
    expect(Object.fromEntries(new URLSearchParams(tokenCall?.body.toString()))).toEqual({
      grant_type: 'refresh_token',
      refresh_token: 'refresh',
    });
    expect(tokenCall?.headers.authorization).toBe(
      `Basic ${Buffer.from(`${FAKE_APPS.x.clientId}:${FAKE_APPS.x.clientSecret}`).toString('base64')}`,
    );
    const minted = fake.minted[0];
    expect(saved).toEqual([
      {
        access_token: minted?.access_token,
        refresh_token: minted?.refresh_token,
        expires_at: expect.any(String),
        account_id: '1500000000000000001',
      },
    ]);
    expect(Date.parse(String(saved[0]?.expires_at))).toBeGreaterThan(Date.now() + 7000_000);
    expect(calls('POST', /^\/2\/tweets$/).map((r) => r.headers.authorization)).toEqual([
      'Bearer stale',
      `Bearer ${minted?.access_token}`,
    ]);
  });

  it('refreshes before the first call when expires_at has passed', async () => {
    const { ctx, saved } = context();
    ctx.credentials = {
      access_token: 'stale',
      refresh_token: 'refresh',
      expires_at: '2020-01-01T00:00:00.000Z',
      account_id: '1',
    };
    await connector.publish(ctx);
    expect(calls('POST', /^\/2\/tweets$/).map((r) => r.headers.authorization)).toEqual([
      `Bearer ${fake.minted[0]?.access_token}`,
    ]);
    expect(saved).toHaveLength(1);
  });

  it('a refused refresh is auth_expired', async () => {
    const { ctx } = context();
    ctx.credentials = { access_token: 'stale', refresh_token: 'used-up', account_id: '1' };
    const err = await failure(connector.publish(ctx));
    expect(err.category).toBe('auth_expired');
    expect(err.message).toMatch(/Value passed for the token was invalid/);
  });
});

describe('checkpoint and reconcile', () => {
  const text = 'Launch day & more <3 https://example.com/launch?utm=1';

  it('after a crash past POST /2/tweets, reconcile finds the tweet among the user’s tweets; publish again posts nothing', async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
    const { ctx, checkpoints } = context({ text, media: [media('image', 'image/png', png)] });
    const published = await connector.publish(ctx);
    const crashed = checkpoints[0] as Record<string, unknown>;
    const again = context({ text, checkpoint: crashed, attemptStartedAt: ctx.attemptStartedAt });

    expect(await connector.reconcile(again.ctx)).toEqual(published);
    const [lookup] = calls('GET', /^\/2\/users\/1500000000000000001\/tweets$/);
    expect(lookup?.query.get('start_time')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(lookup?.query.get('exclude')).toBe('retweets,replies');

    expect(await connector.publish(again.ctx)).toEqual(published);
    expect(fake.posts).toHaveLength(1);
  });

  it('a repeat after an earlier create is refused by X as a duplicate: a look finds the earlier tweet', async () => {
    const { ctx, checkpoints } = context({ text });
    const published = await connector.publish(ctx);
    const again = context({ text, checkpoint: checkpoints[0] ?? null });
    expect(await connector.publish(again.ctx)).toEqual(published);
    expect(fake.posts).toHaveLength(1);
  });

  it('a look that fails after the duplicate refusal is no answer: outcome unknown, retryable, nothing posted', async () => {
    const { ctx, checkpoints } = context({ text });
    await connector.publish(ctx);
    fakes.failNext('x', {
      path: /^\/2\/users\/\d+\/tweets$/,
      status: 503,
      headers: { 'retry-after': '30' },
      body: { title: 'Service Unavailable', status: 503 },
    });
    const err = await failure(connector.publish(context({ text, checkpoint: checkpoints[0] ?? null }).ctx));
    expect(err).toMatchObject({ category: 'system', retryable: true, opts: { retryAfterSeconds: 30 } });
    expect(err.message).toMatch(/outcome unknown/);
    // So the next attempt reconciles before it posts.
    expect(err.maybeCarriedOut).toBe(true);
    expect(fake.posts).toHaveLength(1);
  });

  it('reconcile searches from the earlier of the attempt’s start and the checkpoint’s sentAt', async () => {
    const { ctx, checkpoints } = context({ text });
    const published = await connector.publish(ctx);
    const later = new Date(Date.now() + 10 * 60_000);
    const again = context({ text, checkpoint: checkpoints[0] ?? null, attemptStartedAt: later });
    expect(await connector.reconcile(again.ctx)).toEqual(published);
    const [lookup] = calls('GET', /^\/2\/users\/1500000000000000001\/tweets$/);
    const sentAt = Date.parse(String(checkpoints[0]?.sentAt));
    expect(Date.parse(lookup?.query.get('start_time') ?? '')).toBeLessThanOrEqual(sentAt - 59_000);
  });

  it('a rate-limited look passes the 429 on with X’s reset: no answer, tried again later', async () => {
    fakes.failNext('x', {
      path: /^\/2\/users\/\d+\/tweets$/,
      status: 429,
      headers: {
        'x-rate-limit-reset': String(Math.floor(Date.now() / 1000) + 600),
        'x-rate-limit-remaining': '0',
      },
      body: { title: 'Too Many Requests', detail: 'Too Many Requests', type: 'about:blank', status: 429 },
    });
    const err = await failure(connector.reconcile(context({ checkpoint: { stage: 'posting' } }).ctx));
    expect(err.category).toBe('rate_limited');
    expect(err.opts.retryAfterSeconds).toBeGreaterThan(590);
  });

  it('reconcile is null without a checkpoint (no request) and when no tweet matches', async () => {
    expect(await connector.reconcile(context().ctx)).toBeNull();
    expect(fakes.requests('x')).toHaveLength(0);
    await connector.publish(context({ text: 'something else' }).ctx);
    expect(await connector.reconcile(context({ checkpoint: { stage: 'posting' } }).ctx)).toBeNull();
  });

  it('reconcile says "outcome unknown" when the timeline cannot be read', async () => {
    fakes.failNext('x', {
      status: 403,
      body: {
        title: 'Forbidden',
        detail:
          'When authenticating requests to the Twitter API v2 endpoints, you must use keys and tokens from a Twitter developer App that is attached to a Project.',
        type: 'https://api.twitter.com/2/problems/client-forbidden',
        status: 403,
      },
    });
    const err = await failure(connector.reconcile(context({ checkpoint: { stage: 'posting' } }).ctx));
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/outcome unknown/);
  });

  it('comparableText sees through t.co links, the media link and escaped entities', () => {
    expect(comparableText('Launch day &amp; more &lt;3 https://t.co/abc https://t.co/media')).toBe(
      comparableText(text),
    );
  });
});

describe('metrics', () => {
  it('maps public_metrics', async () => {
    const { ctx } = context();
    const { externalId } = await connector.publish(ctx);
    Object.assign(fake.posts[0]?.public_metrics ?? {}, {
      impression_count: 100,
      like_count: 9,
      reply_count: 2,
      retweet_count: 3,
      quote_count: 1,
    });
    const m = await connector.metrics?.(metricsContext(ctx, [externalId]));
    expect(m).toEqual({ [externalId]: { impressions: 100, likes: 9, comments: 2, shares: 4, clicks: 0 } });
    expect(calls('GET', /^\/2\/tweets$/)[0]?.query.get('post.fields')).toBe('public_metrics');
  });
});

describe('a thread: replies', () => {
  const replyTo = (root: { externalId: string; url: string | null }, parent = root) => ({ root, parent });

  it('a thread item is POST /2/tweets {text, reply: {in_reply_to_tweet_id: <the part before>}}', async () => {
    const root = await connector.publish(context({ text: 'one' }).ctx);
    const two = await connector.publish(
      context({ text: 'two', part: { kind: 'thread', index: 0 }, replyTo: replyTo(root) }).ctx,
    );
    await connector.publish(
      context({ text: 'three', part: { kind: 'thread', index: 1 }, replyTo: replyTo(root, two) }).ctx,
    );

    const bodies = calls('POST', /^\/2\/tweets$/).map((c) => c.json);
    expect(bodies).toEqual([
      { text: 'one' },
      { text: 'two', reply: { in_reply_to_tweet_id: root.externalId } },
      { text: 'three', reply: { in_reply_to_tweet_id: two.externalId } },
    ]);
    expect(fake.posts.map((t) => t.in_reply_to)).toEqual([null, root.externalId, two.externalId]);
  });

  it('a reply to a tweet that is gone is refused (X 403), nothing posted', async () => {
    const gone = { externalId: '1999999999999999999', url: null };
    const err = await failure(connector.publish(context({ text: 'two', replyTo: replyTo(gone) }).ctx));
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/deleted or not visible/);
    expect(fake.posts).toHaveLength(0);
  });

  it("a part's reconcile searches the replies, for the one answering its parent", async () => {
    const root = await connector.publish(context({ text: 'one' }).ctx);
    const other = await connector.publish(context({ text: 'elsewhere' }).ctx);
    const { ctx, checkpoints } = context({
      text: 'two',
      part: { kind: 'thread', index: 0 },
      replyTo: replyTo(root),
    });
    const made = await connector.publish(ctx);
    // A newer tweet with the same text, replying to another tweet: not this part.
    const ours = fake.posts.find((t) => t.id === made.externalId);
    if (ours) fake.posts.push({ ...ours, id: `${BigInt(ours.id) + 1n}`, in_reply_to: other.externalId });
    const again = context({
      text: 'two',
      part: { kind: 'thread', index: 0 },
      replyTo: replyTo(root),
      checkpoint: checkpoints[0] as Record<string, unknown>,
      attemptStartedAt: ctx.attemptStartedAt,
    });

    expect(await connector.reconcile(again.ctx)).toEqual(made);
    const lookup = calls('GET', /^\/2\/users\/1500000000000000001\/tweets$/).at(-1);
    expect(lookup?.query.get('exclude')).toBe('retweets');
    expect(lookup?.query.get('post.fields')).toBe('created_at,referenced_tweets');
  });
});

describe("the fake holds requests to X's OpenAPI document", () => {
  const get = async (path: string) => {
    const res = await fetch(`${fakes.url('x')}${path}`, { headers: { authorization: 'Bearer token' } });
    return { status: res.status, body: (await res.json()) as { errors?: Array<{ message: string }> } };
  };

  it('refuses a query parameter the lookup does not declare, naming those it does', async () => {
    const res = await get('/2/tweets?ids=1&tweet.fields=public_metrics');
    expect(res.status).toBe(400);
    expect(res.body.errors?.[0]?.message).toMatch(/\[tweet\.fields\] is not one of \[ids,post\.fields,/);
    expect((await get('/2/tweets?ids=1&post.fields=public_metrics')).status).toBe(200);
  });

  it('refuses an upload body field the one-shot upload does not declare', async () => {
    const res = await fetch(`${fakes.url('x')}/2/media/upload`, {
      method: 'POST',
      headers: { authorization: 'Bearer token', 'content-type': 'application/json' },
      body: JSON.stringify({ media: 'iVBORw0KGgo=', media_category: 'tweet_image', media_type: 'image/png' }),
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain('`media_type` field is not allowed');
  });
});
