import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connector } from '#adapters/platforms/pinterest/index';
import { polling } from '#adapters/platforms/pinterest/publish';
import type { MediaInput, MetricsContext, PublishContext } from '#adapters/platforms/types';
import { FAKE_APPS } from '../../../fakes/oauth.ts';
import { createFake, DEFAULT_BOARD, type PinterestFake } from '../../../fakes/pinterest.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { type Fixture, failure, mediaInput, memoryTokens, patternBytes, publishFixture } from './context.ts';

// The Pinterest connector against the contract fake of API v5.

let fakes: FakePlatforms;
let fake: PinterestFake;
const savedPolling = { ...polling };

beforeAll(async () => {
  fakes = await new FakePlatforms([createFake()]).start();
  fake = fakes.fake<PinterestFake>('pinterest');
  process.env.HERALD_PLATFORM_PINTEREST_URL = fakes.url('pinterest');
  polling.delaysMs = [0, 5];
  polling.budgetMs = 2_000;
});

afterAll(async () => {
  Object.assign(polling, savedPolling);
  delete process.env.HERALD_PLATFORM_PINTEREST_URL;
  await fakes.stop();
});

beforeEach(() => fakes.reset());

const bytesOf = (n: number, seed = 5) => patternBytes(n, seed, 13);

function item(
  type: 'image' | 'video',
  contentType: string,
  bytes = bytesOf(2048),
  extra: Partial<MediaInput> = {},
): MediaInput {
  const filename = type === 'video' ? 'clip.mp4' : 'photo.jpg';
  return mediaInput(bytes, type, contentType, { filename, url: 'https://media.example/m/1', ...extra });
}

const CREDS = {
  access_token: 'token',
  refresh_token: 'refresh',
  account_id: DEFAULT_BOARD,
};

function ctxOf(over: Partial<PublishContext> = {}): Fixture {
  return publishFixture({
    channel: { id: 'ch_1', handle: 'herald', platform: 'pinterest' },
    credentials: CREDS,
    text: 'Ten ideas for a spring table',
    media: [item('image', 'image/jpeg')],
    idempotencyKey: 'post_1.ch_1',
    ...over,
  });
}

const requests = () => fakes.requests('pinterest');
const creates = () => requests().filter((r) => r.method === 'POST' && r.path === '/v5/pins');

describe('pinterest publish', () => {
  it('creates an image Pin from the bytes (image_base64) on the default board and returns its URL', async () => {
    const bytes = bytesOf(4000);
    const f = ctxOf({ media: [item('image', 'image/jpeg', bytes, { alt: 'A laid spring table' })] });
    const res = await connector.publish(f);

    expect(fake.pins).toHaveLength(1);
    const pin = fake.pins[0]!;
    expect(res).toEqual({ externalId: pin.id, url: `https://www.pinterest.com/pin/${pin.id}/` });
    expect(pin.bytes?.equals(Buffer.from(bytes))).toBe(true);
    const req = creates()[0]!;
    expect(req.headers.authorization).toBe('Bearer token');
    expect(req.json).toEqual({
      board_id: DEFAULT_BOARD,
      description: 'Ten ideas for a spring table',
      alt_text: 'A laid spring table',
      media_source: {
        source_type: 'image_base64',
        content_type: 'image/jpeg',
        data: Buffer.from(bytes).toString('base64'),
      },
    });
    expect(f.checkpoints).toEqual([{ board_id: DEFAULT_BOARD, creating_since: expect.any(String) }]);
  });

  it('maps board_id, link and title options; other image types go by URL', async () => {
    await connector.publish(
      ctxOf({
        title: 'post title loses to the option',
        options: { board_id: '549755885176', link: 'https://shop.example/spring', title: 'Spring table' },
        media: [item('image', 'image/webp', bytesOf(10), { url: 'https://media.example/table.webp' })],
      }),
    );
    const pin = fake.pins[0]!;
    expect(pin).toMatchObject({
      board_id: '549755885176',
      title: 'Spring table',
      link: 'https://shop.example/spring',
      description: 'Ten ideas for a spring table',
      media_source: { source_type: 'image_url', url: 'https://media.example/table.webp' },
    });
  });

  it('uploads a video to the S3 form, waits for processing, and pins it by media_id', async () => {
    const bytes = bytesOf(50_000);
    const f = ctxOf({ media: [item('video', 'video/mp4', bytes)] });
    const res = await connector.publish(f);

    const pin = fake.pins[0]!;
    expect(res.externalId).toBe(pin.id);
    expect(pin.mediaType).toBe('video');
    expect(pin.bytes?.equals(Buffer.from(bytes))).toBe(true);
    expect(pin.contentType).toBe('video/mp4');
    const mediaId = pin.media_source.media_id;
    expect(pin.media_source).toEqual({
      source_type: 'video_id',
      media_id: mediaId,
      cover_image_key_frame_time: 0,
    });
    const upload = requests().find((r) => r.path === '/s3-upload/')!;
    expect(upload.headers.authorization).toBeUndefined();
    expect(upload.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(requests().map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /v5/media',
      'POST /s3-upload/',
      `GET /v5/media/${mediaId}`,
      `GET /v5/media/${mediaId}`,
      'POST /v5/pins',
    ]);
    expect(f.checkpoints[0]).toEqual({ media_id: mediaId });
  });

  it('a video that fails processing → media_error, no Pin', async () => {
    fake.failNextMedia = true;
    const err = await failure(connector.publish(ctxOf({ media: [item('video', 'video/mp4')] })));
    expect(err.category).toBe('media_error');
    expect(fake.pins).toHaveLength(0);
  });
});

