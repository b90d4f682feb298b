import { beforeEach, describe, expect, it, vi } from 'vitest';
import { ActError, type SignedIn } from '#core/people';
import type { DeliveryRecord, PostRecord } from '#core/posts';
import { handler } from '#handlers/console-posts';
import * as acts from '#usecases/post-acts';
import * as settingsCases from '#usecases/settings';
import {
  call,
  consoleEvent,
  consoleOrg,
  formPost,
  mainText,
  ORG,
  person,
  sessionOf,
} from '../support/console.ts';

// The post page's Unpublish… over mocked use cases: shown to owners and admins while something is
// published on a platform that can remove it (disabled, saying why, while Dangerous AI operations
// is off), its confirmation naming what goes and what stays, and the act through the use case.

vi.mock('#usecases/console-sessions', () => ({ resolveSession: vi.fn(), signOut: vi.fn() }));
vi.mock('#usecases/settings', () => ({ getSettings: vi.fn(), updateSettings: vi.fn() }));
vi.mock('#usecases/approvals', () => ({ approvePost: vi.fn(), rejectPost: vi.fn() }));
vi.mock('#usecases/post-acts', () => ({
  listPostsOf: vi.fn(),
  getPostDetails: vi.fn(),
  listApprovals: vi.fn(),
  reschedule: vi.fn(),
  publishNow: vi.fn(),
  remove: vi.fn(),
  unpublish: vi.fn(),
}));

const sessions = await import('#usecases/console-sessions');
const OWNER = person('owner', 1, 'owner@example.com');
const MEMBER = person('member', 3, 'member@example.com');
const POST_ID = 'post_01JD0000000000000000000007';
const MASTODON = 'channel_01JD000000000000000000001';
const INSTAGRAM = 'channel_01JD000000000000000000002';
const SETTINGS = { dangerous_ops: true, approval_required: false, landing_origins: [] };
const org = () => consoleOrg(SETTINGS);
const channel = (id: string, platform: 'mastodon' | 'instagram', handle: string) => ({
  id,
  platform,
  handle,
  avatar_url: null,
  followers: 3,
  status: 'live' as const,
  last_sync_at: null,
  last_error: null,
  created_at: '2030-01-01T00:00:00.000Z',
});
const CHANNELS = [
  channel(MASTODON, 'mastodon', '@acme@social.example'),
  channel(INSTAGRAM, 'instagram', 'acme.ig'),
];
const delivery = (channel_id: string, stage: DeliveryRecord['stage'] = 'published'): DeliveryRecord => ({
  channel_id,
  stage,
  external_id: '1',
  url: 'https://social.example/@acme/1',
  error: null,
  error_category: null,
  attempts: 1,
  updated_at: '2030-01-05T10:00:00.000Z',
  round: 1,
});
const record = (deliveries: DeliveryRecord[]): PostRecord => ({
  id: POST_ID,
  org_id: ORG,
  status: 'published',
  type: 'single',
  title: 'Launch',
  body: null,
  scheduled_at: null,
  published_at: '2030-01-05T10:00:00.000Z',
  created_at: '2030-01-05T10:00:00.000Z',
  updated_at: '2030-01-05T10:00:00.000Z',
  variants: deliveries.map((d, i) => ({
    id: `variant_${i}`,
    channel_id: d.channel_id,
    body: 'Hi',
    media: [],
    options: {},
  })),
  deliveries: Object.fromEntries(deliveries.map((d) => [d.channel_id, d])),
  round: 1,
  version: 6,
  approval: null,
  counted_period: '2030-01',
});
const details = (p: PostRecord, settings = SETTINGS) => ({ post: p, channels: CHANNELS, settings, keys: [] });
const get = (who: SignedIn, query = '') =>
  consoleEvent('GET /console/posts/{id}', { cookies: sessionOf(who), params: { id: POST_ID }, query });
const post = (who: SignedIn, fields: Record<string, string>) =>
  formPost('POST /console/posts/{id}/{act}', fields, {
    cookies: sessionOf(who),
    params: { id: POST_ID, act: 'unpublish' },
  });

beforeEach(() => {
  vi.resetAllMocks();
  vi.mocked(sessions.resolveSession).mockImplementation(
    async (cookie) => [OWNER, MEMBER].find((p) => sessionOf(p)[0]?.endsWith(`=${cookie}`)) ?? null,
  );
  vi.mocked(settingsCases.getSettings).mockResolvedValue({ org: org(), settings: SETTINGS, version: 3 });
  vi.mocked(acts.getPostDetails).mockResolvedValue(
    details(record([delivery(MASTODON), delivery(INSTAGRAM)])),
  );
});

describe('unpublish on the post page', () => {
  it('offers Unpublish… to owners while something removable is published; members see no act', async () => {
    const owner = await call(handler, get(OWNER));
    expect(owner.body).toContain(`href="/console/posts/${POST_ID}?act=unpublish"`);
    const member = await call(handler, get(MEMBER));
    expect(member.body).not.toContain('act=unpublish');
  });

  it('is disabled, saying why, while Dangerous AI operations is off', async () => {
    vi.mocked(acts.getPostDetails).mockResolvedValue(
      details(record([delivery(MASTODON)]), { ...SETTINGS, dangerous_ops: false }),
    );
    const res = await call(handler, get(OWNER));
    expect(res.body).toMatch(/disabled aria-describedby="unpublish-off">Unpublish…/);
    expect(mainText(res)).toContain('Unpublishing needs Dangerous AI operations');
  });

  it('is not offered when nothing removable is published (Instagram only, or already removed)', async () => {
    vi.mocked(acts.getPostDetails).mockResolvedValue(
      details(record([delivery(INSTAGRAM), delivery(MASTODON, 'removed')])),
    );
    const res = await call(handler, get(OWNER));
    expect(res.body).not.toContain('Unpublish…');
    expect(mainText(res)).toContain('Removed');
  });

  it('confirms first: what is deleted and what stays, with the version shown, posted to the act', async () => {
    const page = await call(handler, get(OWNER, 'act=unpublish'));
    expect(page.body).toContain(`action="/console/posts/${POST_ID}/unpublish"`);
    expect(page.body).toContain('<input type="hidden" name="version" value="6">');
    expect(mainText(page)).toContain('@acme@social.example: deleted from the platform');
    expect(mainText(page)).toContain('stays (the platform cannot remove posts)');
    expect((await call(handler, get(MEMBER, 'act=unpublish'))).statusCode).toBe(403);
  });

  it('runs the use case with the person and the version shown; a refusal of the toggle is the 403 page', async () => {
    const done = await call(handler, post(OWNER, { version: '6', status: 'published' }));
    expect(done.headers.location).toBe(`/console/posts/${POST_ID}?msg=post_unpublishing`);
    expect(acts.unpublish).toHaveBeenCalledWith(
      expect.objectContaining({
        orgId: ORG,
        postId: POST_ID,
        actor: { kind: 'person', userId: OWNER.user.id },
        shown: { version: 6, status: 'published' },
      }),
    );
    vi.mocked(acts.unpublish).mockRejectedValue(new ActError('Dangerous AI operations is off.', 'forbidden'));
    expect((await call(handler, post(OWNER, { version: '6', status: 'published' }))).statusCode).toBe(403);
  });
});
