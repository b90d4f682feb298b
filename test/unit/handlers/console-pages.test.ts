import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { Org } from '#core/accounts';
import { ActError, type AuditEntry, type SignedIn } from '#core/people';
import { handler as assets } from '#handlers/console-assets';
import { handler as audit } from '#handlers/console-audit';
import { handler as enroll } from '#handlers/console-enroll';
import { handler as home } from '#handlers/console-home';
import { handler as keys } from '#handlers/console-keys';
import { handler as membersPage } from '#handlers/console-members';
import { handler as passkeys } from '#handlers/console-passkeys';
import { handler as settings } from '#handlers/console-settings';
import { handler as signIn } from '#handlers/console-sign-in';
import { handler as signOut } from '#handlers/console-sign-out';
import { CONSOLE_ASSET_FILES, consolePages, SCOPES } from '#lib/operations';
import type { HttpResult } from '#shared/envelope';
import type { ApiKeyView } from '#usecases/api-keys';
import * as apiKeys from '#usecases/api-keys';
import * as auditLog from '#usecases/audit-log';
import * as sessions from '#usecases/console-sessions';
import * as people from '#usecases/members';
import * as overviewCases from '#usecases/overview';
import * as passkeyCases from '#usecases/passkeys';
import * as settingsCases from '#usecases/settings';
import {
  CONSOLE_ORIGIN,
  call,
  consoleEvent,
  formPost,
  jsonPost,
  mainText,
  ORG,
  person,
  SESSION_COOKIE,
  sessionOf,
} from '../support/console.ts';

// Each console page's handler over mocked use cases: what it passes them (the session's org, the
// person as actor, the form's fields), what it renders (escaped), and how a use case's refusal
// reaches the person (the status page it maps to; a form shown again with its error summary).

vi.mock('#usecases/console-sessions', () => ({ resolveSession: vi.fn(), signOut: vi.fn() }));
vi.mock('#usecases/api-keys', () => ({
  listKeys: vi.fn(),
  mintKey: vi.fn(),
  revokeKey: vi.fn(),
  activeKeysOf: vi.fn(async () => []),
}));
vi.mock('#usecases/members', () => ({
  listMembers: vi.fn(),
  inviteMember: vi.fn(),
  changeMemberRole: vi.fn(),
  removeMember: vi.fn(),
  issueEnrollment: vi.fn(),
}));
vi.mock('#usecases/settings', () => ({ getSettings: vi.fn(), updateSettings: vi.fn() }));
vi.mock('#usecases/audit-log', () => ({ listAuditLog: vi.fn() }));
vi.mock('#usecases/overview', () => ({ getOverview: vi.fn() }));
vi.mock('#usecases/passkeys', () => ({
  beginEnrollment: vi.fn(),
  finishEnrollment: vi.fn(),
  beginSignIn: vi.fn(),
  finishSignIn: vi.fn(),
  beginAddPasskey: vi.fn(),
  finishAddPasskey: vi.fn(),
  listPasskeys: vi.fn(),
  removePasskey: vi.fn(),
  signOutEverywhere: vi.fn(),
}));

const OWNER = person('owner', 1, 'owner@example.com');
const ADMIN = person('admin', 2, 'admin@example.com');
const MEMBER = person('member', 3, 'member@example.com');
const ORG_NAME = 'Acme <Widgets> & "Co"';
const SETTINGS = {
  dangerous_ops: false,
  approval_required: true,
  landing_origins: ['https://app.example.com'],
};

const org = (): Org => ({
  id: ORG,
  name: ORG_NAME,
  plan: 'team',
  settings: SETTINGS,
  created_at: '2030-01-01T00:00:00.000Z',
  updated_at: '2030-01-01T00:00:00.000Z',
});

const key = (overrides: Partial<ApiKeyView> = {}): ApiKeyView => ({
  id: 'key_01JD0000000000000000000001',
  name: 'Newsletter',
  scopes: ['posts:read'],
  prefix: 'svc_live_abcd',
  created_by: OWNER.user.id,
  created_by_email: OWNER.user.email,
  created_at: '2030-01-02T03:04:05.000Z',
  revoked_at: null,
  last_used_at: '2030-01-03T10:11:00.000Z',
  ...overrides,
});

const PERIOD = { period_starts_at: '2030-01-01T00:00:00.000Z', period_ends_at: '2030-02-01T00:00:00.000Z' };
const overview = (needs: Partial<overviewCases.Overview['needs']> = {}): overviewCases.Overview => ({
  usage: {
    plan: 'team',
    meters: [
      { key: 'api_requests', used: 1200, limit: 50_000, remaining: 48_800, ...PERIOD },
      { key: 'posts_per_month', used: 500, limit: 500, remaining: 0, ...PERIOD },
      { key: 'channels', used: 3, limit: 10, remaining: 7, ...PERIOD },
    ],
  },
  stats: {
    deliveries: { total: 6, published: 5, failed: 1, success_rate: 5 / 6 },
    timeline: Array.from({ length: 14 }, (_, i) => ({
      date: `2030-01-${String(i + 1).padStart(2, '0')}`,
      published: i === 13 ? 5 : 0,
      failed: i === 12 ? 1 : 0,
    })),
    engagement: { impressions: 0, likes: 0, comments: 0, shares: 0, clicks: 0 },
    synced_platforms: [],
  },
  needs: { channels: [], approvals: { posts: [], total: 0 }, failed: [], endpoints: [], ...needs },
  start: { channel: true, key: true, people: true },
});

const asPerson = (who: SignedIn) => ({ kind: 'person', userId: who.user.id });

