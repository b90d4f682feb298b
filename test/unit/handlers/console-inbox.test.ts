import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { InboxItem } from '#core/inbox';
import { ActError, type SignedIn } from '#core/people';
import { handler } from '#handlers/console-inbox';
import { handler as suggestHandler } from '#handlers/console-suggest';
import * as cases from '#usecases/console-inbox';
import * as suggestCases from '#usecases/console-suggest';
import * as badge from '#usecases/inbox-badge';
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

// The Inbox pages over mocked use cases: what the handler passes them (the session's org, the
// person, the filters, the form's token), what it renders (escaped; the navigation's count and its
// cap; no reply box for members; a platform's link only when http(s)), and how refusals reach the
// person (a field error by the reply box, 403 and 404 pages).

vi.mock('#usecases/console-sessions', () => ({ resolveSession: vi.fn(), signOut: vi.fn() }));
vi.mock('#usecases/settings', () => ({ getSettings: vi.fn(), updateSettings: vi.fn() }));
vi.mock('#usecases/inbox-badge', () => ({ unreadBadge: vi.fn() }));
vi.mock('#usecases/console-inbox', () => ({
  listInboxForPerson: vi.fn(),
  getInboxItemForPerson: vi.fn(),
  markForPerson: vi.fn(),
  replyForPerson: vi.fn(),
}));
vi.mock('#usecases/console-suggest', () => ({ suggestReplyForPerson: vi.fn() }));

const sessions = await import('#usecases/console-sessions');

const OWNER = person('owner', 1, 'owner@example.com');
const MEMBER = person('member', 3, 'member@example.com');
const ITEM_ID = 'inb_01JD0000000000000000000001';
const CH = 'channel_01JD000000000000000000001';
const REPLY_TOKEN = 'rpl_01JD0000000000000000000009';
const SETTINGS = { dangerous_ops: false, approval_required: false, landing_origins: [] };

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
] as unknown as cases.InboxList['channels'];

const item = (overrides: Partial<InboxItem> = {}): InboxItem => ({
  id: ITEM_ID,
  channel_id: CH,
  platform: 'mastodon',
  kind: 'comment',
  status: 'unread',
  text: 'Nice <script>alert(1)</script> post',
  url: 'https://social.example/@ana/1',
  author: { handle: '@ana', name: 'Ana', avatar_url: 'https://social.example/a.png', platform_id: '7' },
  post_id: null,
  in_reply_to: '100',
  conversation_id: '100',
  platform_id: '1',
  created_at: '2030-01-05T10:00:00.000Z',
  received_at: '2030-01-05T10:01:00.000Z',
  replies: [],
  ...overrides,
});

const details = (i = item()): cases.InboxDetails => ({
  item: i,
  channels: CHANNELS,
  post: null,
  conversation: [],
  replyable: true,
  replyLimit: 500,
  replyToken: REPLY_TOKEN,
  suggests: false,
});

beforeEach(() => {
  vi.resetAllMocks();
  vi.mocked(sessions.resolveSession).mockImplementation(
    async (cookie) => [OWNER, MEMBER].find((p) => sessionOf(p)[0]?.endsWith(`=${cookie}`)) ?? null,
  );
  vi.mocked(settingsCases.getSettings).mockResolvedValue({ org: org(), settings: SETTINGS, version: 1 });
  vi.mocked(badge.unreadBadge).mockResolvedValue(3);
  vi.mocked(cases.listInboxForPerson).mockResolvedValue({
    items: [item()],
    next: null,
    channels: CHANNELS,
    included: true,
    plan: 'team',
  });
  vi.mocked(cases.getInboxItemForPerson).mockResolvedValue(details());
});

const get = (routeKey: string, who: SignedIn, opts: Parameters<typeof consoleEvent>[1] = {}) =>
  consoleEvent(routeKey, { cookies: sessionOf(who), ...opts });
const act = (who: SignedIn, name: string, fields: Record<string, string> = {}) =>
  formPost('POST /console/inbox/{id}/{act}', fields, {
    cookies: sessionOf(who),
    params: { id: ITEM_ID, act: name },
  });
