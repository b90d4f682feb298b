import { describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import { OPERATOR } from '#core/people';
import { listAuditLog } from '#usecases/audit-log';
import { getSettings, updateSettings } from '#usecases/settings';
import { ORG_ID, OTHER_ORG_ID } from '../support/fixtures.ts';
import {
  ADMIN,
  actErrorOf,
  appliedTransactionsPutting,
  itemsOf,
  MEMBER,
  NOW,
  OWNER,
  onBehalfOf,
  person,
  STRANGER,
  usePeopleTable,
} from '../support/people.ts';

// The workspace settings (seen by every member, changed by owners, audited in the same
// transaction) and the audit log (owners; newest first; signed cursors).

const table = usePeopleTable();

const update = (patch: Record<string, unknown>, actor = person(OWNER)) =>
  updateSettings({ orgId: ORG_ID, actor, patch, now: NOW });

describe('settings', () => {
  it('are seen by every member', async () => {
    const { settings } = await getSettings({ orgId: ORG_ID, actor: person(MEMBER) });
    expect(settings).toEqual({ dangerous_ops: false, approval_required: false, landing_origins: [] });
  });

  it('are changed by an owner: origins normalized, the entry in the same transaction', async () => {
    // Act
    const res = await update({
      dangerous_ops: true,
      landing_origins: ['https://APP.example.com:443/', 'https://app.example.com', ' http://localhost:5173 '],
    });

    // Assert
    const expected = {
      dangerous_ops: true,
      approval_required: false,
      landing_origins: ['https://app.example.com', 'http://localhost:5173'],
    };
    expect(res).toEqual({ org_id: ORG_ID, settings: expected });
    expect(table.get(keys.org(ORG_ID))?.settings).toEqual(expected);
    const [tx] = appliedTransactionsPutting(table, 'AUDIT#');
    expect(tx?.view.keys).toEqual([keys.org(ORG_ID)]);
    expect(itemsOf(table, 'AUDIT#')[0]).toMatchObject({
      action: 'settings_changed',
      target: null,
      actor: { kind: 'person', user_id: OWNER.id, email: OWNER.email },
      detail: { dangerous_ops: true, landing_origins: expected.landing_origins },
    });
  });

  it('refuse an admin and a member (forbidden), changing nothing; the operator may, as operator', async () => {
    for (const actor of [person(ADMIN), person(MEMBER), onBehalfOf(ADMIN)])
      expect((await actErrorOf(update({ dangerous_ops: true }, actor))).kind).toBe('forbidden');
    expect(table.get(keys.org(ORG_ID))?.settings).toMatchObject({ dangerous_ops: false });
    expect(itemsOf(table, 'AUDIT#').filter((e) => e.action !== 'act_refused')).toEqual([]);

    await update({ approval_required: true }, OPERATOR);
    const changed = itemsOf(table, 'AUDIT#').find((e) => e.action === 'settings_changed');
    expect(changed?.actor).toEqual({ kind: 'operator', user_id: null, email: null });
  });

  it('refuse a form read before another change (conflict), changing nothing; the CLI sends no version', async () => {
    const read = (await getSettings({ orgId: ORG_ID, actor: person(OWNER) })).version;
    const whole = { dangerous_ops: false, approval_required: true, landing_origins: [] };
    await updateSettings({ orgId: ORG_ID, actor: person(OWNER), patch: whole, version: read, now: NOW });
    const now = (await getSettings({ orgId: ORG_ID, actor: person(OWNER) })).version;
    expect(now).not.toBe(read);

    // The tab opened before it: would turn approval off again.
    const stale = { dangerous_ops: true, approval_required: false, landing_origins: [] };
    const e = await actErrorOf(
      updateSettings({ orgId: ORG_ID, actor: person(OWNER), patch: stale, version: read, now: NOW }),
    );
    expect(e).toMatchObject({ kind: 'conflict', message: expect.stringMatching(/changed .*meanwhile/) });
    expect(table.get(keys.org(ORG_ID))?.settings).toMatchObject({
      dangerous_ops: false,
      approval_required: true,
    });
    expect(itemsOf(table, 'AUDIT#').filter((a) => a.action === 'settings_changed')).toHaveLength(1);

    await updateSettings({ orgId: ORG_ID, actor: person(OWNER), patch: stale, version: now, now: NOW });
    await update({ approval_required: true });
    expect(table.get(keys.org(ORG_ID))?.settings).toMatchObject({
      dangerous_ops: true,
      approval_required: true,
    });
  });

  it('leave a refused act in the audit log: once per person and act a minute, however many are refused', async () => {
    for (let i = 0; i < 5; i++) await actErrorOf(update({ dangerous_ops: true }, person(MEMBER)));
    await actErrorOf(update({ dangerous_ops: true }, person(ADMIN)));
    await actErrorOf(listAuditLog({ orgId: ORG_ID, actor: person(MEMBER) }));

    const refused = itemsOf(table, 'AUDIT#')
      .filter((e) => e.action === 'act_refused')
      .map((e) => [(e.actor as { user_id: string }).user_id, e.detail]);
    expect(refused).toEqual(
      expect.arrayContaining([
        [MEMBER.id, { act: 'changing workspace settings', role: 'member' }],
        [ADMIN.id, { act: 'changing workspace settings', role: 'admin' }],
      ]),
    );
    expect(refused).toHaveLength(3);
    expect(table.get(keys.org(ORG_ID))?.settings).toMatchObject({ dangerous_ops: false });
  });

  it.each([
    [{ landing_origins: ['https://app.example.com/path'] }, /is not an origin/],
    [{ dangerous_ops: 'yes' }, /on or off/],
    [{ colour: 'red' }, /no such setting: colour/],
    [{}, /nothing to set/],
  ])('refuse %j as invalid', async (patch, message) => {
    expect(await actErrorOf(update(patch))).toMatchObject({
      kind: 'invalid',
      message: expect.stringMatching(message),
    });
  });

  it('of another organization are not_found to a person of this one', async () => {
    const err = await actErrorOf(
      updateSettings({ orgId: OTHER_ORG_ID, actor: person(OWNER), patch: { dangerous_ops: true }, now: NOW }),
    );
    expect(err.kind).toBe('not_found');
    expect(table.get(keys.org(OTHER_ORG_ID))?.settings).toMatchObject({ dangerous_ops: false });
  });
});

describe('listAuditLog', () => {
  /** Three acts, oldest first. */
  async function threeActs() {
    await update({ dangerous_ops: true });
    await update({ dangerous_ops: false }, OPERATOR);
    await update({ approval_required: true }, onBehalfOf(OWNER));
  }

  it('shows owners the entries newest first, a page at a time, with a signed cursor', async () => {
    // Arrange
    await threeActs();

    // Act
    const first = await listAuditLog({ orgId: ORG_ID, actor: person(OWNER), limit: 2 });
    const second = await listAuditLog({
      orgId: ORG_ID,
      actor: person(OWNER),
      limit: 2,
      cursor: first.next_cursor ?? undefined,
    });

    // Assert
    expect(first.data.map((e) => e.detail)).toEqual([{ approval_required: true }, { dangerous_ops: false }]);
    expect(first.data.map((e) => e.actor.kind)).toEqual(['operator', 'operator']);
    expect(first.data[0]?.actor.user_id).toBe(OWNER.id);
    expect(first.next_cursor).toEqual(expect.any(String));
    expect(second.data.map((e) => e.detail)).toEqual([{ dangerous_ops: true }]);
    expect(second.next_cursor).toBeNull();
    expect(first.data[0]).not.toHaveProperty('ttl');
  });

  it('pages 25 by default; refuses a limit above 100', async () => {
    await threeActs();
    expect((await listAuditLog({ orgId: ORG_ID, actor: OPERATOR })).data).toHaveLength(3);
    expect((await actErrorOf(listAuditLog({ orgId: ORG_ID, actor: OPERATOR, limit: 101 }))).kind).toBe(
      'invalid',
    );
  });

  it('refuses a tampered cursor and a cursor of another organization', async () => {
    await threeActs();
    const { next_cursor } = await listAuditLog({ orgId: ORG_ID, actor: OPERATOR, limit: 1 });
    const cursor = next_cursor as string;
    const tampered = `${cursor.slice(0, -2)}${cursor.endsWith('A') ? 'BB' : 'AA'}`;
    for (const bad of [tampered, 'garbage'])
      expect((await actErrorOf(listAuditLog({ orgId: ORG_ID, actor: OPERATOR, cursor: bad }))).kind).toBe(
        'invalid',
      );
    const elsewhere = await actErrorOf(listAuditLog({ orgId: OTHER_ORG_ID, actor: OPERATOR, cursor }));
    expect(elsewhere.kind).toBe('invalid');
  });

  it('is for owners: an admin and a member are refused; a stranger is not_found', async () => {
    expect((await actErrorOf(listAuditLog({ orgId: ORG_ID, actor: person(ADMIN) }))).kind).toBe('forbidden');
    expect((await actErrorOf(listAuditLog({ orgId: ORG_ID, actor: person(MEMBER) }))).kind).toBe('forbidden');
    expect((await actErrorOf(listAuditLog({ orgId: ORG_ID, actor: person(STRANGER) }))).kind).toBe(
      'not_found',
    );
  });
});