beforeEach(() => {
  vi.resetAllMocks();
  vi.mocked(sessions.resolveSession).mockImplementation(
    async (cookie) => [OWNER, ADMIN, MEMBER].find((p) => sessionOf(p)[0]?.endsWith(`=${cookie}`)) ?? null,
  );
  vi.mocked(settingsCases.getSettings).mockResolvedValue({ org: org(), settings: SETTINGS, version: 3 });
  vi.mocked(overviewCases.getOverview).mockResolvedValue(overview());
});

const get = (routeKey: string, who: SignedIn | null, opts: Parameters<typeof consoleEvent>[1] = {}) =>
  consoleEvent(routeKey, { ...(who ? { cookies: sessionOf(who) } : {}), ...opts });
const post = (
  routeKey: string,
  who: SignedIn | null,
  fields: Record<string, string | string[]> = {},
  params?: Record<string, string>,
) =>
  formPost(routeKey, fields, { ...(who ? { cookies: sessionOf(who) } : {}), ...(params ? { params } : {}) });

/** Markup a page must never carry: inline script or style, event handler attributes. */
function expectNoInlineCode(res: HttpResult): void {
  const body = res.body ?? '';
  expect(body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  expect(body).not.toMatch(/<style/);
  expect(body).not.toMatch(/\sstyle=/);
  expect(body).not.toMatch(/\son[a-z]+=/);
}

/** The error summary's links: field id → message (GOV.UK: each links to its field). */
function errorLinks(res: HttpResult): Record<string, string> {
  const summary = /<div class="error-summary"[\s\S]*?<\/div>/.exec(res.body ?? '')?.[0] ?? '';
  return Object.fromEntries(
    [...summary.matchAll(/<a href="#([^"]+)">([^<]*)<\/a>/g)].map((m) => [m[1], m[2]]),
  );
}

describe('API keys', () => {
  it('lists the keys with their last use, escaping what people named them', async () => {
    vi.mocked(apiKeys.listKeys).mockResolvedValue([key({ name: '<script>alert(1)</script>' })]);

    const res = await call(keys, get('GET /console/keys', OWNER));

    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(res.body).not.toContain('<script>alert(1)');
    expect(res.body).toContain('Acme &lt;Widgets&gt; &amp; &quot;Co&quot;');
    expect(mainText(res)).toContain('2030-01-03 10:11 UTC');
    expect(apiKeys.listKeys).toHaveBeenCalledWith({
      orgId: ORG,
      actor: asPerson(OWNER),
      now: expect.any(Date),
    });
    expectNoInlineCode(res);
  });

  it('offers owners and admins the mint form with a check box per scope, and members none', async () => {
    vi.mocked(apiKeys.listKeys).mockResolvedValue([key()]);

    const admin = await call(keys, get('GET /console/keys', ADMIN));
    const member = await call(keys, get('GET /console/keys', MEMBER));

    for (const s of SCOPES) expect(admin.body).toContain(`name="scopes" type="checkbox" value="${s}"`);
    expect(admin.body).toContain('/console/keys?revoke=key_01JD0000000000000000000001');
    expect(member.body).not.toContain('name="scopes"');
    expect(member.body).not.toContain('?revoke=');
    expect(mainText(member)).toContain('Owners and admins mint and revoke keys.');
  });

  it("answers a member's mint with the 403 page the use case's refusal maps to, nothing shown", async () => {
    vi.mocked(apiKeys.mintKey).mockRejectedValue(
      new ActError('Only owners and admins mint API keys.', 'forbidden'),
    );

    const res = await call(keys, post('POST /console/keys', MEMBER, { name: 'x', scopes: ['posts:read'] }));

    expect(res.statusCode).toBe(403);
    expect(mainText(res)).toContain('Only owners and admins mint API keys.');
    expect(apiKeys.mintKey).toHaveBeenCalledWith(expect.objectContaining({ actor: asPerson(MEMBER) }));
  });

  it('shows a minted key once, on the page the POST answers (no redirect), not cached', async () => {
    vi.mocked(apiKeys.mintKey).mockResolvedValue({
      id: 'key_new',
      key: 'svc_live_SECRETVALUE',
      scopes: ['posts:read', 'posts:write'],
      name: 'Blog',
      created_at: '2030-01-01T00:00:00.000Z',
    });

    const res = await call(
      keys,
      post('POST /console/keys', ADMIN, { name: ' Blog ', scopes: ['posts:read', 'posts:write'] }),
    );

    expect(res.statusCode).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toContain('value="svc_live_SECRETVALUE"');
    expect(res.body).toContain('data-copy="minted-key"');
    expect(apiKeys.mintKey).toHaveBeenCalledWith({
      orgId: ORG,
      actor: asPerson(ADMIN),
      scopes: ['posts:read', 'posts:write'],
      name: 'Blog',
      now: expect.any(Date),
    });
  });

  it('shows a refused mint form again with its error summary linking to the scopes, as filled in', async () => {
    vi.mocked(apiKeys.mintKey).mockRejectedValue(new ActError('Choose at least one scope.', 'invalid'));
    vi.mocked(apiKeys.listKeys).mockResolvedValue([]);

    const res = await call(keys, post('POST /console/keys', OWNER, { name: '"><b>x' }));

    expect(res.statusCode).toBe(400);
    expect(errorLinks(res)).toEqual({ 'key-scope-posts-read': 'Choose at least one scope.' });
    expect(res.body).toContain('value="&quot;&gt;&lt;b&gt;x"');
    expect(res.body).toContain('<title>Error: API keys');
    expect(apiKeys.mintKey).toHaveBeenCalledWith(expect.objectContaining({ scopes: [] }));
  });

  it('asks for confirmation before a revocation, then revokes and redirects with a message', async () => {
    vi.mocked(apiKeys.listKeys).mockResolvedValue([key()]);

    const confirm = await call(
      keys,
      get('GET /console/keys', OWNER, { query: 'revoke=key_01JD0000000000000000000001' }),
    );
    const res = await call(
      keys,
      post('POST /console/keys/{id}/revoke', OWNER, {}, { id: 'key_01JD0000000000000000000001' }),
    );

    expect(confirm.body).toContain('action="/console/keys/key_01JD0000000000000000000001/revoke"');
    expect(mainText(confirm)).toContain('Revoke the key “Newsletter”?');
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/console/keys?msg=key_revoked');
    expect(apiKeys.revokeKey).toHaveBeenCalledWith({
      orgId: ORG,
      actor: asPerson(OWNER),
      keyId: 'key_01JD0000000000000000000001',
      now: expect.any(Date),
    });
  });

  it('says what a revocation did on the page it redirects to, and nothing for an unknown code', async () => {
    vi.mocked(apiKeys.listKeys).mockResolvedValue([]);

    const done = await call(keys, get('GET /console/keys', OWNER, { query: 'msg=key_revoked' }));
    const made = await call(keys, get('GET /console/keys', OWNER, { query: 'msg=%3Cb%3Eyou+were+hacked' }));

    expect(mainText(done)).toContain('The key is revoked');
    expect(made.body).not.toContain('hacked');
  });

  it('answers a second revocation with the 409 page, and an unknown key with the 404 page', async () => {
    vi.mocked(apiKeys.revokeKey).mockRejectedValueOnce(
      new ActError('This key is already revoked.', 'conflict'),
    );
    vi.mocked(apiKeys.listKeys).mockResolvedValue([key({ revoked_at: '2030-01-01T00:00:00.000Z' })]);

    const twice = await call(keys, post('POST /console/keys/{id}/revoke', OWNER, {}, { id: 'key_x' }));
    const confirmRevoked = await call(
      keys,
      get('GET /console/keys', OWNER, { query: 'revoke=key_01JD0000000000000000000001' }),
    );

    expect(twice.statusCode).toBe(409);
    expect(mainText(twice)).toContain('This key is already revoked: nothing changed.');
    expect(confirmRevoked.statusCode).toBe(404);
  });
});

describe('members', () => {
  const members = () => [
    { ...OWNER.user, passkeys: 2 },
    { ...MEMBER.user, email: '<img src=x>@example.com', passkeys: 0 },
  ];

  it('lists the people, escaping their addresses; owners get role and remove controls, others none', async () => {
    vi.mocked(people.listMembers).mockResolvedValue(members());

    const owner = await call(membersPage, get('GET /console/members', OWNER));
    const admin = await call(membersPage, get('GET /console/members', ADMIN));

    expect(owner.body).toContain('&lt;img src=x&gt;@example.com');
    expect(owner.body).not.toContain('<img src=x>');
    expect(owner.body).toContain(`action="/console/members/${MEMBER.user.id}/role"`);
    expect(owner.body).toContain('name="email" type="email"');
    expect(admin.body).not.toContain('/role"');
    expect(admin.body).not.toContain('name="email"');
    expect(people.listMembers).toHaveBeenCalledWith({ orgId: ORG, actor: asPerson(ADMIN) });
    expectNoInlineCode(owner);
  });

  it('invites with the console origin and shows the enrollment link once, with a copy button', async () => {
    vi.mocked(people.inviteMember).mockResolvedValue({
      user: { ...ADMIN.user, id: 'usr_new', email: 'new@example.com' },
      enrollment: { url: `${CONSOLE_ORIGIN}/console/enroll#TOKEN`, expires_at: '2030-01-01T00:30:00.000Z' },
      emailed: true,
    });

    const res = await call(
      membersPage,
      post('POST /console/members', OWNER, { email: ' new@example.com ', role: 'admin' }),
    );

    expect(res.statusCode).toBe(201);
    expect(res.body).toContain(`value="${CONSOLE_ORIGIN}/console/enroll#TOKEN"`);
    expect(mainText(res)).toContain('We e-mailed them this link.');
    expect(people.inviteMember).toHaveBeenCalledWith({
      orgId: ORG,
      actor: asPerson(OWNER),
      email: 'new@example.com',
      role: 'admin',
      consoleUrl: CONSOLE_ORIGIN,
      now: expect.any(Date),
    });
  });

  it('shows a refused invitation again with the error by the email field', async () => {
    vi.mocked(people.inviteMember).mockRejectedValue(
      new ActError('usr@ is not an email address.', 'invalid'),
    );
    vi.mocked(people.listMembers).mockResolvedValue(members());

    const res = await call(
      membersPage,
      post('POST /console/members', OWNER, { email: 'usr@', role: 'member' }),
    );

    expect(res.statusCode).toBe(400);
    expect(errorLinks(res)).toEqual({ 'invite-email': 'usr@ is not an email address.' });
    expect(res.body).toContain('aria-invalid="true"');
  });

  it("answers an admin's invitation with the 403 page", async () => {
    vi.mocked(people.inviteMember).mockRejectedValue(new ActError('Only owners invite people.', 'forbidden'));

    const res = await call(
      membersPage,
      post('POST /console/members', ADMIN, { email: 'a@b.c', role: 'owner' }),
    );

    expect(res.statusCode).toBe(403);
  });

  it('changes a role and removes a member, each redirecting with its message', async () => {
    const changed = await call(
      membersPage,
      post('POST /console/members/{id}/role', OWNER, { role: 'admin' }, { id: MEMBER.user.id }),
    );
    const removed = await call(
      membersPage,
      post('POST /console/members/{id}/remove', OWNER, {}, { id: MEMBER.user.id }),
    );

    expect(changed.headers.location).toBe('/console/members?msg=role_changed');
    expect(removed.headers.location).toBe('/console/members?msg=member_removed');
    expect(people.changeMemberRole).toHaveBeenCalledWith({
      orgId: ORG,
      actor: asPerson(OWNER),
      userId: MEMBER.user.id,
      role: 'admin',
      now: expect.any(Date),
    });
    expect(people.removeMember).toHaveBeenCalledWith({
      orgId: ORG,
      actor: asPerson(OWNER),
      userId: MEMBER.user.id,
      revokeKeys: false,
      now: expect.any(Date),
    });
  });

  it('answers removing the last owner with the 409 page the use case refuses it with', async () => {
    vi.mocked(people.removeMember).mockRejectedValue(
      new ActError('The last owner cannot be removed.', 'conflict'),
    );

    const res = await call(
      membersPage,
      post('POST /console/members/{id}/remove', OWNER, {}, { id: OWNER.user.id }),
    );

    expect(res.statusCode).toBe(409);
    expect(mainText(res)).toContain('The last owner cannot be removed.');
  });

  it('confirms a removal first, and a member of another workspace is a 404', async () => {
    vi.mocked(people.listMembers).mockResolvedValue(members());

    const confirm = await call(
      membersPage,
      get('GET /console/members', OWNER, { query: `remove=${MEMBER.user.id}` }),
    );
    const other = await call(
      membersPage,
      get('GET /console/members', OWNER, { query: 'remove=usr_elsewhere' }),
    );

    expect(confirm.body).toContain(`action="/console/members/${MEMBER.user.id}/remove"`);
    expect(other.statusCode).toBe(404);
  });

  it('names the person’s active keys on the removal page, offers to revoke them, and passes the choice', async () => {
    vi.mocked(people.listMembers).mockResolvedValue(members());
    vi.mocked(apiKeys.activeKeysOf).mockResolvedValueOnce([
      { id: 'key_1', name: '<b>CI</b>', prefix: 'svc_live_abcd' } as ApiKeyView,
    ]);

    const confirm = await call(
      membersPage,
      get('GET /console/members', OWNER, { query: `remove=${MEMBER.user.id}` }),
    );
    expect(mainText(confirm)).toContain('&lt;b&gt;CI&lt;/b&gt;');
    expect(mainText(confirm)).toMatch(/still work/);
    expect(confirm.body).toMatch(/name="revoke_keys" type="checkbox" value="on" checked/);

    await call(
      membersPage,
      post(`POST /console/members/{id}/remove`, OWNER, { revoke_keys: 'on' }, { id: MEMBER.user.id }),
    );
    expect(people.removeMember).toHaveBeenLastCalledWith(expect.objectContaining({ revokeKeys: true }));
    await call(membersPage, post(`POST /console/members/{id}/remove`, OWNER, {}, { id: MEMBER.user.id }));
    expect(people.removeMember).toHaveBeenLastCalledWith(expect.objectContaining({ revokeKeys: false }));
  });
});

describe('settings', () => {
  it('gives owners the form, with the current values', async () => {
    const res = await call(settings, get('GET /console/settings', OWNER));

    expect(res.body).toMatch(/name="settings" type="checkbox" value="dangerous_ops" aria-describedby/);
    expect(res.body).toMatch(/name="settings" type="checkbox" value="approval_required" checked/);
    expect(res.body).toContain('>https://app.example.com</textarea>');
    expect(res.body).toContain('<input type="hidden" name="version" value="3">');
    expect(settingsCases.getSettings).toHaveBeenCalledWith({ orgId: ORG, actor: asPerson(OWNER) });
    expectNoInlineCode(res);
  });

  it('shows the others the settings without a form', async () => {
    const res = await call(settings, get('GET /console/settings', ADMIN));

    expect(res.body).not.toContain('<form method="post" action="/console/settings"');
    expect(mainText(res)).toContain('Owners change the settings.');
  });

  it('saves the whole form: ticked boxes on, unticked off, one origin per line', async () => {
    const res = await call(
      settings,
      post('POST /console/settings', OWNER, {
        settings: ['dangerous_ops'],
        landing_origins: 'https://a.example\r\n\r\n  https://b.example  \n',
        version: '3',
      }),
    );

    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/console/settings?msg=settings_saved');
    expect(settingsCases.updateSettings).toHaveBeenCalledWith({
      orgId: ORG,
      actor: asPerson(OWNER),
      patch: {
        dangerous_ops: true,
        approval_required: false,
        landing_origins: ['https://a.example', 'https://b.example'],
      },
      version: 3,
      now: expect.any(Date),
    });
  });

  it('answers a stale form with 409 and the settings as they are now, saying nothing was saved', async () => {
    vi.mocked(settingsCases.updateSettings).mockRejectedValue(
      new ActError('The settings were changed meanwhile. Nothing was saved.', 'conflict'),
    );

    const res = await call(
      settings,
      post('POST /console/settings', OWNER, {
        settings: ['dangerous_ops'],
        landing_origins: '',
        version: '2',
      }),
    );

    expect(res.statusCode).toBe(409);
    expect(mainText(res)).toContain('The settings were changed meanwhile. Nothing was saved.');
    // As they are now (SETTINGS: approval on, one origin), at their version now.
    expect(res.body).toMatch(/value="approval_required" checked/);
    expect(res.body).toContain('>https://app.example.com</textarea>');
    expect(res.body).toContain('<input type="hidden" name="version" value="3">');
  });

  it("answers an admin's change with the 403 page", async () => {
    vi.mocked(settingsCases.updateSettings).mockRejectedValue(
      new ActError('Only owners change workspace settings.', 'forbidden'),
    );

    const res = await call(settings, post('POST /console/settings', ADMIN, { settings: ['dangerous_ops'] }));

    expect(res.statusCode).toBe(403);
  });

  it('shows a refused origin list again as typed, the error linking to it', async () => {
    vi.mocked(settingsCases.updateSettings).mockRejectedValue(
      new ActError('ftp://x is not an origin.', 'invalid'),
    );

    const res = await call(
      settings,
      post('POST /console/settings', OWNER, { landing_origins: 'ftp://x</textarea><b>' }),
    );

    expect(res.statusCode).toBe(400);
    expect(errorLinks(res)).toEqual({ 'landing-origins': 'ftp://x is not an origin.' });
    expect(res.body).toContain('ftp://x&lt;/textarea&gt;&lt;b&gt;</textarea>');
  });
});

describe('audit log', () => {
  const entry = (n: number): AuditEntry => ({
    id: `aud_${n}`,
    org_id: ORG,
    at: '2030-01-01T00:00:00.000Z',
    actor: {
      kind: n === 1 ? 'operator' : 'person',
      user_id: null,
      email: n === 1 ? null : '<i>x</i>@example.com',
    },
    action: 'key_minted',
    target: 'key_1',
    detail: { name: '<b>bold</b>', scopes: ['posts:read'] },
  });

  it('shows entries newest first as the use case gives them, escaped, with a link to older ones', async () => {
    vi.mocked(auditLog.listAuditLog).mockResolvedValue({ data: [entry(2), entry(1)], next_cursor: 'c/2+' });

    const res = await call(audit, get('GET /console/audit', OWNER));

    expect(res.statusCode).toBe(200);
    expect(mainText(res)).toMatch(/API key minted.*Operator/);
    expect(res.body).toContain('&lt;i&gt;x&lt;/i&gt;@example.com');
    expect(res.body).toContain('&lt;b&gt;bold&lt;/b&gt;');
    expect(res.body).toContain('href="/console/audit?cursor=c%2F2%2B"');
    expect(auditLog.listAuditLog).toHaveBeenCalledWith({
      orgId: ORG,
      actor: asPerson(OWNER),
      cursor: undefined,
      limit: 50,
    });
  });

  it('passes the cursor on, and answers a non-owner with the 403 page', async () => {
    vi.mocked(auditLog.listAuditLog).mockResolvedValueOnce({ data: [], next_cursor: null });
    vi.mocked(auditLog.listAuditLog).mockRejectedValueOnce(
      new ActError('Only owners read the audit log.', 'forbidden'),
    );

    const older = await call(audit, get('GET /console/audit', OWNER, { query: 'cursor=abc' }));
    const admin = await call(audit, get('GET /console/audit', ADMIN));

    expect(older.body).toContain('href="/console/audit"');
    expect(auditLog.listAuditLog).toHaveBeenCalledWith(expect.objectContaining({ cursor: 'abc' }));
    expect(admin.statusCode).toBe(403);
  });
});

describe('home and navigation', () => {
  it('greets the person in their workspace, with the audit log in the navigation of owners only', async () => {
    const owner = await call(home, get('GET /console', OWNER));
    const member = await call(home, get('GET /console', MEMBER));

    expect(owner.body).toContain('<h1 class="heading">Acme &lt;Widgets&gt; &amp; &quot;Co&quot;</h1>');
    expect(owner.body).toContain('href="/console/audit"');
    expect(member.body).not.toContain('href="/console/audit"');
    expect(member.body).toContain('member@example.com');
    expect(owner.body).toContain('<a href="/console" aria-current="page">');
    expect(owner.body).toContain('<a class="skip-link" href="#main">');
    expect(owner.body).toContain('<main id="main"');
    expect(owner.body).toContain('<form method="post" action="/console/sign-out"');
    expectNoInlineCode(owner);
  });

  it("shows the month's meters with what is left, the 14-day timeline and its numbers", async () => {
    const res = await call(home, get('GET /console', MEMBER));

    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<progress id="meter-api_requests" max="50000" value="1200">');
    expect(mainText(res)).toContain('1,200 of 50,000 used, 48,800 left');
    expect(res.body).toContain('class="meter meter--full"');
    expect(mainText(res)).toContain('Resets 2030-02-01 00:00 UTC');
    // 14 days, each a published and a failed bar; the busiest day is the scale.
    expect((res.body ?? '').match(/class="chart__published"/g)).toHaveLength(14);
    expect(res.body).toContain('5 published and 1 failed in all; the busiest day had 5.');
    expect(res.body).toMatch(
      /<th scope="row"><time datetime="2030-01-14">2030-01-14<\/time><\/th><td data-label="Published"><div class="table__value">5</,
    );
    expect(mainText(res)).toContain('Nothing needs you right now');
    expect(overviewCases.getOverview).toHaveBeenCalledWith(
      expect.objectContaining({
        orgId: ORG,
        actor: asPerson(MEMBER),
        cursorSecret: 'unit-test-cursor-secret',
      }),
    );
    expectNoInlineCode(res);
  });

  it('lists what needs a person, each a link to where it is acted on, escaped, in a live region', async () => {
    vi.mocked(overviewCases.getOverview).mockResolvedValue(
      overview({
        channels: [
          {
            id: 'channel_01JD0000000000000000000001',
            platform: 'mastodon',
            handle: '<b>@ann</b>@mastodon.example',
            status: 'reauth_required',
          } as overviewCases.Overview['needs']['channels'][number],
        ],
        approvals: {
          total: 3,
          posts: [
            {
              id: 'post_01JD0000000000000000000001',
              title: null,
              body: 'Launch <day>',
              variants: [],
            } as never,
          ],
        },
        endpoints: [
          {
            id: 'webhook_01JD0000000000000000000001',
            url: 'https://hooks.example/x',
            state: 'auto_disabled',
          } as never,
        ],
      }),
    );

    const res = await call(home, get('GET /console', ADMIN));

    expect(res.body).toContain('&lt;b&gt;@ann&lt;/b&gt;@mastodon.example');
    expect(res.body).toContain('href="/console/channels#channel-channel_01JD0000000000000000000001"');
    expect(mainText(res)).toContain('3 posts wait for approval');
    expect(res.body).toContain(
      'href="/console/posts/post_01JD0000000000000000000001">Launch &lt;day&gt;</a>',
    );
    expect(res.body).toContain('href="/console/webhooks/webhook_01JD0000000000000000000001"');
    expect(res.body).toContain(
      '<div id="needs" hx-get="/console" hx-trigger="every 10s" hx-select="#needs" hx-swap="outerHTML">',
    );
  });

  it('sends a signed-out visitor to sign-in', async () => {
    const res = await call(home, get('GET /console', null));

    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/console/sign-in');
  });

  it("sends the whole page to sign-in when a live region's refresh finds the session gone", async () => {
    const res = await call(home, get('GET /console', null, { headers: { 'hx-request': 'true' } }));

    // Not a 303: htmx would follow it and swap the sign-in page into the region.
    expect(res.statusCode).toBe(200);
    expect(res.headers['hx-redirect']).toBe('/console/sign-in');
    expect(res.body).toBe('');
  });

  it('loads htmx with a configuration that keeps to the CSP for signed-in people only', async () => {
    const owner = await call(home, get('GET /console', OWNER));
    const config = /<meta name="htmx-config" content="([^"]+)">/.exec(owner.body ?? '')?.[1] ?? '';
    expect(JSON.parse(config.replaceAll('&quot;', '"'))).toMatchObject({
      includeIndicatorStyles: false,
      allowEval: false,
      allowScriptTags: false,
      historyCacheSize: 0,
    });
    expect(owner.body).toMatch(/<script src="\/console\/assets\/htmx\.js(\?v=[^"]+)?" defer><\/script>/);
    const signedOut = await call(signIn, get('GET /console/sign-in', null));
    expect(signedOut.body).not.toContain('htmx');
  });
});

