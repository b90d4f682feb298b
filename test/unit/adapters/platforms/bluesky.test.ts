import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connector } from '#adapters/platforms/bluesky/index';
import type { MediaInput, PublishContext } from '#adapters/platforms/types';
import { createFake, type FakeBluesky } from '../../../fakes/bluesky.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { failure, mediaInput, metricsContext, publishContext } from './context.ts';

// The Bluesky connector against the contract fake of a PDS (test/fakes/bluesky.ts).

let fakes: FakePlatforms;
let fake: FakeBluesky;
let n = 0;

beforeAll(async () => {
  fakes = await new FakePlatforms([createFake()]).start();
  fake = fakes.fake<FakeBluesky>('bluesky');
});
afterAll(() => fakes.stop());
beforeEach(() => {
  fakes.reset();
  n++;
});

const TID = /^[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}$/;

const media = (type: MediaInput['type'], contentType: string, bytes: Uint8Array, alt = '') =>
  mediaInput(bytes, type, contentType, { alt });

/** A PublishContext on a fresh account (sessions are cached per identifier inside the connector). */
function context(over: Partial<PublishContext> = {}) {
  const identifier = `acme${n}.bsky.social`;
  const recorded = publishContext({
    channel: { id: 'ch_1', handle: identifier, platform: 'bluesky' },
    credentials: { service: fakes.url('bluesky'), identifier, app_password: 'app-password' },
    idempotencyKey: `post_${n}:ch_1`,
    ...over,
  });
  return { ...recorded, identifier };
}

const calls = (nsid: string) => fakes.requests('bluesky').filter((r) => r.path === `/xrpc/${nsid}`);

