import { SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import { ENROLLMENT_TTL_MS, hashSecret, OPERATOR } from '#core/people';
import { activeKeysOf } from '#usecases/api-keys';
import {
  changeMemberRole,
  inviteMember,
  issueEnrollment,
  listMembers,
  removeMember,
} from '#usecases/members';
import { apiKey, apiKeyItem, ORG_ID, OTHER_ORG_ID } from '../support/fixtures.ts';
import {
  ADMIN,
  actErrorOf,
  appliedTransactionsPutting,
  holdTransactions,
  itemsOf,
  MEMBER,
  NOW,
  OWNER,
  onBehalfOf,
  passkeyItem,
  person,
  STRANGER,
  usePeopleTable,
  user,
  userItems,
} from '../support/people.ts';

// The people of an organization (console and CLI): who may see, invite, change and remove them;
// the last owner guard, race included; enrollment links stored only as their hash.

const table = usePeopleTable();
const ses = mockClient(SESv2Client);
const CONSOLE = 'https://herald.example.com';

beforeEach(() => {
  ses.reset();
  ses.on(SendEmailCommand).resolves({ MessageId: 'm-1' });
  vi.stubEnv('HERALD_NOTIFY_FROM', 'herald@acme.test');
});

afterEach(() => {
  vi.unstubAllEnvs();
});

const invite = (actor = person(OWNER), email = 'new@acme.test', role = 'admin') =>
  inviteMember({ orgId: ORG_ID, actor, email, role, consoleUrl: CONSOLE, now: NOW });

const orgItemNow = () => table.get(keys.org(ORG_ID)) as Record<string, unknown>;
const roleOf = (id: string) => (table.get(keys.user(ORG_ID, id)) as { role?: string } | undefined)?.role;

describe('listMembers', () => {
  it('shows every member the people of their organization, with their passkey counts', async () => {
    // Arrange
    table.seed(passkeyItem(OWNER, 'cred-a'), passkeyItem(OWNER, 'cred-b'), passkeyItem(ADMIN, 'cred-c'));

    // Act
    const shown = await listMembers({ orgId: ORG_ID, actor: person(MEMBER) });

    // Assert
    expect(shown).toEqual([
      { ...OWNER, passkeys: 2 },
      { ...ADMIN, passkeys: 1 },
      { ...MEMBER, passkeys: 0 },
    ]);
  });

  it("answers not_found to a person of another organization (never the other organization's people)", async () => {
    const err = await actErrorOf(listMembers({ orgId: ORG_ID, actor: person(STRANGER) }));
    expect(err.kind).toBe('not_found');
  });
});

describe('inviteMember', () => {
  it('adds the user, an enrollment link stored only as its hash for 30 minutes, and the audit entry, in one transaction', async () => {
    // Act
    const res = await invite();

    // Assert: the link.
    const token = /^https:\/\/herald\.example\.com\/console\/enroll#([A-Za-z0-9_-]{43})$/.exec(
      res.enrollment.url,
    )?.[1];
    expect(token).toBeDefined();
    expect(res.enrollment.expires_at).toBe(new Date(NOW.getTime() + ENROLLMENT_TTL_MS).toISOString());
    const stored = table.get(keys.enrollment(hashSecret(token as string)));
    expect(stored).toMatchObject({
      org_id: ORG_ID,
      user_id: res.user.id,
      expires_at: res.enrollment.expires_at,
      issued_by: OWNER.id,
      ttl: Math.ceil(Date.parse(res.enrollment.expires_at) / 1000),
    });
    // Nowhere is the token itself stored.
    expect(JSON.stringify([...table.items.values()])).not.toContain(token);

    // The user, their email guard and the entry: written together.
    expect(res.user).toMatchObject({ org_id: ORG_ID, email: 'new@acme.test', role: 'admin' });
    expect(table.get(keys.user(ORG_ID, res.user.id))).toMatchObject({ role: 'admin' });
    const [tx] = appliedTransactionsPutting(table, 'AUDIT#');
    expect(tx?.view.items.map((i) => String(i.sk).split('#')[0])).toEqual(
      expect.arrayContaining(['EMAIL', 'USER', 'ENROLL', 'AUDIT']),
    );
    expect(itemsOf(table, 'AUDIT#').filter((e) => e.action !== 'act_refused')).toEqual([
      expect.objectContaining({
        action: 'member_invited',
        target: res.user.id,
        actor: { kind: 'person', user_id: OWNER.id, email: OWNER.email },
        detail: { email: 'new@acme.test', role: 'admin', link_expires_at: res.enrollment.expires_at },
      }),
    ]);
  });

  it('e-mails the link through SES when a sender is configured, and says so', async () => {
    const res = await invite();
    expect(res.emailed).toBe(true);
    const mail = ses.commandCalls(SendEmailCommand)[0]?.args[0].input;
    expect(mail?.FromEmailAddress).toBe('herald@acme.test');
    expect(mail?.Destination?.ToAddresses).toEqual(['new@acme.test']);
    expect(mail?.Content?.Simple?.Body?.Text?.Data).toContain(res.enrollment.url);
  });

  it('answers emailed false without a sender (the link is still returned), and when SES fails', async () => {
    vi.stubEnv('HERALD_NOTIFY_FROM', '');
    const quiet = await invite();
    expect(quiet.emailed).toBe(false);
    expect(ses.commandCalls(SendEmailCommand)).toHaveLength(0);

    vi.stubEnv('HERALD_NOTIFY_FROM', 'herald@acme.test');
    ses.on(SendEmailCommand).rejects(new Error('MessageRejected'));
    const failed = await invite(person(OWNER), 'second@acme.test');
    expect(failed.emailed).toBe(false);
    expect(table.get(keys.user(ORG_ID, failed.user.id))).toBeDefined();
  });

  it('refuses an email already in the organization (whatever its case) as a conflict, writing nothing', async () => {
    const before = table.items.size;
    const err = await actErrorOf(invite(person(OWNER), 'ADMIN2@acme.test'));
    expect(err.kind).toBe('conflict');
    expect(err.message).toMatch(/admin2@acme.test is already a member of Acme/);
    expect(table.items.size).toBe(before);
  });

  it.each([
    ['not an email', 'admin'],
    ['new@acme.test', 'superuser'],
  ])('refuses %s as %s: invalid', async (email, role) => {
    expect((await actErrorOf(invite(person(OWNER), email, role))).kind).toBe('invalid');
    expect(itemsOf(table, 'AUDIT#').filter((e) => e.action !== 'act_refused')).toEqual([]);
  });

  it('is for owners: an admin and a member are refused (forbidden), and the operator may', async () => {
    for (const actor of [person(ADMIN), person(MEMBER), onBehalfOf(ADMIN)]) {
      const err = await actErrorOf(invite(actor));
      expect(err.kind).toBe('forbidden');
      expect(err.message).toMatch(/inviting members needs the owner role/);
    }
    const res = await invite(OPERATOR);
    expect(itemsOf(table, 'AUDIT#').filter((e) => e.action !== 'act_refused')[0]?.actor).toEqual({
      kind: 'operator',
      user_id: null,
      email: null,
    });
    expect(res.user.role).toBe('admin');
  });

  it('counts an invited owner in owner_count', async () => {
    await invite(person(OWNER), 'second-owner@acme.test', 'owner');
    expect(orgItemNow().owner_count).toBe(2);
  });

  it('refuses a console URL that is not an http(s) origin before writing anything', async () => {
    const err = await actErrorOf(
      inviteMember({
        orgId: ORG_ID,
        actor: OPERATOR,
        email: 'x@acme.test',
        role: 'member',
        consoleUrl: 'javascript:alert(1)',
        now: NOW,
      }),
    );
    expect(err.kind).toBe('invalid');
    expect(itemsOf(table, 'USER#')).toHaveLength(3);
  });
});