describe('sign-in', () => {
  it('serves the page with our scripts (no inline code) and the message of a sign-out', async () => {
    const res = await call(signIn, get('GET /console/sign-in', null, { query: 'msg=signed_out' }));

    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<script src="/console/assets/webauthn.js" defer></script>');
    expect(res.body).toContain('<script src="/console/assets/console.js" defer></script>');
    expect(res.body).toContain('data-options="/console/sign-in/options"');
    expect(mainText(res)).toContain('You are signed out.');
    expectNoInlineCode(res);
  });

  it('starts a ceremony: its options as JSON, its id in a short-lived cookie', async () => {
    vi.mocked(passkeyCases.beginSignIn).mockResolvedValue({
      ceremonyId: 'cer_1',
      options: { challenge: 'ch' } as never,
    });

    const res = await call(
      signIn,
      jsonPost('POST /console/sign-in/options', {}, { sourceIp: '203.0.113.9' }),
    );

    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body ?? '')).toEqual({ options: { challenge: 'ch' } });
    expect(res.cookies).toEqual([
      'herald_ceremony=cer_1; Path=/console; Max-Age=300; HttpOnly; SameSite=Strict; Secure',
    ]);
    expect(passkeyCases.beginSignIn).toHaveBeenCalledWith({
      rp: { id: 'console.unit', name: 'Herald', origin: CONSOLE_ORIGIN },
      source: '203.0.113.9',
      now: expect.any(Date),
    });
  });

  it('finishes it: the session cookie set, the ceremony cookie cleared, where to go next', async () => {
    vi.mocked(passkeyCases.finishSignIn).mockResolvedValue({ cookie: 'org~usr~tok', session: OWNER.session });

    const res = await call(
      signIn,
      jsonPost('POST /console/sign-in', { response: { id: 'cred' } }, { cookies: ['herald_ceremony=cer_1'] }),
    );

    expect(JSON.parse(res.body ?? '')).toEqual({ redirect: '/console' });
    expect(res.cookies).toEqual([
      `${SESSION_COOKIE}=org~usr~tok; Path=/; HttpOnly; SameSite=Strict; Secure`,
      'herald_ceremony=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict; Secure',
    ]);
    expect(passkeyCases.finishSignIn).toHaveBeenCalledWith(
      expect.objectContaining({ ceremonyId: 'cer_1', response: { id: 'cred' } }),
    );
  });

  it('returns a person to the page they asked for, and only to a console page of this origin', async () => {
    vi.mocked(passkeyCases.finishSignIn).mockResolvedValue({ cookie: 'org~usr~tok', session: OWNER.session });
    // Signed out on a page: sign-in is told where they were going.
    const asked = await call(keys, get('GET /console/keys', null, { query: 'revoke=key_1' }));
    expect(asked.headers.location).toBe('/console/sign-in?next=%2Fconsole%2Fkeys%3Frevoke%3Dkey_1');
    // The sign-in page's answer goes back with it…
    const page = await call(signIn, get('GET /console/sign-in', null, { query: 'next=%2Fconsole%2Fkeys' }));
    expect(page.body).toContain('data-finish="/console/sign-in?next=%2Fconsole%2Fkeys"');
    // …and the signed-in answer sends them there.
    const finish = (next: string) =>
      call(
        signIn,
        jsonPost(
          'POST /console/sign-in',
          { response: { id: 'cred' } },
          { cookies: ['herald_ceremony=cer_1'], query: `next=${encodeURIComponent(next)}` },
        ),
      ).then((res) => (JSON.parse(res.body ?? '') as { redirect: string }).redirect);
    expect(await finish('/console/posts/post_1?x=1')).toBe('/console/posts/post_1?x=1');
    // Never elsewhere: another site, a protocol-relative or backslashed path, a ceremony, a traversal.
    for (const next of [
      'https://evil.example/console',
      '//evil.example/console',
      '/\\evil.example',
      '/console/sign-in',
      '/console/enroll',
      '/console/../v1/posts',
      'javascript:alert(1)',
      '/consolex',
    ])
      expect(await finish(next), next).toBe('/console');
    // A form's POST is not returned to (nobody would send it again).
    const posted = await call(keys, post('POST /console/keys', null, { name: 'x' }));
    expect(posted.headers.location).toBe('/console/sign-in');
  });

  it('answers an answer without its ceremony cookie, and a refused one, as JSON errors', async () => {
    vi.mocked(passkeyCases.finishSignIn).mockRejectedValue(
      new ActError('This passkey is not known here.', 'invalid'),
    );

    const noCeremony = await call(signIn, jsonPost('POST /console/sign-in', { response: {} }));
    const refused = await call(
      signIn,
      jsonPost('POST /console/sign-in', { response: {} }, { cookies: ['herald_ceremony=c'] }),
    );

    expect(noCeremony.statusCode).toBe(400);
    expect(JSON.parse(noCeremony.body ?? '').error.kind).toBe('invalid');
    expect(JSON.parse(refused.body ?? '')).toEqual({
      error: { kind: 'invalid', message: 'This passkey is not known here.' },
    });
    expect(refused.cookies).toBeUndefined();
  });

  it('answers too many attempts with a 429', async () => {
    vi.mocked(passkeyCases.beginSignIn).mockRejectedValue(
      new ActError('Too many sign-in attempts.', 'rate_limited'),
    );

    const res = await call(signIn, jsonPost('POST /console/sign-in/options', {}));

    expect(res.statusCode).toBe(429);
  });
});