describe('publish', () => {
  it('creates an app.bsky.feed.post record under a TID key and returns its at:// URI and permalink', async () => {
    const { ctx, checkpoints, identifier } = context();
    let postsAtCheckpoint = -1;
    ctx.saveCheckpoint = async (c) => {
      if (postsAtCheckpoint < 0) postsAtCheckpoint = fake.posts.length;
      checkpoints.push(c);
    };
    const result = await connector.publish(ctx);

    const [create] = calls('com.atproto.repo.createRecord');
    const body = create?.json as {
      repo: string;
      collection: string;
      rkey: string;
      record: Record<string, unknown>;
    };
    const did = fake.didFor(identifier);
    expect(create?.headers.authorization).toMatch(/^Bearer eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+$/);
    expect(body.repo).toBe(did);
    expect(body.collection).toBe('app.bsky.feed.post');
    expect(body.rkey).toMatch(TID);
    expect(body.record).toEqual({
      $type: 'app.bsky.feed.post',
      text: 'Hello from Herald',
      createdAt: expect.any(String),
    });
    expect(result).toEqual({
      externalId: `at://${did}/app.bsky.feed.post/${body.rkey}`,
      url: `https://bsky.app/profile/${identifier}/post/${body.rkey}`,
      // The record's cid, for the replies a thread makes under it.
      ref: { cid: expect.stringMatching(/^bafkrei[a-z2-7]+$/) },
    });
    expect(fake.posts).toHaveLength(1);
    // The key was saved before the write, while nothing had been posted yet.
    expect(postsAtCheckpoint).toBe(0);
    expect(checkpoints[0]).toMatchObject({ stage: 'posting', rkey: body.rkey, did });
    expect(calls('com.atproto.server.createSession')[0]?.json).toEqual({
      identifier,
      password: 'app-password',
    });
  });

  it('marks links, mentions and tags with UTF-8 byte offsets; unresolvable mentions stay plain text', async () => {
    fake.handles.set('alice.test', 'did:plc:alice');
    const text = 'Héllo 👋 @alice.test, see https://example.com/a?b=1. #launch (cc @nobody.invalid)';
    const { ctx } = context({ text });
    await connector.publish(ctx);
    const record = fake.posts[0]?.record as {
      facets: Array<{ index: { byteStart: number; byteEnd: number }; features: unknown[] }>;
    };
    const bytes = Buffer.from(text);
    const slice = (f: { index: { byteStart: number; byteEnd: number } }) =>
      bytes.subarray(f.index.byteStart, f.index.byteEnd).toString();
    expect(record.facets.map(slice)).toEqual(['@alice.test', 'https://example.com/a?b=1', '#launch']);
    expect(record.facets.map((f) => f.features[0])).toEqual([
      { $type: 'app.bsky.richtext.facet#mention', did: 'did:plc:alice' },
      { $type: 'app.bsky.richtext.facet#link', uri: 'https://example.com/a?b=1' },
      { $type: 'app.bsky.richtext.facet#tag', tag: 'launch' },
    ]);
    expect(calls('com.atproto.identity.resolveHandle').map((r) => r.query.get('handle'))).toEqual([
      'alice.test',
      'nobody.invalid',
    ]);
  });

  it('uploads images as blobs (raw bytes, their Content-Type) and embeds them with alt text', async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3, 255]);
    const jpg = new Uint8Array([0xff, 0xd8, 0xff, 9, 8, 7]);
    const { ctx } = context({
      media: [media('image', 'image/png', png, 'A chart'), media('image', 'image/jpeg', jpg)],
    });
    await connector.publish(ctx);

    const uploads = calls('com.atproto.repo.uploadBlob');
    expect(uploads.map((u) => u.headers['content-type'])).toEqual(['image/png', 'image/jpeg']);
    const post = fake.posts[0];
    expect(post?.media.map((m) => [m.mimeType, [...m.bytes], m.alt])).toEqual([
      ['image/png', [...png], 'A chart'],
      ['image/jpeg', [...jpg], ''],
    ]);
    expect(post?.record.embed).toMatchObject({ $type: 'app.bsky.embed.images' });
  });

  it('embeds a video as app.bsky.embed.video and maps options.langs', async () => {
    const mp4 = new Uint8Array(4096).map((_, i) => i % 251);
    const { ctx } = context({
      media: [media('video', 'video/mp4', mp4, 'Demo')],
      options: { langs: ['en', 'de'] },
    });
    await connector.publish(ctx);
    const post = fake.posts[0];
    expect(post?.record).toMatchObject({
      langs: ['en', 'de'],
      embed: { $type: 'app.bsky.embed.video', alt: 'Demo' },
    });
    expect(Buffer.compare(post?.media[0]?.bytes ?? Buffer.alloc(0), Buffer.from(mp4))).toBe(0);
  });

  it('refuses an image over Bluesky’s 1,000,000 bytes before uploading (media_error)', async () => {
    const { ctx } = context({ media: [media('image', 'image/png', new Uint8Array(1_000_001))] });
    const err = await failure(connector.publish(ctx));
    expect(err.category).toBe('media_error');
    expect(err.retryable).toBe(false);
    expect(calls('com.atproto.repo.uploadBlob')).toHaveLength(0);
  });

  it('maps BlobTooLarge from uploadBlob to media_error', async () => {
    fake.maxBlobBytes = 10;
    const { ctx } = context({ media: [media('image', 'image/png', new Uint8Array(11))] });
    expect((await failure(connector.publish(ctx))).category).toBe('media_error');
    expect(fake.posts).toHaveLength(0);
  });
});

