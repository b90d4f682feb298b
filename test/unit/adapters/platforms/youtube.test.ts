import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { MediaInput, MetricsContext, PublishContext } from '#adapters/platforms/types';
import { connector } from '#adapters/platforms/youtube/index';
import { CHUNK } from '#adapters/platforms/youtube/publish';
import { FAKE_APPS } from '../../../fakes/oauth.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { createFake, type YouTubeFake } from '../../../fakes/youtube.ts';
import { type Fixture, failure, mediaInput, memoryTokens, patternBytes, publishFixture } from './context.ts';

// The YouTube connector against the contract fake of the Data API's resumable upload and Google's token endpoint.
// HERALD_PLATFORM_YOUTUBE_OAUTH_URL is left unset: the token endpoint is then served by the same fake.

let fakes: FakePlatforms;
let fake: YouTubeFake;

beforeAll(async () => {
  fakes = await new FakePlatforms([createFake()]).start();
  fake = fakes.fake<YouTubeFake>('youtube');
  process.env.HERALD_PLATFORM_YOUTUBE_URL = fakes.url('youtube');
});

afterAll(async () => {
  delete process.env.HERALD_PLATFORM_YOUTUBE_URL;
  await fakes.stop();
});

beforeEach(() => fakes.reset());

const bytesOf = (n: number, seed = 3) => patternBytes(n, seed, 17);

function video(bytes = bytesOf(4096), contentType = 'video/mp4'): MediaInput {
  return mediaInput(bytes, 'video', contentType, {
    filename: 'launch-day.mp4',
    url: 'https://media.example/v.mp4',
  });
}

const CREDS = {
  access_token: 'token',
  refresh_token: 'refresh',
  account_id: 'UCherald',
};

function ctxOf(over: Partial<PublishContext> = {}): Fixture {
  return publishFixture({
    channel: { id: 'ch_1', handle: 'Herald', platform: 'youtube' },
    credentials: CREDS,
    text: 'Launch day!\nEverything we shipped this week.',
    media: [video()],
    idempotencyKey: 'post_1.ch_1',
    ...over,
  });
}

const requests = () => fakes.requests('youtube');
const puts = () => requests().filter((r) => r.method === 'PUT');

describe('youtube publish', () => {
  it('opens a resumable session with the video resource, uploads the bytes, and returns the watch URL', async () => {
    const bytes = bytesOf(4096);
    const f = ctxOf({ media: [video(bytes)] });
    const res = await connector.publish(f);

    expect(fake.videos).toHaveLength(1);
    const v = fake.videos[0]!;
    expect(res).toEqual({ externalId: v.id, url: `https://www.youtube.com/watch?v=${v.id}` });
    expect(v.bytes.equals(Buffer.from(bytes))).toBe(true);
    expect(v.contentType).toBe('video/mp4');
    expect(v.chunks).toEqual(['bytes 0-4095/4096']);

    const init = requests()[0]!;
    expect(init.method).toBe('POST');
    expect(init.path).toBe('/upload/youtube/v3/videos');
    expect(init.query.get('uploadType')).toBe('resumable');
    expect(init.query.get('part')).toBe('snippet,status');
    expect(init.headers.authorization).toBe('Bearer token');
    expect(init.headers['x-upload-content-length']).toBe('4096');
    expect(init.headers['x-upload-content-type']).toBe('video/mp4');
    expect(init.json).toEqual({
      snippet: {
        title: 'Launch day!',
        description: 'Launch day!\nEverything we shipped this week.',
        categoryId: '22',
      },
      status: { privacyStatus: 'public', selfDeclaredMadeForKids: false },
    });
    // The session URI is the checkpoint, saved before the first byte goes up.
    expect(f.checkpoints).toEqual([{ session_uri: expect.stringContaining('upload_id='), size: 4096 }]);
  });

  it('uploads in 256 KiB-aligned chunks with Content-Range', async () => {
    const bytes = bytesOf(CHUNK + 1000);
    await connector.publish(ctxOf({ media: [video(bytes)] }));
    const v = fake.videos[0]!;
    expect(v.chunks).toEqual([
      `bytes 0-${CHUNK - 1}/${bytes.length}`,
      `bytes ${CHUNK}-${bytes.length - 1}/${bytes.length}`,
    ]);
    expect(v.bytes.equals(Buffer.from(bytes))).toBe(true);
  });

  it('resumes from the Range of a 308 when the server kept less than was sent', async () => {
    fake.acceptPerPut = 256 * 1024;
    const bytes = bytesOf(600 * 1024);
    await connector.publish(ctxOf({ media: [video(bytes)] }));
    const v = fake.videos[0]!;
    expect(v.chunks).toEqual([
      `bytes 0-${bytes.length - 1}/${bytes.length}`,
      `bytes 262144-${bytes.length - 1}/${bytes.length}`,
      `bytes 524288-${bytes.length - 1}/${bytes.length}`,
    ]);
    expect(v.bytes.equals(Buffer.from(bytes))).toBe(true);
  });

  it('maps the options onto snippet and status', async () => {
    await connector.publish(
      ctxOf({
        title: 'ignored, the option wins',
        options: {
          title: 'Our launch',
          privacy_status: 'unlisted',
          tags: ['launch', 'herald'],
          made_for_kids: true,
          category_id: '28',
        },
      }),
    );
    const v = fake.videos[0]!;
    expect(v.snippet).toEqual({
      title: 'Our launch',
      description: 'Launch day!\nEverything we shipped this week.',
      tags: ['launch', 'herald'],
      categoryId: '28',
    });
    expect(v.status).toEqual({ privacyStatus: 'unlisted', selfDeclaredMadeForKids: true });
  });

  it('derives a valid title from the post title: no angle brackets, at most 100 characters', async () => {
    await connector.publish(ctxOf({ title: `<b>${'é'.repeat(120)}</b>` }));
    expect(fake.videos[0]!.snippet.title).toBe(`b${'é'.repeat(99)}`);
  });
});

