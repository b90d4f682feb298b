import { beforeEach, describe, expect, it, vi } from 'vitest';
import { ActError, type SignedIn } from '#core/people';
import type { PostRecord } from '#core/posts';
import { handler } from '#handlers/console-posts';
import type { HttpResult } from '#shared/envelope';
import type { ApiKeyView } from '#usecases/api-keys';
import * as approvals from '#usecases/approvals';
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

// The Posts and Approvals pages over mocked use cases: what the handler passes them (the session's
// org, the person, the filters, the version and status the page showed), what it renders (escaped;
// a platform's link only when http(s)), and how refusals reach the person (403 and 404 pages, a
// field error, the post again with what changed).

vi.mock('#usecases/console-sessions', () => ({ resolveSession: vi.fn(), signOut: vi.fn() }));
vi.mock('#usecases/settings', () => ({ getSettings: vi.fn(), updateSettings: vi.fn() }));
vi.mock('#usecases/approvals', () => ({ approvePost: vi.fn(), rejectPost: vi.fn() }));
vi.mock('#usecases/post-acts', async () => {
  const { ActError: Refusal } = await import('#core/people');
  return {
    listPostsOf: vi.fn(),
    getPostDetails: vi.fn(),
    listApprovals: vi.fn(),
    reschedule: vi.fn(),
    publishNow: vi.fn(),
    remove: vi.fn(),
    editTexts: vi.fn(),
    EditRefused: class EditRefused extends Refusal {
      constructor(readonly fields: Array<{ pointer: string; code: string; message: string }>) {
        super(fields[0]?.message ?? 'invalid', 'invalid');
      }
    },
  };
});

const sessions = await import('#usecases/console-sessions');

const OWNER = person('owner', 1, 'owner@example.com');
const ADMIN = person('admin', 2, 'admin@example.com');
const MEMBER = person('member', 3, 'member@example.com');
const POST_ID = 'post_01JD0000000000000000000007';
const CH = 'channel_01JD000000000000000000001';
const KEY_ID = 'key_01JD0000000000000000000001';
const SETTINGS = { dangerous_ops: false, approval_required: true, landing_origins: [] };

const org = () => consoleOrg(SETTINGS);

const CHANNELS = [
  {
    id: CH,
    platform: 'mastodon' as const,
    handle: '@acme@social.example',
    avatar_url: null,
    followers: 3,
    status: 'live' as const,
    last_sync_at: null,
    last_error: null,
    created_at: '2030-01-01T00:00:00.000Z',
  },
];

const KEYS: ApiKeyView[] = [
  {
    id: KEY_ID,
    name: 'Agent <bot>',
    scopes: ['posts:write'],
    prefix: 'svc_live_abcd',
    created_by: OWNER.user.id,
    created_by_email: OWNER.user.email,
    created_at: '2030-01-02T00:00:00.000Z',
    revoked_at: null,
    last_used_at: null,
  },
];

const record = (overrides: Partial<PostRecord> = {}): PostRecord => ({
  id: POST_ID,
  org_id: ORG,
  status: 'needs_approval',
  type: 'single',
  title: null,
  body: null,
  scheduled_at: '2030-02-01T09:00:00.000Z',
  published_at: null,
  created_at: '2030-01-05T10:00:00.000Z',
  updated_at: '2030-01-05T10:00:00.000Z',
  variants: [
    { id: 'variant_1', channel_id: CH, body: 'Launch <script>x</script> day', media: [], options: {} },
  ],
  deliveries: {},
  round: 0,
  version: 4,
  approval: { mode: 'schedule' },
  counted_period: null,
  created_by: { key_id: KEY_ID, via: 'mcp' },
  ...overrides,
});

const details = (p = record(), settings = SETTINGS) => ({
  post: p,
  channels: CHANNELS,
  settings,
  keys: KEYS,
});