describe('errors', () => {
  it('a wrong app password is auth_expired', async () => {
    const { ctx } = context();
    ctx.credentials = { ...ctx.credentials, app_password: 'wrong' };
    const err = await failure(connector.publish(ctx));
    expect(err.category).toBe('auth_expired');
    expect(err.retryable).toBe(false);
  });

  it('429 RateLimitExceeded is rate_limited with the ratelimit-reset hint', async () => {
    const { ctx } = context();
    const reset = Math.floor(Date.now() / 1000) + 120;
    fakes.failNext('bluesky', {
      path: /createRecord/,
      status: 429,
      body: { error: 'RateLimitExceeded', message: 'Rate Limit Exceeded' },
      headers: {
        'ratelimit-limit': '5000',
        'ratelimit-remaining': '0',
        'ratelimit-reset': String(reset),
        'ratelimit-policy': '5000;w=3600',
      },
    });
    const err = await failure(connector.publish(ctx));
    expect(err.category).toBe('rate_limited');
    expect(err.retryable).toBe(true);
    expect(err.opts.retryAfterSeconds).toBeGreaterThanOrEqual(118);
    expect(err.opts.retryAfterSeconds).toBeLessThanOrEqual(120);
  });

  it('a 500 is a retryable system error (after checking the key is still free)', async () => {
    const { ctx } = context();
    fakes.failNext('bluesky', {
      path: /createRecord/,
      status: 500,
      body: { error: 'InternalServerError', message: 'Internal Server Error' },
    });
    const err = await failure(connector.publish(ctx));
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(true);
    expect(calls('com.atproto.repo.getRecord')).toHaveLength(1);
  });

  it('InvalidRequest from the lexicon check is user_content', async () => {
    const { ctx } = context({ text: 'x'.repeat(301) });
    const err = await failure(connector.publish(ctx));
    expect(err.category).toBe('user_content');
    expect(err.message).toMatch(/300 graphemes/);
  });

  it('an expired access token is refreshed once (refreshSession) and the call retried', async () => {
    const first = context();
    await connector.publish(first.ctx);
    fake.expireAccessTokens();
    const second = context({ idempotencyKey: 'post_other:ch_1' });
    second.ctx.credentials = first.ctx.credentials;
    await connector.publish(second.ctx);
    expect(calls('com.atproto.server.refreshSession')).toHaveLength(1);
    expect(calls('com.atproto.server.createSession')).toHaveLength(1);
    expect(fake.posts).toHaveLength(2);
  });

  it('falls back to a new session when the refresh token is revoked too', async () => {
    const first = context();
    await connector.publish(first.ctx);
    fake.expireAccessTokens();
    fake.revokeRefreshTokens();
    const second = context({ idempotencyKey: 'post_other:ch_1' });
    second.ctx.credentials = first.ctx.credentials;
    await connector.publish(second.ctx);
    expect(calls('com.atproto.server.createSession')).toHaveLength(2);
    expect(fake.posts).toHaveLength(2);
  });
});

describe('checkpoint and reconcile', () => {
  it('after a crash past createRecord, reconcile finds the record by its saved key; publish again does not post twice', async () => {
    const { ctx, checkpoints } = context();
    const published = await connector.publish(ctx);
    const crashed = { ...checkpoints[0] } as Record<string, unknown>; // what the dead attempt had saved
    expect(crashed.stage).toBe('posting');

    const again = context({ checkpoint: crashed, idempotencyKey: ctx.idempotencyKey });
    again.ctx.credentials = ctx.credentials;
    expect(await connector.reconcile(again.ctx)).toEqual(published);
    expect(await connector.publish(again.ctx)).toEqual(published);
    expect(fake.posts).toHaveLength(1);
  });

  it('when the answer to createRecord is lost (502) the record is found and reported, not re-posted', async () => {
    const { ctx } = context();
    const original = fake.handle.bind(fake);
    let lost = false;
    fake.handle = async (req, c) => {
      const res = await original(req, c);
      if (!lost && req.path.endsWith('createRecord')) {
        lost = true;
        return { status: 502, body: { error: 'UpstreamFailure', message: 'Bad Gateway' } };
      }
      return res;
    };
    try {
      const result = await connector.publish(ctx);
      expect(result.externalId).toBe(fake.posts[0]?.uri);
      expect(fake.posts).toHaveLength(1);
    } finally {
      fake.handle = original;
    }
  });

  it('a second createRecord under the same key is refused by the PDS; the connector reports the existing post', async () => {
    const { ctx, checkpoints } = context();
    const first = await connector.publish(ctx);
    // A retry that skips the lookup (e.g. getRecord briefly failing) still cannot duplicate.
    const again = context({ checkpoint: { rkey: checkpoints[0]?.rkey }, idempotencyKey: ctx.idempotencyKey });
    again.ctx.credentials = ctx.credentials;
    fakes.failNext('bluesky', {
      path: /getRecord/,
      status: 400,
      body: { error: 'RecordNotFound', message: 'Could not locate record' },
    });
    expect(await connector.publish(again.ctx)).toEqual(first);
    expect(fake.posts).toHaveLength(1);
  });

  it('reconcile is null without a saved key (nothing was written) and when the keyed record is absent', async () => {
    const { ctx } = context();
    expect(await connector.reconcile(ctx)).toBeNull();
    expect(fakes.requests('bluesky')).toHaveLength(0);
    const keyed = context({ checkpoint: { stage: 'posting', rkey: '3lbbbbbbbbbbb' } });
    expect(await connector.reconcile(keyed.ctx)).toBeNull();
  });

  it('reconcile says "outcome unknown" when the lookup fails', async () => {
    const { ctx } = context({ checkpoint: { stage: 'posting', rkey: '3lbbbbbbbbbbb' } });
    fakes.failNext('bluesky', {
      path: /getRecord/,
      status: 500,
      body: { error: 'InternalServerError', message: 'oops' },
    });
    const err = await failure(connector.reconcile(ctx));
    expect(err.category).toBe('system');
    expect(err.message).toMatch(/outcome unknown/);
  });
});