describe('youtube errors', () => {
  it('401 authError → auth_expired when the token cannot be refreshed', async () => {
    const err = await failure(
      connector.publish(ctxOf({ credentials: { access_token: 'stale', account_id: 'UCherald' } })),
    );
    expect(err.category).toBe('auth_expired');
    expect(err.retryable).toBe(false);
  });

  it('403 quotaExceeded → rate_limited', async () => {
    fakes.failNext('youtube', {
      status: 403,
      body: {
        error: {
          code: 403,
          message: 'The request cannot be completed because you have exceeded your quota.',
          errors: [
            {
              message: 'The request cannot be completed because you have exceeded your quota.',
              domain: 'youtube.quota',
              reason: 'quotaExceeded',
            },
          ],
        },
      },
    });
    const err = await failure(connector.publish(ctxOf()));
    expect(err.category).toBe('rate_limited');
    expect(err.retryable).toBe(true);
    expect(err.opts.scope).toBe('app'); // the Cloud project's quota: every channel waits
  });

  it('403 userRateLimitExceeded → rate_limited for this account only', async () => {
    fakes.failNext('youtube', {
      status: 403,
      body: {
        error: {
          code: 403,
          message: 'User Rate Limit Exceeded',
          errors: [
            { reason: 'userRateLimitExceeded', domain: 'usageLimits', message: 'User Rate Limit Exceeded' },
          ],
        },
      },
    });
    const err = await failure(connector.publish(ctxOf()));
    expect(err.category).toBe('rate_limited');
    expect(err.opts.scope).toBeUndefined();
  });

  it('429 rateLimitExceeded with Retry-After → rate_limited with the hint', async () => {
    fakes.failNext('youtube', {
      status: 429,
      headers: { 'retry-after': '120' },
      body: {
        error: {
          code: 429,
          message: 'Too Many Requests',
          errors: [{ reason: 'rateLimitExceeded', domain: 'usageLimits', message: 'Rate Limit Exceeded' }],
        },
      },
    });
    const err = await failure(connector.publish(ctxOf()));
    expect(err.category).toBe('rate_limited');
    expect(err.opts.retryAfterSeconds).toBe(120);
  });

  it('400 uploadLimitExceeded → platform_rejected', async () => {
    fake.uploadsLeft = 0;
    const err = await failure(connector.publish(ctxOf()));
    expect(err.category).toBe('platform_rejected');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('uploadLimitExceeded');
  });

  it('400 invalidDescription → user_content', async () => {
    const err = await failure(connector.publish(ctxOf({ text: 'I <3 this' })));
    expect(err.category).toBe('user_content');
    expect(err.message).toContain('invalidDescription');
  });

  it('500 backendError → system, retryable', async () => {
    fakes.failNext('youtube', {
      status: 500,
      body: { error: { code: 500, message: 'Backend Error', errors: [{ reason: 'backendError' }] } },
    });
    const err = await failure(connector.publish(ctxOf()));
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(true);
  });

  it('no video → user_content without calling YouTube', async () => {
    const err = await failure(connector.publish(ctxOf({ media: [] })));
    expect(err.category).toBe('user_content');
    expect(requests()).toHaveLength(0);
  });
});

