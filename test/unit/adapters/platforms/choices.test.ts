import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { choicesFor } from '#adapters/platforms/choices';
import { connectorFor } from '#adapters/platforms/index';
import { type ChoicesContext, type Credentials, PlatformError } from '#adapters/platforms/types';
import { CHOICE_NAMES, type OptionsNote } from '#core/channel-options';
import { PLATFORMS, type Platform } from '#core/platforms';
import { createFake as linkedinFake } from '../../../fakes/linkedin.ts';
import { DEFAULT_BOARD, type PinterestFake, createFake as pinterestFake } from '../../../fakes/pinterest.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { type TikTokFake, createFake as tiktokFake } from '../../../fakes/tiktok.ts';
import { createFake as youtubeFake } from '../../../fakes/youtube.ts';
import { memoryTokens } from './context.ts';

// Each connector's choices (getChannelOptions' live lists) against its platform's contract fake:
// the documented endpoints, their paging, and their refusals.

let fakes: FakePlatforms;
const ENV = ['PINTEREST', 'YOUTUBE', 'TIKTOK', 'LINKEDIN'];

beforeAll(async () => {
  fakes = await new FakePlatforms([pinterestFake(), youtubeFake(), tiktokFake(), linkedinFake()]).start();
  for (const p of ENV) process.env[`HERALD_PLATFORM_${p}_URL`] = fakes.url(p.toLowerCase());
});

afterAll(async () => {
  for (const p of ENV) delete process.env[`HERALD_PLATFORM_${p}_URL`];
  await fakes.stop();
});

beforeEach(() => fakes.reset());

interface Asked {
  ctx: ChoicesContext;
  limits: Record<string, unknown>;
  notes: OptionsNote[];
  saved: Credentials[];
}

function ask(platform: Platform, credentials: Credentials): Asked {
  const limits: Record<string, unknown> = {};
  const notes: OptionsNote[] = [];
  const saved: Credentials[] = [];
  const ctx: ChoicesContext = {
    channel: { id: 'ch_unit', handle: 'herald', platform },
    credentials,
    tokens: memoryTokens(platform, credentials, saved),
    limit: (name, value) => {
      limits[name] = value;
    },
    note: (n) => notes.push(n),
  };
  return { ctx, limits, notes, saved };
}

async function choicesOf(platform: Platform, a: Asked) {
  const connector = await connectorFor(platform);
  return connector.choices!(a.ctx);
}

const requests = (platform: string, path: string) => fakes.requests(platform).filter((r) => r.path === path);

describe('pinterest: boards for board_id', () => {
  it('lists the boards of the account, secret ones marked', async () => {
    const a = ask('pinterest', {
      access_token: 'token',
      refresh_token: 'refresh',
      account_id: DEFAULT_BOARD,
    });
    expect(await choicesOf('pinterest', a)).toEqual({
      board_id: [
        { value: DEFAULT_BOARD, label: 'Herald' },
        { value: '549755885176', label: 'Ideas (secret)' },
      ],
    });
    const [req] = requests('pinterest', '/v5/boards');
    expect(req?.query.get('page_size')).toBe('250');
    expect(req?.headers.authorization).toBe('Bearer token');
  });

  it('follows the bookmark to the last page', async () => {
    // The fake pages at page_size; one board a page shows the bookmark being followed.
    const fake = fakes.fake<PinterestFake>('pinterest');
    const handle = fake.handle.bind(fake);
    fake.handle = (req, ctx) => {
      if (req.path === '/v5/boards') req.query.set('page_size', '1');
      return handle(req, ctx);
    };
    try {
      const a = ask('pinterest', { access_token: 'token', account_id: DEFAULT_BOARD });
      const got = await choicesOf('pinterest', a);
      expect(got.board_id?.map((c) => c.value)).toEqual([DEFAULT_BOARD, '549755885176']);
      const pages = requests('pinterest', '/v5/boards');
      expect(pages.map((r) => r.query.get('bookmark'))).toEqual([null, '1']);
    } finally {
      fake.handle = handle;
    }
  });

  it('renews a refused token once through the one OAuth client and lists again', async () => {
    const a = ask('pinterest', {
      access_token: 'stale',
      refresh_token: 'refresh',
      account_id: DEFAULT_BOARD,
    });
    const got = await choicesOf('pinterest', a);
    expect(got.board_id).toHaveLength(2);
    expect(a.saved).toHaveLength(1);
    expect(requests('pinterest', '/v5/boards')).toHaveLength(2);
  });

  it("answers a rate limit as Pinterest's rate_limited error", async () => {
    fakes.failDocumented('pinterest', 'throttled');
    const a = ask('pinterest', { access_token: 'token', account_id: DEFAULT_BOARD });
    const err = await choicesOf('pinterest', a).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformError);
    expect((err as PlatformError).category).toBe('rate_limited');
  });
});

