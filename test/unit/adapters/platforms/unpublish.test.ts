import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connector as bluesky } from '#adapters/platforms/bluesky/index';
import { connector as mastodon } from '#adapters/platforms/mastodon/index';
import type { Connector, PublishContext, UnpublishContext } from '#adapters/platforms/types';
import { connector as x } from '#adapters/platforms/x/index';
import { createFake as blueskyFake, type FakeBluesky } from '../../../fakes/bluesky.ts';
import { type FakeMastodon, createFake as mastodonFake } from '../../../fakes/mastodon.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { type FakeX, createFake as xFake } from '../../../fakes/x.ts';
import { failure, publishContext } from './context.ts';

// Each connector's unpublish against its platform's contract fake: what it publishes is removed
// from the fake (the platform's documented delete), and a part the platform no longer has counts
// as removed (`alreadyGone`), so a second removal — a retried or duplicated message — ends the same.

let fakes: FakePlatforms;
let n = 0;
const env = { ...process.env };

beforeAll(async () => {
  fakes = await new FakePlatforms([xFake(), blueskyFake(), mastodonFake()]).start();
});
afterAll(() => fakes.stop());
beforeEach(() => {
  fakes.reset();
  n++;
  process.env = { ...env, HERALD_PLATFORM_X_URL: fakes.url('x') };
});

/** What unpublish gets for the parts `publish` made, last first (as the worker hands them over). */
function removal(
  ctx: PublishContext,
  made: Array<{ externalId: string; url: string | null; ref?: unknown }>,
) {
  return {
    channel: ctx.channel,
    credentials: ctx.credentials,
    tokens: ctx.tokens,
    parts: made
      .map((m, i) => ({
        kind: i === 0 ? ('root' as const) : ('thread' as const),
        externalId: m.externalId,
        url: m.url,
      }))
      .reverse(),
  } satisfies UnpublishContext;
}

const deletes = (platform: string) => fakes.requests(platform).filter((r) => r.method === 'DELETE');

async function publishTwo(connector: Connector, ctx: PublishContext) {
  const first = await connector.publish(ctx);
  const second = await connector.publish({
    ...ctx,
    text: 'A second post',
    idempotencyKey: `${ctx.idempotencyKey}.t0`,
  });
  return [first, second];
}

describe('x: DELETE /2/tweets/:id', () => {
  const context = () =>
    publishContext({
      channel: { id: 'ch_1', handle: '@acme', platform: 'x' },
      credentials: { access_token: 'token', account_id: '1500000000000000001' },
    }).ctx;

  it('deletes each part, last first, with the user token; the posts are gone from X', async () => {
    const fake = fakes.fake<FakeX>('x');
    const ctx = context();
    const made = await publishTwo(x, ctx);
    expect(fake.posts).toHaveLength(2);
    expect(await x.unpublish?.(removal(ctx, made))).toEqual({ alreadyGone: [] });
    expect(fake.posts).toHaveLength(0);
    expect(deletes('x').map((r) => r.path)).toEqual([
      `/2/tweets/${made[1]?.externalId}`,
      `/2/tweets/${made[0]?.externalId}`,
    ]);
    expect(deletes('x')[0]?.headers.authorization).toBe('Bearer token');
  });

  it('a post X no longer has (404) counts as removed: a second removal ends the same', async () => {
    const ctx = context();
    const made = [await x.publish(ctx)];
    await x.unpublish?.(removal(ctx, made));
    expect(await x.unpublish?.(removal(ctx, made))).toEqual({ alreadyGone: [made[0]?.externalId] });
  });

  it("another user's post is refused (403): not retried, nothing counted as gone", async () => {
    const fake = fakes.fake<FakeX>('x');
    const ctx = context();
    const made = [await x.publish(ctx)];
    (fake.posts[0] as { author_id: string }).author_id = '42';
    const err = await failure(x.unpublish?.(removal(ctx, made)) as Promise<unknown>);
    expect(err).toMatchObject({ category: 'platform_rejected', retryable: false });
    expect(fake.posts).toHaveLength(1);
  });

  it('a revoked token is auth_expired', async () => {
    const ctx = context();
    const made = [await x.publish(ctx)];
    const stale = { ...removal(ctx, made), credentials: { access_token: 'revoked', account_id: '1' } };
    const source = publishContext({ channel: ctx.channel, credentials: stale.credentials }).ctx.tokens;
    const err = await failure(x.unpublish?.({ ...stale, tokens: source }) as Promise<unknown>);
    expect(err).toMatchObject({ category: 'auth_expired' });
  });
});