describe('enrollment', () => {
  it('serves the page, which never needs the token on the server', async () => {
    const res = await call(enroll, get('GET /console/enroll', null));

    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('data-ceremony="enroll"');
    expectNoInlineCode(res);
  });

  it('begins with the token from the fragment and says who the passkey is for', async () => {
    vi.mocked(passkeyCases.beginEnrollment).mockResolvedValue({
      ceremonyId: 'cer_2',
      options: { challenge: 'c' } as never,
      email: 'new@example.com',
      orgName: 'Acme',
    });

    const res = await call(enroll, jsonPost('POST /console/enroll/options', { token: 'TOKEN' }));

    expect(JSON.parse(res.body ?? '')).toEqual({
      options: { challenge: 'c' },
      email: 'new@example.com',
      orgName: 'Acme',
    });
    expect(res.cookies?.[0]).toMatch(/^herald_ceremony=cer_2;/);
    expect(passkeyCases.beginEnrollment).toHaveBeenCalledWith(expect.objectContaining({ token: 'TOKEN' }));
  });

  it('refuses options without a token, and finishes with a session', async () => {
    vi.mocked(passkeyCases.finishEnrollment).mockResolvedValue({ cookie: 'o~u~t', session: OWNER.session });

    const noToken = await call(enroll, jsonPost('POST /console/enroll/options', {}));
    const done = await call(
      enroll,
      jsonPost('POST /console/enroll', { response: {} }, { cookies: ['herald_ceremony=cer_2'] }),
    );

    expect(noToken.statusCode).toBe(400);
    expect(passkeyCases.beginEnrollment).not.toHaveBeenCalled();
    expect(JSON.parse(done.body ?? '')).toEqual({ redirect: '/console?msg=enrolled' });
    expect(done.cookies?.[0]).toMatch(/^__Host-herald_session=o~u~t;/);
  });
});