describe('pinterest errors', () => {
  it('401 → auth_expired when the token cannot be refreshed', async () => {
    const err = await failure(
      connector.publish(ctxOf({ credentials: { access_token: 'stale', account_id: DEFAULT_BOARD } })),
    );
    expect(err.category).toBe('auth_expired');
    expect(err.retryable).toBe(false);
  });

  it('429 → rate_limited with the X-RateLimit-Reset hint', async () => {
    fakes.failNext('pinterest', {
      status: 429,
      headers: { 'x-ratelimit-limit': '100', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '37' },
      body: { code: 8, message: 'You have exceeded your rate limit. Try again later.' },
    });
    const err = await failure(connector.publish(ctxOf()));
    expect(err.category).toBe('rate_limited');
    expect(err.opts.retryAfterSeconds).toBe(37);
  });

  it('429 with Retry-After → that hint', async () => {
    fakes.failNext('pinterest', {
      status: 429,
      headers: { 'retry-after': '12' },
      body: { code: 8, message: 'Rate limited' },
    });
    const err = await failure(connector.publish(ctxOf()));
    expect(err.opts.retryAfterSeconds).toBe(12);
  });

  it('400 invalid field → user_content; 404 unknown board → user_content', async () => {
    const long = await failure(connector.publish(ctxOf({ text: 'x'.repeat(801) })));
    expect(long.category).toBe('user_content');
    const board = await failure(connector.publish(ctxOf({ options: { board_id: '42' } })));
    expect(board.category).toBe('user_content');
    expect(board.message).toContain('Board not found');
  });

  it('400 about the image → media_error', async () => {
    const err = await failure(
      connector.publish(
        ctxOf({ media: [item('image', 'image/gif', bytesOf(10), { url: 'ftp://not-http/x.gif' })] }),
      ),
    );
    expect(err.category).toBe('media_error');
  });

  it('403 → platform_rejected', async () => {
    fakes.failNext('pinterest', {
      status: 403,
      body: { code: 29, message: 'You are not permitted to access that resource.' },
    });
    const err = await failure(connector.publish(ctxOf()));
    expect(err.category).toBe('platform_rejected');
  });

  it('500 → system, retryable', async () => {
    fakes.failNext('pinterest', { status: 500, body: { code: 0, message: 'Internal error' } });
    const err = await failure(connector.publish(ctxOf()));
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(true);
  });
});

describe('pinterest token refresh', () => {
  it('refreshes once after a 401 with Basic client auth, retries, and keeps the refresh token', async () => {
    const f = ctxOf({ credentials: { ...CREDS, access_token: 'expired' } });
    await connector.publish(f);
    expect(fake.pins).toHaveLength(1);
    expect(f.saved).toHaveLength(1);
    expect(f.saved[0]).toMatchObject({ ...CREDS, access_token: fake.minted[0] });
    const tokenCall = requests().find((r) => r.path === '/v5/oauth/token')!;
    expect(tokenCall.headers.authorization).toBe(
      `Basic ${Buffer.from(`${FAKE_APPS.pinterest.clientId}:${FAKE_APPS.pinterest.clientSecret}`).toString('base64')}`,
    );
    expect(Object.fromEntries(new URLSearchParams(tokenCall.body.toString()))).toEqual({
      grant_type: 'refresh_token',
      refresh_token: 'refresh',
    });
    expect(creates().at(-1)!.headers.authorization).toBe(`Bearer ${fake.minted[0]}`);
  });

  it('refreshes proactively when expires_at has passed', async () => {
    const f = ctxOf({ credentials: { ...CREDS, access_token: 'old', expires_at: '2022-02-02T00:00:00Z' } });
    await connector.publish(f);
    expect(requests()[0]!.path).toBe('/v5/oauth/token');
    expect(f.saved).toHaveLength(1);
  });

  it('a refused refresh → auth_expired', async () => {
    const err = await failure(
      connector.publish(
        ctxOf({ credentials: { ...CREDS, access_token: 'expired', refresh_token: 'revoked' } }),
      ),
    );
    expect(err.category).toBe('auth_expired');
  });
});