describe('bluesky: com.atproto.repo.deleteRecord', () => {
  const context = () => {
    const identifier = `acme${n}.bsky.social`;
    return publishContext({
      channel: { id: 'ch_1', handle: identifier, platform: 'bluesky' },
      credentials: { service: fakes.url('bluesky'), identifier, app_password: 'app-password' },
      idempotencyKey: `post_${n}:ch_1`,
    }).ctx;
  };

  it('deletes each record by the repo, collection and record key of its at-uri', async () => {
    const fake = fakes.fake<FakeBluesky>('bluesky');
    const ctx = context();
    const made = await publishTwo(bluesky, ctx);
    expect(fake.posts).toHaveLength(2);
    expect(await bluesky.unpublish?.(removal(ctx, made))).toEqual({ alreadyGone: [] });
    expect(fake.posts).toHaveLength(0);
    const calls = fakes.requests('bluesky').filter((r) => r.path === '/xrpc/com.atproto.repo.deleteRecord');
    const [, repo, collection, rkey] =
      /^at:\/\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(made[1]?.externalId ?? '') ?? [];
    expect(calls[0]?.method).toBe('POST');
    expect(calls[0]?.json).toEqual({ repo, collection, rkey });
    expect(calls).toHaveLength(2);
  });

  it('a record already gone (200 without a commit) counts as removed', async () => {
    const ctx = context();
    const made = [await bluesky.publish(ctx)];
    await bluesky.unpublish?.(removal(ctx, made));
    expect(await bluesky.unpublish?.(removal(ctx, made))).toEqual({ alreadyGone: [made[0]?.externalId] });
  });

  it('an id that is no at-uri is refused without a call', async () => {
    const ctx = context();
    const bad = { ...removal(ctx, [{ externalId: 'https://bsky.app/x', url: null }]) };
    expect(await failure(bluesky.unpublish?.(bad) as Promise<unknown>)).toMatchObject({ retryable: false });
    expect(fakes.requests('bluesky').filter((r) => r.path.endsWith('deleteRecord'))).toHaveLength(0);
  });
});

describe('mastodon: DELETE /api/v1/statuses/:id', () => {
  const context = () =>
    publishContext({
      channel: { id: 'ch_1', handle: '@acme@mastodon.example', platform: 'mastodon' },
      credentials: { instance: fakes.url('mastodon'), access_token: 'token' },
    }).ctx;

  it('deletes each status, last first; the instance no longer has them', async () => {
    const fake = fakes.fake<FakeMastodon>('mastodon');
    const ctx = context();
    const made = await publishTwo(mastodon, ctx);
    expect(fake.posts).toHaveLength(2);
    expect(await mastodon.unpublish?.(removal(ctx, made))).toEqual({ alreadyGone: [] });
    expect(fake.posts).toHaveLength(0);
    expect(deletes('mastodon').map((r) => r.path)).toEqual([
      `/api/v1/statuses/${made[1]?.externalId}`,
      `/api/v1/statuses/${made[0]?.externalId}`,
    ]);
  });

  it('a status already deleted (404 Record not found) counts as removed', async () => {
    const ctx = context();
    const made = [await mastodon.publish(ctx)];
    await mastodon.unpublish?.(removal(ctx, made));
    expect(await mastodon.unpublish?.(removal(ctx, made))).toEqual({ alreadyGone: [made[0]?.externalId] });
  });
});

// The platforms below publish through media containers, uploads or boards; their fakes are seeded
// with a post as their publish leaves it (only the id matters to a delete).