describe('youtube: assignable categories for category_id', () => {
  it("lists the categories of the channel's country that uploads accept", async () => {
    const a = ask('youtube', { access_token: 'token', refresh_token: 'refresh', account_id: 'UCherald' });
    const got = await choicesOf('youtube', a);
    const values = got.category_id?.map((c) => c.value) ?? [];
    expect(values).toContain('22');
    expect(got.category_id).toContainEqual({ value: '22', label: 'People & Blogs' });
    // Listed by YouTube but refused by videos.insert: left out.
    expect(values).not.toContain('18');
    expect(values).not.toContain('30');
    const [req] = requests('youtube', '/youtube/v3/videoCategories');
    expect(req?.query.get('part')).toBe('snippet');
    expect(req?.query.get('regionCode')).toBe('US');
    expect(a.limits).toEqual({ region_code: 'US' });
  });

  it('answers a spent quota as an app-wide rate limit', async () => {
    fakes.failNext('youtube', {
      status: 403,
      path: /videoCategories/,
      body: {
        error: {
          code: 403,
          message: 'The request cannot be completed because you have exceeded your quota.',
          errors: [{ reason: 'quotaExceeded', domain: 'youtube.quota', message: 'quota' }],
        },
      },
    });
    const a = ask('youtube', { access_token: 'token', account_id: 'UCherald' });
    const err = (await choicesOf('youtube', a).catch((e: unknown) => e)) as PlatformError;
    expect(err).toBeInstanceOf(PlatformError);
    expect(err.category).toBe('rate_limited');
    expect(err.opts.scope).toBe('app');
  });
});

describe("tiktok: the creator's privacy levels and limits", () => {
  it('lists privacy_level_options and reports the limits creator_info answers', async () => {
    const fake = fakes.fake<TikTokFake>('tiktok');
    fake.creator = {
      privacy_level_options: ['FOLLOWER_OF_CREATOR', 'SELF_ONLY'],
      comment_disabled: true,
      duet_disabled: false,
      stitch_disabled: true,
      max_video_post_duration_sec: 300,
    };
    const a = ask('tiktok', { access_token: 'token', refresh_token: 'refresh', account_id: 'open_id' });
    expect(await choicesOf('tiktok', a)).toEqual({
      privacy_level: [
        { value: 'FOLLOWER_OF_CREATOR', label: 'Followers' },
        { value: 'SELF_ONLY', label: 'Only me' },
      ],
    });
    expect(a.limits).toEqual({
      max_video_post_duration_sec: 300,
      comment_disabled: true,
      duet_disabled: false,
      stitch_disabled: true,
    });
    const [req] = requests('tiktok', '/v2/post/publish/creator_info/query/');
    expect(req?.method).toBe('POST');
    expect(req?.headers['content-type']).toContain('application/json');
  });

  it("answers TikTok's rate_limit_exceeded envelope as rate_limited", async () => {
    fakes.failNext('tiktok', {
      status: 429,
      path: /creator_info/,
      body: {
        data: {},
        error: { code: 'rate_limit_exceeded', message: 'API rate limit exceeded', log_id: 'x' },
      },
    });
    const a = ask('tiktok', { access_token: 'token', account_id: 'open_id' });
    const err = (await choicesOf('tiktok', a).catch((e: unknown) => e)) as PlatformError;
    expect(err.category).toBe('rate_limited');
  });
});

describe('linkedin: organizations the member administers', () => {
  it('lists each approved ADMINISTRATOR organization with its name', async () => {
    const a = ask('linkedin', { access_token: 'token', account_id: 'urn:li:person:herald' });
    expect(await choicesOf('linkedin', a)).toEqual({
      organization: [{ value: 'urn:li:organization:2414183', label: 'Acme Corp' }],
    });
    const [acl] = requests('linkedin', '/rest/organizationAcls');
    expect(Object.fromEntries(acl?.query ?? [])).toMatchObject({
      q: 'roleAssignee',
      role: 'ADMINISTRATOR',
      state: 'APPROVED',
    });
    expect(acl?.headers['x-restli-protocol-version']).toBe('2.0.0');
    expect(acl?.headers['linkedin-version']).toMatch(/^\d{6}$/);
    expect(a.notes).toEqual([]);
  });

  it('without r_organization_admin: an empty list and a note naming the grant', async () => {
    fakes.failNext('linkedin', {
      status: 403,
      path: /organizationAcls/,
      body: {
        status: 403,
        serviceErrorCode: 100,
        code: 'ACCESS_DENIED',
        message: 'Not enough permissions to access: organizationAcls.FINDER-roleAssignee.20240501',
      },
    });
    const a = ask('linkedin', { access_token: 'token', account_id: 'urn:li:person:herald' });
    expect(await choicesOf('linkedin', a)).toEqual({ organization: [] });
    expect(a.notes).toEqual([
      expect.objectContaining({
        code: 'scope_not_granted',
        option: 'organization',
        scope: 'r_organization_admin',
      }),
    ]);
    expect(requests('linkedin', '/rest/organizations/2414183')).toHaveLength(0);
  });
});

describe('the choices registry', () => {
  it.each(PLATFORMS)(
    "%s: getChannelOptions' hook is the connector's, for the lists CHOICE_NAMES names",
    async (p) => {
      const hook = await choicesFor(p);
      expect(hook).toBe((await connectorFor(p)).choices);
      expect(hook !== undefined).toBe((CHOICE_NAMES[p] ?? []).length > 0);
    },
  );
});