describe('passkeys', () => {
  const view = (n: number) => ({
    id: `cred${n}`,
    name: n === 1 ? '<script>x</script>' : `Key ${n}`,
    created_at: '2030-01-01T00:00:00.000Z',
    last_used_at: null,
  });

  it('lists the person’s passkeys escaped, offering removal only while more than one is left', async () => {
    vi.mocked(passkeyCases.listPasskeys)
      .mockResolvedValueOnce([view(1), view(2)])
      .mockResolvedValueOnce([view(2)]);

    const two = await call(passkeys, get('GET /console/passkeys', MEMBER));
    const one = await call(passkeys, get('GET /console/passkeys', MEMBER));

    expect(two.body).toContain('&lt;script&gt;x&lt;/script&gt;');
    expect(two.body).toContain('href="/console/passkeys?remove=cred2"');
    expect(one.body).not.toContain('?remove=');
    expect(passkeyCases.listPasskeys).toHaveBeenCalledWith(MEMBER);
    expectNoInlineCode(two);
  });

  it('adds one: options for the signed-in person, then the answer with its name', async () => {
    vi.mocked(passkeyCases.beginAddPasskey).mockResolvedValue({ ceremonyId: 'cer_3', options: {} as never });
    vi.mocked(passkeyCases.finishAddPasskey).mockResolvedValue(view(3));

    const options = await call(
      passkeys,
      jsonPost('POST /console/passkeys/options', {}, { cookies: sessionOf(ADMIN) }),
    );
    const added = await call(
      passkeys,
      jsonPost(
        'POST /console/passkeys',
        { response: { id: 'c' }, name: ' Phone ' },
        { cookies: [...sessionOf(ADMIN), 'herald_ceremony=cer_3'] },
      ),
    );

    expect(options.cookies?.[0]).toMatch(/^herald_ceremony=cer_3;/);
    expect(passkeyCases.beginAddPasskey).toHaveBeenCalledWith(expect.objectContaining({ signedIn: ADMIN }));
    expect(JSON.parse(added.body ?? '')).toEqual({ redirect: '/console/passkeys?msg=passkey_added' });
    expect(passkeyCases.finishAddPasskey).toHaveBeenCalledWith(
      expect.objectContaining({ signedIn: ADMIN, ceremonyId: 'cer_3', name: 'Phone', response: { id: 'c' } }),
    );
  });

  it('answers a signed-out ceremony fetch with 401 and where to sign in', async () => {
    const res = await call(passkeys, jsonPost('POST /console/passkeys/options', {}));

    expect(res.statusCode).toBe(401);
    expect(JSON.parse(res.body ?? '')).toMatchObject({ redirect: '/console/sign-in' });
    expect(passkeyCases.beginAddPasskey).not.toHaveBeenCalled();
  });

  it('removes one after confirmation, and the use case refusing the last is a 409 page', async () => {
    vi.mocked(passkeyCases.removePasskey).mockRejectedValueOnce(
      new ActError('You cannot remove your last passkey.', 'conflict'),
    );

    const last = await call(passkeys, post('POST /console/passkeys/{id}/remove', OWNER, {}, { id: 'cred1' }));
    const removed = await call(
      passkeys,
      post('POST /console/passkeys/{id}/remove', OWNER, {}, { id: 'cred2' }),
    );

    expect(last.statusCode).toBe(409);
    expect(removed.headers.location).toBe('/console/passkeys?msg=passkey_removed');
    expect(passkeyCases.removePasskey).toHaveBeenLastCalledWith(OWNER, 'cred2', expect.any(Date));
  });

  it('signs out everywhere: every session ended, this cookie cleared, refused from another site', async () => {
    const evil = post('POST /console/passkeys/sign-out-everywhere', OWNER);
    evil.headers.origin = 'https://evil.example';
    expect((await call(passkeys, evil)).statusCode).toBe(403);
    expect(passkeyCases.signOutEverywhere).not.toHaveBeenCalled();

    const res = await call(passkeys, post('POST /console/passkeys/sign-out-everywhere', OWNER));
    expect(res.headers.location).toBe('/console/sign-in?msg=signed_out_everywhere');
    expect(res.cookies).toEqual([`${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict; Secure`]);
    expect(passkeyCases.signOutEverywhere).toHaveBeenCalledWith(OWNER, expect.any(Date));
  });
});