describe('changeMemberRole', () => {
  const change = (userId: string, role: string, actor = person(OWNER)) =>
    changeMemberRole({ orgId: ORG_ID, actor, userId, role, now: NOW });

  it('gives a member another role, with its audit entry in the same transaction', async () => {
    // Act
    const changed = await change(MEMBER.id, 'admin');

    // Assert
    expect(changed).toEqual({ ...MEMBER, role: 'admin' });
    expect(roleOf(MEMBER.id)).toBe('admin');
    const [tx] = appliedTransactionsPutting(table, 'AUDIT#');
    expect(tx?.view.keys).toContainEqual(keys.user(ORG_ID, MEMBER.id));
    expect(itemsOf(table, 'AUDIT#').filter((e) => e.action !== 'act_refused')).toEqual([
      expect.objectContaining({
        action: 'member_role_changed',
        target: MEMBER.id,
        detail: { email: MEMBER.email, from: 'member', to: 'admin' },
      }),
    ]);
  });

  it('refuses to demote the last owner (conflict), changing nothing', async () => {
    const err = await actErrorOf(change(OWNER.id, 'admin'));
    expect(err.kind).toBe('conflict');
    expect(err.message).toMatch(/last owner/);
    expect(roleOf(OWNER.id)).toBe('owner');
    expect(orgItemNow().owner_count).toBe(1);
    expect(itemsOf(table, 'AUDIT#').filter((e) => e.action !== 'act_refused')).toEqual([]);
  });

  it('demotes an owner while another remains, and keeps owner_count with the roles', async () => {
    await change(ADMIN.id, 'owner');
    expect(orgItemNow().owner_count).toBe(2);
    await change(OWNER.id, 'member', person(ADMIN));
    expect(orgItemNow().owner_count).toBe(1);
    expect(roleOf(OWNER.id)).toBe('member');
  });

  it('two owners demoting each other at once leave one owner: the write itself is conditioned', async () => {
    // Arrange: two owners; both acts will have read "two owners" before either writes.
    await change(ADMIN.id, 'owner');
    holdTransactions(2);

    // Act
    const results = await Promise.allSettled([
      change(ADMIN.id, 'member', person(OWNER)),
      change(OWNER.id, 'member', person(ADMIN)),
    ]);

    // Assert
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toMatchObject({ kind: 'conflict', message: expect.stringMatching(/last owner/) });
    const owners = [OWNER.id, ADMIN.id].filter((id) => roleOf(id) === 'owner');
    expect(owners).toHaveLength(1);
    expect(orgItemNow().owner_count).toBe(1);
  });

  it('counts the owners of an organization created before owner_count, then guards them', async () => {
    // Arrange: the org item as an older Herald stored it, with two owners.
    const { owner_count: _none, ...older } = orgItemNow();
    table.seed(older, ...userItems({ ...ADMIN, role: 'owner' }));

    // Act
    await change(ADMIN.id, 'admin');
    const err = await actErrorOf(change(OWNER.id, 'admin'));

    // Assert
    expect(orgItemNow().owner_count).toBe(1);
    expect(err.message).toMatch(/last owner/);
    expect(roleOf(OWNER.id)).toBe('owner');
  });

  it('is for owners: an admin may not promote themselves; --by must name an owner', async () => {
    expect((await actErrorOf(change(ADMIN.id, 'owner', person(ADMIN)))).kind).toBe('forbidden');
    expect((await actErrorOf(change(MEMBER.id, 'admin', onBehalfOf(MEMBER)))).kind).toBe('forbidden');
    expect((await actErrorOf(change(MEMBER.id, 'admin', onBehalfOf(STRANGER)))).kind).toBe('not_found');
    expect(roleOf(ADMIN.id)).toBe('admin');
    await change(MEMBER.id, 'admin', OPERATOR);
    expect(roleOf(MEMBER.id)).toBe('admin');
  });

  it("answers not_found for another organization's user id, and invalid for an unknown role", async () => {
    expect((await actErrorOf(change(STRANGER.id, 'member'))).kind).toBe('not_found');
    expect(table.get(keys.user(OTHER_ORG_ID, STRANGER.id))).toMatchObject({ role: 'owner' });
    expect((await actErrorOf(change(MEMBER.id, 'root'))).kind).toBe('invalid');
  });
});