describe.each([
  {
    platform: 'threads',
    env: 'HERALD_PLATFORM_THREADS_URL',
    credentials: (f: Record<string, unknown>) => ({ access_token: 'token', account_id: f.userId }),
    seed: (f: Record<string, unknown[]>, id: string) =>
      f.posts?.push({ id, text: 'Hello', timestamp: Date.now() }),
    left: (f: Record<string, Array<{ id: string }>>) => f.posts?.length,
    call: /^\/v1\.0\/(\d+)$/,
  },
  {
    platform: 'facebook',
    env: 'HERALD_PLATFORM_FACEBOOK_URL',
    credentials: (f: Record<string, unknown>) => ({ access_token: 'token', account_id: f.pageId }),
    seed: (f: Record<string, unknown[]>, id: string) =>
      f.posts?.push({ id: `104857600000001_${id}`, message: 'Hello', media: [], createdTime: Date.now() }),
    left: (f: Record<string, Array<{ id: string }>>) => f.posts?.length,
    call: /\/104857600000001_\d+$/,
  },
  {
    platform: 'linkedin',
    env: 'HERALD_PLATFORM_LINKEDIN_URL',
    credentials: () => ({ access_token: 'token', account_id: 'urn:li:person:8675309' }),
    seed: (f: Record<string, unknown[]>, id: string) =>
      f.posts?.push({
        urn: `urn:li:share:${id}`,
        author: 'urn:li:person:8675309',
        commentary: 'Hello',
        createdAt: Date.now(),
      }),
    left: (f: Record<string, Array<{ id: string }>>) => f.posts?.length,
    call: /^\/rest\/posts\/urn%3Ali%3Ashare%3A\d+$/,
  },
  {
    platform: 'youtube',
    env: 'HERALD_PLATFORM_YOUTUBE_URL',
    credentials: () => ({ access_token: 'token', refresh_token: 'refresh', account_id: 'UCherald' }),
    seed: (f: Record<string, unknown[]>, id: string) => f.videos?.push({ id, title: 'Hello' }),
    left: (f: Record<string, Array<{ id: string }>>) => f.videos?.length,
    call: /^\/youtube\/v3\/videos$/,
  },
  {
    platform: 'pinterest',
    env: 'HERALD_PLATFORM_PINTEREST_URL',
    credentials: () => ({ access_token: 'token', refresh_token: 'refresh', account_id: '549755885175' }),
    seed: (f: Record<string, unknown[]>, id: string) => f.pins?.push({ id, title: 'Hello' }),
    left: (f: Record<string, Array<{ id: string }>>) => f.pins?.length,
    call: /^\/v5\/pins\/\d+$/,
  },
] as const)('$platform', ({ platform, env: variable, credentials, seed, left, call }) => {
  let own: FakePlatforms;
  let connector: Connector;
  beforeAll(async () => {
    const fakes = await import(`../../../fakes/${platform}.ts`);
    own = await new FakePlatforms([fakes.createFake()]).start();
    connector = (await import(`#adapters/platforms/${platform}/index`)).connector as Connector;
  });
  afterAll(() => own.stop());
  beforeEach(() => {
    own.reset();
    process.env[variable] = own.url(platform);
  });

  it('deletes the post the documented way; it is gone from the platform, and a second removal ends the same', async () => {
    const fake = own.fake(platform) as unknown as Record<string, Array<{ id: string }>>;
    const id = String(1_790_000_000 + n);
    const externalId =
      platform === 'linkedin' ? `urn:li:share:${id}` : platform === 'facebook' ? `104857600000001_${id}` : id;
    seed(fake as never, id);
    const ctx = publishContext({
      channel: { id: 'ch_1', handle: 'acme', platform },
      credentials: credentials(fake as never),
    }).ctx;
    const made = [{ externalId, url: null }];
    expect(await connector.unpublish?.(removal(ctx, made))).toEqual({ alreadyGone: [] });
    expect(left(fake as never)).toBe(0);
    const sent = own.requests(platform).filter((r) => r.method === 'DELETE');
    expect(sent).toHaveLength(1);
    expect(sent[0]?.path).toMatch(call);
    const again = await connector.unpublish?.(removal(ctx, made));
    // LinkedIn documents its deletes as idempotent (204 again): nothing tells a second one apart.
    expect(again).toEqual({ alreadyGone: platform === 'linkedin' ? [] : [externalId] });
  });
});