describe('sign-out', () => {
  it('ends the session, clears the cookie and says so on the sign-in page', async () => {
    const res = await call(signOut, post('POST /console/sign-out', OWNER));

    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/console/sign-in?msg=signed_out');
    expect(res.cookies).toEqual([`${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict; Secure`]);
    expect(sessions.signOut).toHaveBeenCalledWith(
      `${OWNER.session.org_id}~${OWNER.user.id}~secret`,
      expect.any(Date),
    );
  });

  it('is refused from another site (a forced sign-out is still a cross-site act)', async () => {
    const event = post('POST /console/sign-out', OWNER);
    event.headers.origin = 'https://evil.example';

    const res = await call(signOut, event);

    expect(res.statusCode).toBe(403);
    expect(sessions.signOut).not.toHaveBeenCalled();
  });
});

describe('assets', () => {
  const root = join(import.meta.dirname, '../../..');

  it.each(Object.entries(CONSOLE_ASSET_FILES))(
    'serves %s as it is in the repository, with its type',
    async (name, file) => {
      const res = await call(
        assets,
        get('GET /console/assets/{file}', null, { params: { file: name }, query: 'v=abc' }),
      );

      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe(file.contentType);
      expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(res.body).toBe(readFileSync(join(root, file.source), 'utf8'));
    },
  );

  it('caches an unversioned URL briefly, and answers an unknown file with a 404', async () => {
    const plain = await call(
      assets,
      get('GET /console/assets/{file}', null, { params: { file: 'console.css' } }),
    );
    const unknown = await call(
      assets,
      get('GET /console/assets/{file}', null, { params: { file: '..%2Fpackage.json' } }),
    );

    expect(plain.headers['cache-control']).toBe('public, max-age=300');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers['cache-control']).toBe('no-store');
  });

  it('serves the WebAuthn library published by @simplewebauthn/browser, untouched', async () => {
    const res = await call(
      assets,
      get('GET /console/assets/{file}', null, { params: { file: 'webauthn.js' } }),
    );

    expect(res.body).toContain('SimpleWebAuthnBrowser');
  });
});