const suggest = (who: SignedIn) =>
  formPost(
    'POST /console/inbox/{id}/suggest/reply',
    {},
    { cookies: sessionOf(who), params: { id: ITEM_ID } },
  );
const asPerson = (who: SignedIn) => ({ kind: 'person', userId: who.user.id });

describe('the inbox list', () => {
  it('passes the session’s org and the known filters, and renders the items escaped with the count', async () => {
    const res = await call(
      handler,
      get('GET /console/inbox', OWNER, { query: `channel=${CH}&kind=comment&status=bogus` }),
    );
    expect(res.statusCode).toBe(200);
    expect(cases.listInboxForPerson).toHaveBeenCalledWith(
      expect.objectContaining({
        orgId: ORG,
        actor: asPerson(OWNER),
        channelId: CH,
        kind: 'comment',
        status: undefined,
      }),
    );
    expect(res.body).toContain('Nice &lt;script&gt;alert(1)&lt;/script&gt; post');
    expect(res.body).not.toContain('<script>alert');
    expect(res.body).toContain(
      'Inbox <span class="count">3<span class="visually-hidden"> unread</span></span>',
    );
    // The platform's avatar is another origin: never requested.
    expect(res.body).not.toContain('https://social.example/a.png');
    expect(res.body).toContain('hx-get="/console/inbox?channel=');
  });

  it('stops the count at 99+ and shows none where the plan has no inbox', async () => {
    vi.mocked(badge.unreadBadge).mockResolvedValue(100);
    const capped = await call(handler, get('GET /console/inbox', OWNER));
    expect(capped.body).toContain('<span class="count">99+<span');
    vi.mocked(badge.unreadBadge).mockResolvedValue(null);
    vi.mocked(cases.listInboxForPerson).mockResolvedValue({
      items: [],
      next: null,
      channels: CHANNELS,
      included: false,
      plan: 'free',
    });
    const free = await call(handler, get('GET /console/inbox', OWNER));
    expect(free.statusCode).toBe(200);
    expect(free.body).not.toContain('class="count"');
    expect(mainText(free)).toContain('The free plan does not include the inbox');
    expect(free.body).not.toContain('name="kind"');
  });
});

describe('an item', () => {
  it('shows an owner the reply box with the form’s token, a member none', async () => {
    const owner = await call(handler, get('GET /console/inbox/{id}', OWNER, { params: { id: ITEM_ID } }));
    expect(owner.statusCode).toBe(200);
    expect(owner.body).toContain(`name="token" value="${REPLY_TOKEN}"`);
    expect(owner.body).toContain('href="https://social.example/@ana/1" rel="noopener noreferrer"');
    const member = await call(handler, get('GET /console/inbox/{id}', MEMBER, { params: { id: ITEM_ID } }));
    expect(member.body).not.toContain('<textarea');
    expect(mainText(member)).toContain('Owners and admins reply.');
  });

  it('shows a link that is not http(s) as text', async () => {
    vi.mocked(cases.getInboxItemForPerson).mockResolvedValue(details(item({ url: 'javascript:alert(1)' })));
    const res = await call(handler, get('GET /console/inbox/{id}', OWNER, { params: { id: ITEM_ID } }));
    expect(res.body).not.toContain('href="javascript:');
  });

  it('answers 404 for an item the workspace does not have', async () => {
    vi.mocked(cases.getInboxItemForPerson).mockRejectedValue(
      new ActError('This workspace has no such inbox item.', 'not_found'),
    );
    const res = await call(handler, get('GET /console/inbox/{id}', OWNER, { params: { id: ITEM_ID } }));
    expect(res.statusCode).toBe(404);
  });
});