beforeEach(() => {
  vi.resetAllMocks();
  vi.mocked(sessions.resolveSession).mockImplementation(
    async (cookie) => [OWNER, ADMIN, MEMBER].find((p) => sessionOf(p)[0]?.endsWith(`=${cookie}`)) ?? null,
  );
  vi.mocked(settingsCases.getSettings).mockResolvedValue({ org: org(), settings: SETTINGS, version: 3 });
  vi.mocked(acts.getPostDetails).mockResolvedValue(details());
});

const get = (routeKey: string, who: SignedIn, opts: Parameters<typeof consoleEvent>[1] = {}) =>
  consoleEvent(routeKey, { cookies: sessionOf(who), ...opts });
const act = (who: SignedIn, name: string, fields: Record<string, string>) =>
  formPost('POST /console/posts/{id}/{act}', fields, {
    cookies: sessionOf(who),
    params: { id: POST_ID, act: name },
  });
const asPerson = (who: SignedIn) => ({ kind: 'person', userId: who.user.id });
const shown = { version: '4', status: 'needs_approval' };

function errorLinks(res: HttpResult): Record<string, string> {
  const summary = /<div class="error-summary"[\s\S]*?<\/div>/.exec(res.body ?? '')?.[0] ?? '';
  return Object.fromEntries(
    [...summary.matchAll(/<a href="#([^"]+)">([^<]*)<\/a>/g)].map((m) => [m[1], m[2]]),
  );
}

describe('posts list', () => {
  it('passes the filters and cursor on, and shows each post with its status and channels, escaped', async () => {
    vi.mocked(acts.listPostsOf).mockResolvedValue({ posts: [record()], next: 'c2', channels: CHANNELS });

    const res = await call(
      handler,
      get('GET /console/posts', MEMBER, { query: `status=needs_approval&channel=${CH}&cursor=c1` }),
    );

    expect(res.statusCode).toBe(200);
    expect(acts.listPostsOf).toHaveBeenCalledWith({
      orgId: ORG,
      actor: asPerson(MEMBER),
      status: 'needs_approval',
      channelId: CH,
      cursor: 'c1',
      cursorSecret: expect.any(String),
    });
    expect(res.body).toContain('Launch &lt;script&gt;x&lt;/script&gt; day');
    expect(res.body).not.toContain('<script>x');
    expect(res.body).toContain('<option value="needs_approval" selected>');
    expect(res.body).toContain(`<option value="${CH}" selected>Mastodon @acme@social.example</option>`);
    expect(res.body).toContain(`/console/posts?status=needs_approval&amp;channel=${CH}&amp;cursor=c2`);
    expect(mainText(res)).toContain('Needs approval');
  });

  it('ignores an unknown status rather than passing it on', async () => {
    vi.mocked(acts.listPostsOf).mockResolvedValue({ posts: [], next: null, channels: [] });
    await call(handler, get('GET /console/posts', MEMBER, { query: 'status=bogus' }));
    expect(acts.listPostsOf).toHaveBeenCalledWith(expect.objectContaining({ status: undefined }));
  });
});