describe('every console page', () => {
  it('has a handler module whose routes are exactly its manifest entry (checked when it loads)', async () => {
    for (const page of consolePages) {
      const mod = (await import(join(import.meta.dirname, '../../..', page.entry))) as { handler: unknown };
      expect(typeof mod.handler, page.id).toBe('function');
    }
  });
});

describe('refusals in people’s words', () => {
  it('says what is wrong without the CLI’s ids: an unknown key, a key revoked already, an unknown member', async () => {
    vi.mocked(apiKeys.revokeKey)
      .mockRejectedValueOnce(new ActError('no key key_9 in organization org_1', 'not_found'))
      .mockRejectedValueOnce(
        new ActError('key key_9 is already revoked (since 2030-01-01T00:00:00.000Z)', 'conflict'),
      );
    vi.mocked(people.removeMember).mockRejectedValueOnce(
      new ActError('no user usr_9 in organization org_1', 'not_found'),
    );
    vi.mocked(people.changeMemberRole).mockRejectedValueOnce(
      new ActError('no user usr_9 in organization org_1', 'not_found'),
    );

    const gone = await call(keys, post('POST /console/keys/{id}/revoke', OWNER, {}, { id: 'key_9' }));
    const twice = await call(keys, post('POST /console/keys/{id}/revoke', OWNER, {}, { id: 'key_9' }));
    const removed = await call(
      membersPage,
      post('POST /console/members/{id}/remove', OWNER, {}, { id: 'usr_9' }),
    );
    const role = await call(
      membersPage,
      post('POST /console/members/{id}/role', OWNER, { role: 'admin' }, { id: 'usr_9' }),
    );

    expect([gone, twice, removed, role].map((r) => r.statusCode)).toEqual([404, 409, 404, 404]);
    expect(mainText(gone)).toContain('This workspace has no such API key.');
    expect(mainText(twice)).toContain('This key is already revoked');
    expect(mainText(removed)).toContain('This workspace has no such member');
    expect(mainText(role)).toContain('This workspace has no such member');
    for (const r of [gone, twice, removed, role]) expect(mainText(r)).not.toMatch(/org_1|usr_9|key_9|T00:00/);
  });
});
