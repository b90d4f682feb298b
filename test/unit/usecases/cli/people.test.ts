import { beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import { hashSecret } from '#core/people';
import {
  addOrgUser,
  auditLog,
  createOrg,
  enrollUser,
  listKeys,
  listUsers,
  mintKey,
  removeUser,
  revokeKey,
  setSettings,
  setUserRole,
} from '#usecases/cli/admin';
import { ORG_ID } from '../../support/fixtures.ts';
import {
  ADMIN,
  actErrorOf,
  appliedTransactionsPutting,
  itemsOf,
  MEMBER,
  NOW,
  OWNER,
  usePeopleTable,
} from '../../support/people.ts';

// The admin CLI is the operator: its acts on an organization's people, keys and settings are the
// console's use cases with the operator as the actor (recorded so), --by optional and checked.

const table = usePeopleTable();
const CONSOLE = 'http://localhost:4000';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(NOW);
  vi.stubEnv('HERALD_NOTIFY_FROM', '');
  return () => {
    vi.useRealTimers();
    vi.unstubAllEnvs();
  };
});

const tokenOf = (url: string) => /#(.+)$/.exec(url)?.[1] as string;

describe('herald org create', () => {
  it("creates the org (owner_count 1), its owner, the owner's enrollment link and org_created, in one transaction", async () => {
    // Act
    const res = await createOrg({
      name: 'Beta',
      plan: 'team',
      ownerEmail: 'Boss@Beta.test',
      consoleUrl: CONSOLE,
    });

    // Assert
    expect(res.enrollment.url).toMatch(/^http:\/\/localhost:4000\/console\/enroll#[A-Za-z0-9_-]{43}$/);
    expect(res.enrollment.expires_at).toBe('2030-06-10T10:00:00.000Z');
    expect(table.get(keys.org(res.org.id))).toMatchObject({ owner_count: 1, name: 'Beta' });
    expect(table.get(keys.enrollment(hashSecret(tokenOf(res.enrollment.url))))).toMatchObject({
      org_id: res.org.id,
      user_id: res.owner.id,
      issued_by: 'operator',
    });
    const [tx] = appliedTransactionsPutting(table, 'AUDIT#');
    expect(tx?.view.items.map((i) => i.entity)).toEqual(['org', 'user_email', 'user', 'enrollment', 'audit']);
    expect(itemsOf(table, 'AUDIT#', res.org.id)).toEqual([
      expect.objectContaining({
        action: 'org_created',
        actor: { kind: 'operator', user_id: null, email: null },
        detail: { name: 'Beta', plan: 'team', owner_id: res.owner.id, owner_email: 'boss@beta.test' },
      }),
    ]);
  });
});

describe('herald user …', () => {
  it('add: the new user with their enrollment link (not e-mailed without a sender)', async () => {
    const res = await addOrgUser({
      orgId: ORG_ID,
      email: 'new@acme.test',
      role: 'member',
      consoleUrl: CONSOLE,
    });
    expect(res).toMatchObject({ email: 'new@acme.test', role: 'member', emailed: false });
    expect(table.get(keys.enrollment(hashSecret(tokenOf(res.enrollment.url))))).toMatchObject({
      user_id: res.id,
    });
  });

  it('add with --by: that user must be an owner', async () => {
    const err = await actErrorOf(
      addOrgUser({ orgId: ORG_ID, email: 'x@acme.test', role: 'member', consoleUrl: CONSOLE, by: ADMIN.id }),
    );
    expect(err.kind).toBe('forbidden');
  });

  it('enroll, list, role, remove', async () => {
    const enrolled = await enrollUser({ orgId: ORG_ID, userId: MEMBER.id, consoleUrl: CONSOLE });
    expect(enrolled).toMatchObject({ user_id: MEMBER.id, enrollment: { url: expect.any(String) } });
    expect((await setUserRole({ orgId: ORG_ID, userId: MEMBER.id, role: 'admin' })).role).toBe('admin');
    expect((await removeUser({ orgId: ORG_ID, userId: ADMIN.id })).id).toBe(ADMIN.id);
    expect((await listUsers({ orgId: ORG_ID })).data.map((u) => [u.id, u.role])).toEqual([
      [OWNER.id, 'owner'],
      [MEMBER.id, 'admin'],
    ]);
    expect((await actErrorOf(removeUser({ orgId: ORG_ID, userId: OWNER.id }))).kind).toBe('conflict');
    const log = await auditLog({ orgId: ORG_ID, limit: 2 });
    expect(log.data.map((e) => e.action)).toEqual(['member_removed', 'member_role_changed']);
    expect(
      (await auditLog({ orgId: ORG_ID, cursor: log.next_cursor ?? '' })).data.map((e) => e.action),
    ).toEqual(['enrollment_issued']);
  });
});

describe('herald key … and settings set', () => {
  it('act as the operator without --by, and check --by when given', async () => {
    const minted = await mintKey({ orgId: ORG_ID, scopes: ['posts:read'] });
    expect((await listKeys({ orgId: ORG_ID })).data.map((k) => k.created_by)).toEqual(['operator']);
    expect((await actErrorOf(revokeKey({ orgId: ORG_ID, keyId: minted.id, by: MEMBER.id }))).kind).toBe(
      'forbidden',
    );
    const revoked = await revokeKey({ orgId: ORG_ID, keyId: minted.id });
    expect(revoked).not.toHaveProperty('last_used_at');
    expect((await actErrorOf(revokeKey({ orgId: ORG_ID, keyId: minted.id }))).kind).toBe('conflict');

    expect(
      (await actErrorOf(setSettings({ orgId: ORG_ID, by: ADMIN.id, patch: { dangerous_ops: true } }))).kind,
    ).toBe('forbidden');
    const set = await setSettings({ orgId: ORG_ID, patch: { dangerous_ops: true } });
    expect(set.settings.dangerous_ops).toBe(true);
    expect(
      itemsOf(table, 'AUDIT#')
        .filter((e) => e.action !== 'act_refused')
        .map((e) => [e.action, (e.actor as { kind: string }).kind]),
    ).toEqual([
      ['key_minted', 'operator'],
      ['key_revoked', 'operator'],
      ['settings_changed', 'operator'],
    ]);
  });
});