describe('a thread: replies with strong refs to the root and the parent', () => {
  it('each part is a record whose reply names the root and the part before it by {uri, cid}', async () => {
    const { ctx } = context();
    const root = await connector.publish(ctx);
    const item = (text: string, index: number, parent: typeof root) =>
      context({
        text,
        idempotencyKey: `${ctx.idempotencyKey}.t${index}`,
        part: { kind: 'thread', index },
        replyTo: { root, parent },
        channel: ctx.channel,
        credentials: ctx.credentials,
      }).ctx;
    const two = await connector.publish(item('two', 0, root));
    const three = await connector.publish(item('three', 1, two));

    const records = calls('com.atproto.repo.createRecord').map(
      (c) => (c.json as { rkey: string; record: Record<string, unknown> }).record,
    );
    expect(records[0]?.reply).toBeUndefined();
    expect(records[1]?.reply).toEqual({
      root: { uri: root.externalId, cid: root.ref?.cid },
      parent: { uri: root.externalId, cid: root.ref?.cid },
    });
    expect(records[2]?.reply).toEqual({
      root: { uri: root.externalId, cid: root.ref?.cid },
      parent: { uri: two.externalId, cid: two.ref?.cid },
    });
    // Each part under its own record key (the idempotency key names the part).
    expect(new Set([root, two, three].map((r) => r.externalId)).size).toBe(3);
    expect(three.ref?.cid).toMatch(/^bafkrei/);
  });

  it('a reconcile of a part finds its record by the saved key and hands back its cid', async () => {
    const { ctx } = context();
    const root = await connector.publish(ctx);
    const part = publishContext(
      {
        text: 'two',
        idempotencyKey: `${ctx.idempotencyKey}.t0`,
        part: { kind: 'thread', index: 0 },
        replyTo: { root, parent: root },
        channel: ctx.channel,
        credentials: ctx.credentials,
      },
      { keepCheckpoint: true },
    );
    const made = await connector.publish(part.ctx);
    expect(await connector.reconcile(part.ctx)).toEqual(made);
  });

  it('the fake holds a reply to the lexicon: a strong ref without a cid is InvalidRequest', async () => {
    const { ctx } = context();
    const root = await connector.publish(ctx);
    const bad = context({
      text: 'two',
      part: { kind: 'thread', index: 0 },
      replyTo: { root: { ...root, ref: { cid: 'not a cid' } }, parent: root },
      channel: ctx.channel,
      credentials: ctx.credentials,
    }).ctx;
    await expect(connector.publish(bad)).rejects.toMatchObject({ category: 'user_content' });
    expect(fake.posts).toHaveLength(1);
  });
});

describe('metrics', () => {
  it('reads likes, replies, reposts and quotes from app.bsky.feed.getPosts', async () => {
    const { ctx } = context();
    const { externalId } = await connector.publish(ctx);
    fake.counts.set(externalId, { likeCount: 7, repostCount: 2, replyCount: 3, quoteCount: 1 });
    const m = await connector.metrics?.(metricsContext(ctx, [externalId]));
    expect(m).toEqual({ [externalId]: { impressions: 0, likes: 7, comments: 3, shares: 3, clicks: 0 } });
    expect(calls('app.bsky.feed.getPosts')[0]?.query.getAll('uris')).toEqual([externalId]);
  });
});

describe('the fake itself', () => {
  it('answers a route it does not serve with the shared 404, naming the call', async () => {
    const session = await fetch(`${fakes.url('bluesky')}/xrpc/com.atproto.server.createSession`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ identifier: 'probe.bsky.social', password: 'app-password' }),
    });
    const { accessJwt } = (await session.json()) as { accessJwt: string };
    const res = await fetch(`${fakes.url('bluesky')}/xrpc/com.example.unknownMethod`, {
      headers: { authorization: `Bearer ${accessJwt}` },
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      error: 'no_route',
      message: 'The bluesky fake serves no GET /xrpc/com.example.unknownMethod.',
    });
  });
});