describe('removeMember', () => {
  const remove = (userId: string, actor = person(OWNER)) =>
    removeMember({ orgId: ORG_ID, actor, userId, now: NOW });

  it('names the person’s active keys, and revokes them with the removal when asked; others’ keys stay', async () => {
    const theirs = [1, 2, 3].map((n) => apiKey({ scopes: ['posts:read'], n, revoked: n === 3 }));
    for (const k of theirs) k.record.created_by = ADMIN.id;
    const owners = apiKey({ scopes: ['posts:read'], n: 4 });
    table.seed(...theirs.map(apiKeyItem), apiKeyItem(owners));

    const active = await activeKeysOf({ orgId: ORG_ID, actor: person(OWNER), userId: ADMIN.id, now: NOW });
    expect(active.map((k) => k.id).sort()).toEqual([theirs[0]?.record.id, theirs[1]?.record.id].sort());

    await removeMember({ orgId: ORG_ID, actor: person(OWNER), userId: ADMIN.id, revokeKeys: true, now: NOW });
    const revokedAt = (k: ReturnType<typeof apiKey>) => table.get(keys.apiKey(k.hash))?.revoked_at;
    expect(theirs.slice(0, 2).map(revokedAt)).toEqual([NOW.toISOString(), NOW.toISOString()]);
    expect(revokedAt(owners)).toBeNull();
    expect(itemsOf(table, 'AUDIT#').filter((e) => e.action === 'key_revoked')).toHaveLength(2);
  });

  it('removes the user, their email guard and their passkeys, with the audit entry, in one transaction', async () => {
    // Arrange
    table.seed(passkeyItem(MEMBER, 'cred-1'), passkeyItem(MEMBER, 'cred-2'), passkeyItem(OWNER, 'cred-3'));

    // Act
    const removed = await remove(MEMBER.id);

    // Assert
    expect(removed).toEqual(MEMBER);
    expect(table.get(keys.user(ORG_ID, MEMBER.id))).toBeUndefined();
    expect(table.get(keys.userEmail(ORG_ID, MEMBER.email))).toBeUndefined();
    expect(itemsOf(table, `PASSKEY#${MEMBER.id}#`)).toEqual([]);
    expect(itemsOf(table, `PASSKEY#${OWNER.id}#`)).toHaveLength(1);
    const [tx] = appliedTransactionsPutting(table, 'AUDIT#');
    expect(tx?.view.keys).toEqual(
      expect.arrayContaining([
        keys.user(ORG_ID, MEMBER.id),
        keys.userEmail(ORG_ID, MEMBER.email),
        keys.passkey(ORG_ID, MEMBER.id, 'cred-1'),
      ]),
    );
    expect(itemsOf(table, 'AUDIT#').filter((e) => e.action !== 'act_refused')[0]).toMatchObject({
      action: 'member_removed',
      target: MEMBER.id,
      detail: { email: MEMBER.email, role: 'member' },
    });
    // The email is free again.
    await inviteMember({
      orgId: ORG_ID,
      actor: OPERATOR,
      email: MEMBER.email,
      role: 'member',
      consoleUrl: CONSOLE,
      now: NOW,
    });
  });

  it('refuses to remove the last owner, even at their own request', async () => {
    const err = await actErrorOf(remove(OWNER.id));
    expect(err).toMatchObject({ kind: 'conflict', message: expect.stringMatching(/last owner/) });
    expect(table.get(keys.user(ORG_ID, OWNER.id))).toBeDefined();
    expect(orgItemNow().owner_count).toBe(1);
  });

  it('two owners removing each other at once leave one owner', async () => {
    await changeMemberRole({ orgId: ORG_ID, actor: OPERATOR, userId: ADMIN.id, role: 'owner', now: NOW });
    holdTransactions(2);
    const results = await Promise.allSettled([
      remove(ADMIN.id, person(OWNER)),
      remove(OWNER.id, person(ADMIN)),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(itemsOf(table, 'USER#').filter((u) => u.role === 'owner')).toHaveLength(1);
    expect(orgItemNow().owner_count).toBe(1);
  });

  it('is for owners; another organization’s user is not_found', async () => {
    expect((await actErrorOf(remove(MEMBER.id, person(ADMIN)))).kind).toBe('forbidden');
    expect((await actErrorOf(remove(STRANGER.id))).kind).toBe('not_found');
    expect(table.get(keys.user(OTHER_ORG_ID, STRANGER.id))).toBeDefined();
  });
});

describe('issueEnrollment', () => {
  const enroll = (actor = OPERATOR, userId = MEMBER.id) =>
    issueEnrollment({ orgId: ORG_ID, actor, userId, consoleUrl: CONSOLE, now: NOW });

  it('gives the operator a fresh 30-minute link for a user, stored as its hash, audited', async () => {
    const link = await enroll();
    const token = link.url.split('#')[1] as string;
    expect(table.get(keys.enrollment(hashSecret(token)))).toMatchObject({
      user_id: MEMBER.id,
      issued_by: 'operator',
      expires_at: new Date(NOW.getTime() + 30 * 60_000).toISOString(),
    });
    expect(appliedTransactionsPutting(table, 'ENROLL')[0]?.view.items.map((i) => i.action)).toContain(
      'enrollment_issued',
    );
  });

  it('is the operator’s only: even an owner signed in is refused; --by must name an owner', async () => {
    expect((await actErrorOf(enroll(person(OWNER)))).kind).toBe('forbidden');
    expect((await actErrorOf(enroll(onBehalfOf(ADMIN)))).kind).toBe('forbidden');
    expect(table.all('ENROLL')).toEqual([]);
    await enroll(onBehalfOf(OWNER));
  });

  it("answers not_found for an unknown or another organization's user", async () => {
    expect((await actErrorOf(enroll(OPERATOR, STRANGER.id))).kind).toBe('not_found');
    expect((await actErrorOf(enroll(OPERATOR, user(77, 'member').id))).kind).toBe('not_found');
    expect(table.all('ENROLL')).toEqual([]);
  });
});

describe('look-alike addresses', () => {
  it('refuses bidi controls, invisible characters and non-ASCII addresses, inviting no one', async () => {
    const before = itemsOf(table, 'USER#').length;
    for (const email of [
      'admin-\u202Etset.emca@evil.test',
      'ad\u200Bmin@acme.test',
      '\u043Ewner@acme.test', // a Cyrillic о
      'pers\u00F6n@acme.test',
    ]) {
      const e = await actErrorOf(invite(person(OWNER), email));
      expect(e.kind, email).toBe('invalid');
      expect(e.message, email).toMatch(/invisible|plain ASCII/);
    }
    expect(itemsOf(table, 'USER#')).toHaveLength(before);
  });
});