describe('a post', () => {
  it('shows each channel’s outcome: the error category in people’s words and the message, the published link (http(s) only)', async () => {
    const p = record({
      status: 'failed',
      variants: [
        { id: 'v1', channel_id: CH, body: 'one', media: [], options: {} },
        { id: 'v2', channel_id: 'channel_gone', body: 'two', media: [], options: {} },
      ],
      deliveries: {
        [CH]: {
          channel_id: CH,
          stage: 'published',
          external_id: '1',
          url: 'https://social.example/@acme/1',
          error: null,
          error_category: null,
          attempts: 1,
          updated_at: '2030-01-05T10:01:00.000Z',
          round: 1,
        },
        channel_gone: {
          channel_id: 'channel_gone',
          stage: 'failed',
          external_id: null,
          url: null,
          error: 'Rate <limited>',
          error_category: 'rate_limited',
          attempts: 3,
          updated_at: '2030-01-05T10:02:00.000Z',
          round: 1,
        },
      },
    });
    vi.mocked(acts.getPostDetails).mockResolvedValue(details(p));

    const res = await call(handler, get('GET /console/posts/{id}', MEMBER, { params: { id: POST_ID } }));

    expect(res.body).toContain('<a href="https://social.example/@acme/1" rel="noopener noreferrer">');
    expect(mainText(res)).toContain('The platform asked to wait : Rate &lt;limited&gt;');
    expect(mainText(res)).not.toContain('rate_limited');
    expect(acts.getPostDetails).toHaveBeenCalledWith({
      orgId: ORG,
      actor: asPerson(MEMBER),
      postId: POST_ID,
      now: expect.any(Date),
    });
  });

  it('never links a URL that is not http(s)', async () => {
    const p = record({
      status: 'published',
      deliveries: {
        [CH]: {
          channel_id: CH,
          stage: 'published',
          external_id: '1',
          url: 'javascript:alert(1)',
          error: null,
          error_category: null,
          attempts: 1,
          updated_at: '2030-01-05T10:01:00.000Z',
          round: 1,
        },
      },
    });
    vi.mocked(acts.getPostDetails).mockResolvedValue(details(p));
    const res = await call(handler, get('GET /console/posts/{id}', MEMBER, { params: { id: POST_ID } }));
    expect(res.body).not.toContain('href="javascript:');
    expect(res.body).toContain('<code>javascript:alert(1)</code>');
  });

  it('says who created it (the key’s name, via MCP) and who decided, with the reason', async () => {
    const p = record({
      status: 'draft',
      decision: {
        outcome: 'rejected',
        by: ADMIN.user.id,
        email: ADMIN.user.email,
        at: '2030-01-06T08:00:00.000Z',
        reason: 'Off <brand>',
      },
    });
    vi.mocked(acts.getPostDetails).mockResolvedValue(details(p));
    const res = await call(handler, get('GET /console/posts/{id}', MEMBER, { params: { id: POST_ID } }));
    const text = mainText(res);
    expect(text).toContain(`Key “Agent &lt;bot&gt;” ${KEY_ID} via MCP`);
    expect(text).toContain('Rejected 2030-01-06 08:00 UTC by admin@example.com');
    expect(text).toContain('Reason: “Off &lt;brand&gt;”');
  });

  it('gives owners and admins the acts with the version shown, members none', async () => {
    const admin = await call(handler, get('GET /console/posts/{id}', ADMIN, { params: { id: POST_ID } }));
    const member = await call(handler, get('GET /console/posts/{id}', MEMBER, { params: { id: POST_ID } }));
    expect(admin.body).toContain(`action="/console/posts/${POST_ID}/approve"`);
    expect(admin.body).toContain('<input type="hidden" name="version" value="4">');
    expect(admin.body).toContain(`/console/posts/${POST_ID}?act=reject`);
    expect(member.body).not.toContain('<form method="post" action="/console/posts/');
    expect(mainText(member)).toContain('Owners and admins approve, reschedule, publish and delete posts.');
  });

  it('disables publish now and delete while Dangerous AI operations is off, saying why', async () => {
    vi.mocked(acts.getPostDetails).mockResolvedValue(details(record({ status: 'scheduled' })));
    const off = await call(handler, get('GET /console/posts/{id}', OWNER, { params: { id: POST_ID } }));
    expect(off.body).toMatch(
      /<button type="submit" class="button button--secondary" disabled aria-describedby="dangerous-off">Publish now/,
    );
    expect(mainText(off)).toContain('Publishing now and deleting need Dangerous AI operations, which is off');
    expect(off.body).toContain('name="scheduled_at" type="datetime-local" value="2030-02-01T09:00"');

    vi.mocked(acts.getPostDetails).mockResolvedValue(
      details(record({ status: 'scheduled' }), { ...SETTINGS, dangerous_ops: true }),
    );
    const on = await call(handler, get('GET /console/posts/{id}', OWNER, { params: { id: POST_ID } }));
    expect(on.body).not.toContain('disabled');
    expect(on.body).toContain(`href="/console/posts/${POST_ID}?act=delete"`);
  });

  it('shows the reject page to owners and admins, and refuses it to members', async () => {
    const page = await call(
      handler,
      get('GET /console/posts/{id}', ADMIN, { params: { id: POST_ID }, query: 'act=reject' }),
    );
    expect(page.body).toContain(`action="/console/posts/${POST_ID}/reject"`);
    expect(page.body).toContain('name="reason"');
    const member = await call(
      handler,
      get('GET /console/posts/{id}', MEMBER, { params: { id: POST_ID }, query: 'act=reject' }),
    );
    expect(member.statusCode).toBe(403);
  });

  it('answers the use case’s not_found with the 404 page', async () => {
    vi.mocked(acts.getPostDetails).mockRejectedValue(
      new ActError('This workspace has no such post.', 'not_found'),
    );
    const res = await call(handler, get('GET /console/posts/{id}', OWNER, { params: { id: 'post_other' } }));
    expect(res.statusCode).toBe(404);
  });
});