describe('youtube token refresh', () => {
  it('refreshes once after a 401 at Google’s token endpoint, retries, and keeps the refresh token', async () => {
    const f = ctxOf({ credentials: { ...CREDS, access_token: 'expired' } });
    const res = await connector.publish(f);
    expect(res.externalId).toBe(fake.videos[0]!.id);
    expect(f.saved).toHaveLength(1);
    expect(f.saved[0]).toMatchObject({ ...CREDS, access_token: fake.minted[0] });
    expect(Date.parse(String(f.saved[0]!.expires_at))).toBeGreaterThan(Date.now());
    const tokenCall = requests().find((r) => r.path === '/token')!;
    expect(Object.fromEntries(new URLSearchParams(tokenCall.body.toString()))).toEqual({
      client_id: FAKE_APPS.youtube.clientId,
      client_secret: FAKE_APPS.youtube.clientSecret,
      refresh_token: 'refresh',
      grant_type: 'refresh_token',
    });
    expect(
      requests().filter((r) => r.headers.authorization === `Bearer ${fake.minted[0]}`).length,
    ).toBeGreaterThan(0);
  });

  it('refreshes proactively when expires_at has passed', async () => {
    const f = ctxOf({ credentials: { ...CREDS, access_token: 'old', expires_at: '2021-01-01T00:00:00Z' } });
    await connector.publish(f);
    expect(requests()[0]!.path).toBe('/token');
    expect(requests().filter((r) => r.headers.authorization === 'Bearer old')).toHaveLength(0);
  });

  it('invalid_grant → auth_expired', async () => {
    const f = ctxOf({ credentials: { ...CREDS, access_token: 'expired', refresh_token: 'revoked' } });
    const err = await failure(connector.publish(f));
    expect(err.category).toBe('auth_expired');
    expect(err.message).toContain('invalid_grant');
  });
});

describe('youtube reconcile', () => {
  it('finds the video when the attempt died after the last byte; publishing again uploads nothing', async () => {
    fake.loseNextCompletion = true;
    const first = ctxOf();
    const err = await failure(connector.publish(first));
    expect(err.category).toBe('system');
    expect(fake.videos).toHaveLength(1);

    const id = fake.videos[0]!.id;
    const found = await connector.reconcile(ctxOf({ checkpoint: first.checkpoint }));
    expect(found).toEqual({ externalId: id, url: `https://www.youtube.com/watch?v=${id}` });
    const status = puts().at(-1)!;
    expect(status.headers['content-range']).toBe('bytes */4096');
    expect(status.body.length).toBe(0);

    const again = await connector.publish(ctxOf({ checkpoint: first.checkpoint }));
    expect(again.externalId).toBe(id);
    expect(fake.videos).toHaveLength(1);
    expect(requests().filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('null while the session is incomplete; publish then resumes that session', async () => {
    const first = ctxOf();
    // The attempt dies right after saving its checkpoint, before any byte.
    first.saveCheckpoint = async (cp) => {
      first.checkpoint = cp;
      throw new Error('worker died');
    };
    await expect(connector.publish(first)).rejects.toThrow('worker died');

    expect(await connector.reconcile(ctxOf({ checkpoint: first.checkpoint }))).toBeNull();
    const res = await connector.publish(ctxOf({ checkpoint: first.checkpoint }));
    expect(fake.videos).toHaveLength(1);
    expect(res.externalId).toBe(fake.videos[0]!.id);
    expect(requests().filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('null without a checkpoint; outcome unknown once the session expired', async () => {
    expect(await connector.reconcile(ctxOf())).toBeNull();
    const f = ctxOf();
    await connector.publish(f);
    fake.expireSessions();
    const err = await failure(connector.reconcile(ctxOf({ checkpoint: f.checkpoint })));
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('outcome unknown');
  });
});

describe('youtube metrics', () => {
  it('reads view, like and comment counts from videos.list part=statistics', async () => {
    const res = await connector.publish(ctxOf());
    fake.videos[0]!.statistics = { viewCount: 1234, likeCount: 56, commentCount: 7 };
    const ctx: MetricsContext = {
      channel: { id: 'ch_1', handle: 'Herald', platform: 'youtube' },
      credentials: CREDS,
      externalIds: [res.externalId, 'vidmissing'],
      tokens: memoryTokens('youtube', CREDS, []),
    };
    expect(await connector.metrics!(ctx)).toEqual({
      [res.externalId]: { impressions: 1234, likes: 56, comments: 7, shares: 0, clicks: 0 },
    });
    const q = requests().at(-1)!;
    expect(q.method).toBe('GET');
    expect(q.query.get('part')).toBe('statistics');
    expect(q.query.get('id')).toBe(`${res.externalId},vidmissing`);
  });
});