describe('the acts', () => {
  it('marks through the use case and redirects to the item with what was done', async () => {
    const res = await call(handler, act(MEMBER, 'archive'));
    expect(res.statusCode).toBe(303);
    expect(res.headers?.location).toBe(`/console/inbox/${ITEM_ID}?msg=inbox_archived`);
    expect(cases.markForPerson).toHaveBeenCalledWith(
      expect.objectContaining({ orgId: ORG, actor: asPerson(MEMBER), id: ITEM_ID, status: 'archived' }),
    );
  });

  it('queues a reply with the form’s token', async () => {
    const res = await call(handler, act(OWNER, 'reply', { body: 'Thanks!', token: REPLY_TOKEN }));
    expect(res.statusCode).toBe(303);
    expect(res.headers?.location).toBe(`/console/inbox/${ITEM_ID}?msg=inbox_reply_queued#replies`);
    expect(cases.replyForPerson).toHaveBeenCalledWith(
      expect.objectContaining({ orgId: ORG, id: ITEM_ID, body: 'Thanks!', token: REPLY_TOKEN }),
    );
  });

  it('shows a refused text by the reply box, as typed (400)', async () => {
    vi.mocked(cases.replyForPerson).mockRejectedValue(new ActError('A reply needs text.', 'invalid'));
    const res = await call(handler, act(OWNER, 'reply', { body: '  <b>', token: REPLY_TOKEN }));
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('<a href="#reply-body">A reply needs text.</a>');
    expect(res.body).toContain('aria-invalid="true"');
    expect(res.body).toContain('&lt;b&gt;</textarea>');
  });

  it('answers a member’s reply with the 403 page', async () => {
    vi.mocked(cases.replyForPerson).mockRejectedValue(
      new ActError(
        'replying to inbox items needs the owner or admin role; member@example.com is a member',
        'forbidden',
      ),
    );
    const res = await call(handler, act(MEMBER, 'reply', { body: 'Hi', token: REPLY_TOKEN }));
    expect(res.statusCode).toBe(403);
  });

  it('answers an unknown act with 404, calling nothing', async () => {
    const res = await call(handler, act(OWNER, 'delete'));
    expect(res.statusCode).toBe(404);
    expect(cases.markForPerson).not.toHaveBeenCalled();
    expect(cases.replyForPerson).not.toHaveBeenCalled();
    expect(suggestCases.suggestReplyForPerson).not.toHaveBeenCalled();
  });
});

describe('suggesting a reply', () => {
  const SUGGEST = `action="/console/inbox/${ITEM_ID}/suggest/reply"`;

  it('offers the button only on a plan with AI', async () => {
    const without = await call(handler, get('GET /console/inbox/{id}', OWNER, { params: { id: ITEM_ID } }));
    expect(without.body).not.toContain(SUGGEST);
    vi.mocked(cases.getInboxItemForPerson).mockResolvedValue({ ...details(), suggests: true });
    const withAi = await call(handler, get('GET /console/inbox/{id}', OWNER, { params: { id: ITEM_ID } }));
    expect(withAi.body).toContain(SUGGEST);
  });

  it('fills the reply box with the suggestion, escaped, and sends nothing', async () => {
    vi.mocked(cases.getInboxItemForPerson).mockResolvedValue({ ...details(), suggests: true });
    vi.mocked(suggestCases.suggestReplyForPerson).mockResolvedValue({
      bodies: ['Thanks <b>@ana</b>!'],
      model: 'rules',
    });
    const res = await call(suggestHandler, suggest(OWNER));
    expect(res.statusCode).toBe(200);
    expect(suggestCases.suggestReplyForPerson).toHaveBeenCalledWith(
      expect.objectContaining({ orgId: ORG, actor: asPerson(OWNER), id: ITEM_ID }),
    );
    expect(res.body).toContain('>Thanks &lt;b&gt;@ana&lt;/b&gt;!</textarea>');
    expect(mainText(res)).toContain('not by a language model');
    expect(cases.replyForPerson).not.toHaveBeenCalled();
  });

  it('shows a refusal (no credits left) on the item’s page with its status', async () => {
    vi.mocked(cases.getInboxItemForPerson).mockResolvedValue({ ...details(), suggests: true });
    vi.mocked(suggestCases.suggestReplyForPerson).mockRejectedValue(
      new ActError('This task may need 1 ai_credits and the organization has fewer left.', 'rate_limited'),
    );
    const res = await call(suggestHandler, suggest(OWNER));
    expect(res.statusCode).toBe(429);
    expect(res.body).toContain('role="alert"');
    expect(mainText(res)).toContain('fewer left');
  });
});