describe('pinterest reconcile', () => {
  it('finds the Pin an attempt created before dying; publishing again creates nothing', async () => {
    fake.seed({
      board_id: DEFAULT_BOARD,
      description: 'Ten ideas for a spring table',
      created_at: '2020-01-01T00:00:00Z',
    });
    fake.loseNextCreate = true;
    const first = ctxOf();
    const err = await failure(connector.publish(first));
    expect(err.category).toBe('system');
    expect(fake.pins).toHaveLength(2);
    const created = fake.pins[1]!;

    const found = await connector.reconcile(ctxOf({ checkpoint: first.checkpoint }));
    expect(found).toEqual({ externalId: created.id, url: `https://www.pinterest.com/pin/${created.id}/` });
    const list = requests().find((r) => r.path === `/v5/boards/${DEFAULT_BOARD}/pins`)!;
    expect(list.method).toBe('GET');

    // A later attempt (new attemptStartedAt) still finds it through the checkpoint's mark.
    const again = await connector.publish(
      ctxOf({ checkpoint: first.checkpoint, attemptStartedAt: new Date(Date.now() + 3_600_000) }),
    );
    expect(again.externalId).toBe(created.id);
    expect(fake.pins).toHaveLength(2);
    expect(creates()).toHaveLength(1);
  });

  it('null when no Pin matches: an older Pin with the same text and a new one with other text do not count', async () => {
    fake.seed({
      board_id: DEFAULT_BOARD,
      description: 'Ten ideas for a spring table',
      created_at: '2020-01-01T00:00:00Z',
    });
    fake.seed({
      board_id: DEFAULT_BOARD,
      description: 'Something else',
      created_at: new Date().toISOString(),
    });
    const cp = { board_id: DEFAULT_BOARD, creating_since: new Date().toISOString() };
    expect(await connector.reconcile(ctxOf({ checkpoint: cp }))).toBeNull();
  });

  it('pages through the board with the bookmark', async () => {
    const since = new Date().toISOString();
    fake.seed({
      board_id: DEFAULT_BOARD,
      description: 'Ten ideas for a spring table',
      created_at: new Date().toISOString(),
    });
    for (let i = 0; i < 150; i++)
      fake.seed({ board_id: DEFAULT_BOARD, description: `other ${i}`, created_at: new Date().toISOString() });
    const found = await connector.reconcile(
      ctxOf({ checkpoint: { board_id: DEFAULT_BOARD, creating_since: since } }),
    );
    expect(found?.externalId).toBe(fake.pins[0]!.id);
    const lists = requests().filter((r) => r.path.endsWith('/pins') && r.method === 'GET');
    expect(lists.map((r) => r.query.get('bookmark'))).toEqual([null, '100']);
  });

  it('null without a creation mark (nothing was sent)', async () => {
    expect(await connector.reconcile(ctxOf())).toBeNull();
    expect(await connector.reconcile(ctxOf({ checkpoint: { media_id: '5000001' } }))).toBeNull();
    expect(requests()).toHaveLength(0);
  });
});

describe('pinterest metrics', () => {
  it('reads impressions, saves and clicks from the Pin analytics', async () => {
    const res = await connector.publish(ctxOf());
    fake.analytics.set(res.externalId, { IMPRESSION: 900, SAVE: 12, PIN_CLICK: 30, OUTBOUND_CLICK: 8 });
    const ctx: MetricsContext = {
      channel: { id: 'ch_1', handle: 'herald', platform: 'pinterest' },
      credentials: CREDS,
      externalIds: [res.externalId, '999'],
      tokens: memoryTokens('pinterest', CREDS, []),
    };
    expect(await connector.metrics!(ctx)).toEqual({
      [res.externalId]: { impressions: 900, likes: 0, comments: 0, shares: 12, clicks: 38 },
    });
    const q = requests().find((r) => r.path.endsWith('/analytics'))!;
    expect(q.query.get('metric_types')).toBe('IMPRESSION,SAVE,PIN_CLICK,OUTBOUND_CLICK');
    expect(q.query.get('end_date')).toBe(new Date().toISOString().slice(0, 10));
  });
});