describe('acts', () => {
  it('approves the post as shown, then redirects to it with a message', async () => {
    const res = await call(handler, act(ADMIN, 'approve', shown));
    expect(approvals.approvePost).toHaveBeenCalledWith({
      orgId: ORG,
      actor: asPerson(ADMIN),
      postId: POST_ID,
      shown: { version: 4, status: 'needs_approval' },
      now: expect.any(Date),
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/console/posts/${POST_ID}?msg=post_approved`);
  });

  it('answers a changed post with the post as it is now, saying what changed (409)', async () => {
    vi.mocked(approvals.approvePost).mockRejectedValue(
      new ActError('This post was approved meanwhile. Nothing was done.', 'conflict'),
    );
    vi.mocked(acts.getPostDetails).mockResolvedValue(details(record({ status: 'scheduled', version: 5 })));

    const res = await call(handler, act(OWNER, 'approve', shown));

    expect(res.statusCode).toBe(409);
    expect(mainText(res)).toContain(
      'That could not be done This post was approved meanwhile. Nothing was done.',
    );
    expect(res.body).toContain('<input type="hidden" name="version" value="5">');
  });

  it('answers a conflict on a post that is gone with the 409 page', async () => {
    vi.mocked(acts.remove).mockRejectedValue(
      new ActError('This post was deleted meanwhile. Nothing was done.', 'conflict'),
    );
    vi.mocked(acts.getPostDetails).mockRejectedValue(
      new ActError('This workspace has no such post.', 'not_found'),
    );
    const res = await call(handler, act(OWNER, 'delete', shown));
    expect(res.statusCode).toBe(409);
    expect(mainText(res)).toContain('This post was deleted meanwhile.');
  });

  it("answers a member's act with the 403 page the use case refuses it with", async () => {
    vi.mocked(approvals.approvePost).mockRejectedValue(
      new ActError('approving posts needs the owner or admin role', 'forbidden'),
    );
    const res = await call(handler, act(MEMBER, 'approve', shown));
    expect(res.statusCode).toBe(403);
  });

  it('reschedules to the datetime-local value read as UTC', async () => {
    const res = await call(handler, act(OWNER, 'reschedule', { ...shown, scheduled_at: '2030-02-03T14:30' }));
    expect(acts.reschedule).toHaveBeenCalledWith(
      expect.objectContaining({
        scheduledAt: '2030-02-03T14:30:00.000Z',
        shown: { version: 4, status: 'needs_approval' },
      }),
    );
    expect(res.headers.location).toBe(`/console/posts/${POST_ID}?msg=post_rescheduled`);
  });

  it('shows a refused time again by its field (400), as typed; an unreadable one reaches the use case as null', async () => {
    vi.mocked(acts.getPostDetails).mockResolvedValue(details(record({ status: 'scheduled' })));
    vi.mocked(acts.reschedule).mockRejectedValue(new ActError('Choose a time in the future.', 'invalid'));

    const res = await call(handler, act(OWNER, 'reschedule', { ...shown, scheduled_at: '2020-01-01T00:00' }));
    await call(handler, act(OWNER, 'reschedule', { ...shown, scheduled_at: 'tomorrow' }));

    expect(res.statusCode).toBe(400);
    expect(errorLinks(res)).toEqual({ 'post-scheduled-at': 'Choose a time in the future.' });
    expect(res.body).toContain(
      'value="2020-01-01T00:00" aria-describedby="post-scheduled-at-hint post-scheduled-at-error" aria-invalid="true"',
    );
    expect(vi.mocked(acts.reschedule).mock.calls[1]?.[0]).toMatchObject({ scheduledAt: null });
  });

  it('rejects with the reason; a refused reason is shown again by its field', async () => {
    const ok = await call(handler, act(ADMIN, 'reject', { ...shown, reason: 'Off-brand' }));
    expect(approvals.rejectPost).toHaveBeenCalledWith(
      expect.objectContaining({ reason: 'Off-brand', postId: POST_ID }),
    );
    expect(ok.headers.location).toBe(`/console/posts/${POST_ID}?msg=post_rejected`);

    vi.mocked(approvals.rejectPost).mockRejectedValue(
      new ActError('Say why the post is rejected.', 'invalid'),
    );
    const refused = await call(handler, act(ADMIN, 'reject', { ...shown, reason: '' }));
    expect(refused.statusCode).toBe(400);
    expect(errorLinks(refused)).toEqual({ 'reject-reason': 'Say why the post is rejected.' });
  });

  it('publishes and deletes through the use cases; a refusal of the toggle is the 403 page', async () => {
    const published = await call(handler, act(OWNER, 'publish', shown));
    expect(published.headers.location).toBe(`/console/posts/${POST_ID}?msg=post_publishing`);
    const deleted = await call(handler, act(OWNER, 'delete', shown));
    expect(deleted.headers.location).toBe('/console/posts?msg=post_deleted');
    vi.mocked(acts.publishNow).mockRejectedValue(
      new ActError('Dangerous AI operations is off.', 'forbidden'),
    );
    expect((await call(handler, act(OWNER, 'publish', shown))).statusCode).toBe(403);
  });

  it('refuses an unknown act (404) and a form without the version shown (400), calling nothing', async () => {
    expect((await call(handler, act(OWNER, 'explode', shown))).statusCode).toBe(404);
    expect((await call(handler, act(OWNER, 'approve', {}))).statusCode).toBe(400);
    expect(approvals.approvePost).not.toHaveBeenCalled();
  });
});

describe('approvals', () => {
  it('lists the waiting posts: who created them (key, via MCP), what publishes where and when', async () => {
    vi.mocked(acts.listApprovals).mockResolvedValue({
      posts: [record()],
      next: null,
      channels: CHANNELS,
      keys: KEYS,
    });

    const admin = await call(handler, get('GET /console/approvals', ADMIN));
    const member = await call(handler, get('GET /console/approvals', MEMBER));

    const text = mainText(admin);
    expect(text).toContain(`Key “Agent &lt;bot&gt;” ${KEY_ID} via MCP`);
    expect(text).toContain('Mastodon @acme@social.example : Launch &lt;script&gt;x&lt;/script&gt; day');
    expect(text).toContain('At 2030-02-01 09:00 UTC');
    expect(admin.body).toContain('hx-get="/console/approvals"');
    expect(admin.body).toContain(`action="/console/posts/${POST_ID}/approve"`);
    expect(member.body).not.toContain(`action="/console/posts/${POST_ID}/approve"`);
    expect(mainText(member)).toContain('Owners and admins approve and reject posts.');
  });
});

describe('threads, first comments and editing', () => {
  it("shows a variant's thread items and first comment with each part's outcome, escaped", async () => {
    const p = record({
      status: 'failed',
      type: 'thread',
      variants: [
        {
          id: 'v1',
          channel_id: CH,
          body: 'root',
          media: [],
          options: {},
          thread: [
            { body: 'second <b>', media: [] },
            { body: 'third', media: [] },
          ],
          first_comment: { body: 'link below' },
        },
      ],
      deliveries: {
        [CH]: {
          channel_id: CH,
          stage: 'failed',
          external_id: '1',
          url: 'https://social.example/@acme/1',
          error: 'Thread item 2 failed',
          error_category: 'platform_rejected',
          attempts: 1,
          updated_at: '2030-01-05T10:01:00.000Z',
          round: 1,
          thread: [
            { stage: 'published', external_id: '2', url: 'https://social.example/@acme/2', error: null },
            { stage: 'failed', external_id: null, url: null, error: 'Too <many> replies' },
          ],
          first_comment: { stage: 'queued', external_id: null, url: null, error: null },
        },
      },
    });
    vi.mocked(acts.getPostDetails).mockResolvedValue(details(p));

    const res = await call(handler, get('GET /console/posts/{id}', MEMBER, { params: { id: POST_ID } }));

    expect(res.statusCode).toBe(200);
    const text = mainText(res);
    expect(text).toContain('Thread: 2 replies under it');
    expect(res.body).toContain('second &lt;b&gt;');
    expect(res.body).toContain('href="https://social.example/@acme/2"');
    expect(res.body).toContain('Too &lt;many&gt; replies');
    expect(text).toContain('First comment');
    expect(text).toContain('link below');
    expect(text).toContain('Queued');
  });

  it('offers the edit form to owners and admins, not members', async () => {
    const page = await call(handler, get('GET /console/posts/{id}', ADMIN, { params: { id: POST_ID } }));
    expect(page.body).toContain(`/console/posts/${POST_ID}?act=edit`);
    const form = await call(
      handler,
      get('GET /console/posts/{id}', ADMIN, { params: { id: POST_ID }, query: 'act=edit' }),
    );
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain(`name="variant:${CH}"`);
    expect(form.body).toContain('name="version" value="4"');
    const member = await call(
      handler,
      get('GET /console/posts/{id}', MEMBER, { params: { id: POST_ID }, query: 'act=edit' }),
    );
    expect(member.statusCode).toBe(403);
  });

  it('passes the texts and the version shown to editTexts, and answers a field error at its field (400)', async () => {
    const saved = await call(
      handler,
      act(ADMIN, 'edit', { ...shown, title: ' Launch ', body: '', [`variant:${CH}`]: 'fixed' }),
    );
    expect(saved.statusCode).toBe(303);
    expect(saved.headers.location).toContain('msg=post_edited');
    expect(acts.editTexts).toHaveBeenCalledWith(
      expect.objectContaining({
        orgId: ORG,
        postId: POST_ID,
        shown: { version: 4, status: 'needs_approval' },
        texts: { title: 'Launch', body: null, variants: new Map([[CH, 'fixed']]) },
      }),
    );

    vi.mocked(acts.editTexts).mockRejectedValue(
      new acts.EditRefused([
        { pointer: '/variants/0/body', code: 'text_too_long', message: 'mastodon allows 500' },
      ]),
    );
    const refused = await call(handler, act(ADMIN, 'edit', { ...shown, [`variant:${CH}`]: 'x'.repeat(600) }));
    expect(refused.statusCode).toBe(400);
    expect(errorLinks(refused)).toEqual({ 'edit-variant-0': 'mastodon allows 500' });
    expect(refused.body).toContain('x'.repeat(600));
  });

  it('answers a stale page with the post again and what changed (409)', async () => {
    vi.mocked(acts.editTexts).mockRejectedValue(
      new ActError('This post was changed meanwhile. Nothing was done.', 'conflict'),
    );
    const res = await call(handler, act(ADMIN, 'edit', { ...shown, [`variant:${CH}`]: 'late' }));
    expect(res.statusCode).toBe(409);
    expect(mainText(res)).toContain('This post was changed meanwhile. Nothing was done.');
  });
});
