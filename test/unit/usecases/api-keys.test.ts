import { describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import { hashApiKey } from '#core/accounts';
import { OPERATOR } from '#core/people';
import { listKeys, mintKey, revokeKey } from '#usecases/api-keys';
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
  person,
  STRANGER,
  usePeopleTable,
} from '../support/people.ts';

// An organization's API keys from the console and the CLI: listed by every member with when each
// was last used (from the request gate's item, no write of its own), minted and revoked by owners
// and admins, each act audited in its own transaction.

const table = usePeopleTable();

const mint = (actor = person(ADMIN), scopes: string[] = ['posts:read'], name?: string) =>
  mintKey({ orgId: ORG_ID, actor, scopes, name, now: NOW });
const revoke = (keyId: string, actor = person(ADMIN)) => revokeKey({ orgId: ORG_ID, actor, keyId, now: NOW });
const minute = (iso: string) => Math.floor(Date.parse(iso) / 60_000);

describe('listKeys', () => {
  it("shows every member the keys, without secrets, last used at the gate's minute (this month or last)", async () => {
    // Arrange: k1 used this month, k2 last month only, k3 never; k1's window is also in May.
    const [k1, k2, k3] = [1, 2, 3].map((n) => apiKey({ scopes: ['posts:read'], n }));
    table.seed(
      ...[k1, k2, k3].map((k) => apiKeyItem(k as ReturnType<typeof apiKey>)),
      {
        ...keys.usage(ORG_ID, '2030-06'),
        api_requests: 7,
        [k1?.record.id as string]: { w: minute('2030-06-10T09:12:00.000Z'), n: 3 },
      },
      {
        ...keys.usage(ORG_ID, '2030-05'),
        api_requests: 9,
        [k1?.record.id as string]: { w: minute('2030-05-30T08:00:00.000Z'), n: 1 },
        [k2?.record.id as string]: { w: minute('2030-05-31T23:59:00.000Z'), n: 1 },
      },
    );

    // Act
    const shown = await listKeys({ orgId: ORG_ID, actor: person(MEMBER), now: NOW });

    // Assert: newest first.
    expect(shown.map((k) => [k.id, k.last_used_at])).toEqual([
      [k3?.record.id, null],
      [k2?.record.id, '2030-05-31T23:59:00.000Z'],
      [k1?.record.id, '2030-06-10T09:12:00.000Z'],
    ]);
    expect(Object.keys(shown[0] ?? {}).sort()).toEqual(
      [
        'created_at',
        'created_by',
        'created_by_email',
        'id',
        'last_used_at',
        'name',
        'prefix',
        'revoked_at',
        'scopes',
      ].sort(),
    );
    // The creator by their e-mail while they are a member of the organization.
    expect(shown.map((k) => k.created_by_email)).toEqual([OWNER.email, OWNER.email, OWNER.email]);
    // Reading it wrote nothing.
    expect(table.calls.filter((c) => c.applied)).toEqual([]);
  });

  it("never lists another organization's keys; its people are not_found here", async () => {
    table.seed(apiKeyItem(apiKey({ scopes: ['posts:read'], n: 5, orgId: OTHER_ORG_ID })));
    expect(await listKeys({ orgId: ORG_ID, actor: OPERATOR, now: NOW })).toEqual([]);
    expect((await actErrorOf(listKeys({ orgId: ORG_ID, actor: person(STRANGER), now: NOW }))).kind).toBe(
      'not_found',
    );
  });
});

describe('mintKey', () => {
  it('mints for an admin: the key once, its hash stored, key_minted audited in the same transaction', async () => {
    // Act
    const minted = await mint(person(ADMIN), ['posts:write', 'posts:read', 'posts:read'], '  CI  ');

    // Assert
    expect(minted).toMatchObject({ scopes: ['posts:read', 'posts:write'], name: 'CI' });
    const stored = table.get(keys.apiKey(hashApiKey(minted.key)));
    expect(stored).toMatchObject({ id: minted.id, org_id: ORG_ID, created_by: ADMIN.id, revoked_at: null });
    expect(JSON.stringify([...table.items.values()])).not.toContain(minted.key);
    const [tx] = appliedTransactionsPutting(table, 'AUDIT#');
    expect(tx?.view.items.map((i) => i.entity)).toEqual(['api_key', 'audit']);
    expect(itemsOf(table, 'AUDIT#').filter((e) => e.action !== 'act_refused')[0]).toMatchObject({
      action: 'key_minted',
      target: minted.id,
      actor: { kind: 'person', user_id: ADMIN.id, email: ADMIN.email },
      detail: { name: 'CI', scopes: ['posts:read', 'posts:write'] },
    });
  });

  it('refuses a member (forbidden), writing nothing; the operator mints as operator', async () => {
    const err = await actErrorOf(mint(person(MEMBER)));
    expect(err).toMatchObject({
      kind: 'forbidden',
      message: expect.stringMatching(
        /minting API keys needs the owner or admin role; member3@acme.test is a member/,
      ),
    });
    expect(table.all('APIKEY')).toEqual([]);

    const minted = await mint(OPERATOR);
    expect(table.get(keys.apiKey(hashApiKey(minted.key)))).toMatchObject({ created_by: 'operator' });
    expect(itemsOf(table, 'AUDIT#').filter((e) => e.action !== 'act_refused')[0]?.actor).toEqual({
      kind: 'operator',
      user_id: null,
      email: null,
    });
  });

  it("checks the CLI's --by: a member is forbidden, an unknown or foreign user not_found, an owner recorded", async () => {
    expect((await actErrorOf(mint(onBehalfOf(MEMBER)))).kind).toBe('forbidden');
    expect((await actErrorOf(mint(onBehalfOf(STRANGER)))).kind).toBe('not_found');
    await mint(onBehalfOf(OWNER));
    expect(itemsOf(table, 'AUDIT#').filter((e) => e.action !== 'act_refused')[0]?.actor).toEqual({
      kind: 'operator',
      user_id: OWNER.id,
      email: OWNER.email,
    });
  });

  it.each([
    [[], /at least one scope/],
    [['posts:read', 'posts:admin'], /unknown scope posts:admin/],
  ])('refuses scopes %j as invalid, writing nothing', async (scopes, message) => {
    const err = await actErrorOf(mint(person(OWNER), scopes));
    expect(err).toMatchObject({ kind: 'invalid', message: expect.stringMatching(message) });
    expect(table.calls.filter((c) => c.applied)).toEqual([]);
  });

  it('answers not_found for an unknown organization', async () => {
    const err = await actErrorOf(
      mintKey({ orgId: 'org_nope', actor: OPERATOR, scopes: ['posts:read'], now: NOW }),
    );
    expect(err.kind).toBe('not_found');
  });
});

describe('revokeKey', () => {
  it('revokes at the gate of this month and the next, audited; a second revocation is a clear conflict', async () => {
    // Arrange
    const minted = await mint();

    // Act
    const revoked = await revoke(minted.id);
    const again = await actErrorOf(revoke(minted.id, person(OWNER)));

    // Assert
    expect(revoked).toMatchObject({ id: minted.id, revoked_at: NOW.toISOString() });
    for (const month of ['2030-06', '2030-07'])
      expect(table.get(keys.usage(ORG_ID, month))?.[minted.id]).toEqual({ r: NOW.toISOString() });
    expect(again).toMatchObject({
      kind: 'conflict',
      message: `key ${minted.id} is already revoked (since ${NOW.toISOString()})`,
    });
    expect(
      itemsOf(table, 'AUDIT#')
        .filter((e) => e.action !== 'act_refused')
        .map((e) => e.action),
    ).toEqual(['key_minted', 'key_revoked']);
    const [tx] = appliedTransactionsPutting(table, 'AUDIT#').slice(-1);
    expect(tx?.view.keys).toContainEqual(keys.usage(ORG_ID, '2030-06'));
  });

  it('keeps the last use through the revocation, in the list (months later too) and in the audit entry', async () => {
    const used = apiKey({ scopes: ['posts:read'], n: 4 });
    const unused = apiKey({ scopes: ['posts:read'], n: 5 });
    table.seed(apiKeyItem(used), apiKeyItem(unused), {
      ...keys.usage(ORG_ID, '2030-06'),
      api_requests: 1,
      [used.record.id]: { w: minute('2030-06-10T09:12:00.000Z'), n: 1 },
    });

    await revoke(used.record.id);
    await revoke(unused.record.id);

    const lastUse = (now: Date) =>
      listKeys({ orgId: ORG_ID, actor: person(MEMBER), now }).then((ks) =>
        Object.fromEntries(ks.map((k) => [k.id, k.last_used_at])),
      );
    for (const now of [NOW, new Date('2030-10-01T00:00:00.000Z')])
      expect(await lastUse(now)).toEqual({
        [used.record.id]: '2030-06-10T09:12:00.000Z',
        [unused.record.id]: null,
      });
    const details = itemsOf(table, 'AUDIT#')
      .filter((e) => e.action !== 'act_refused')
      .filter((e) => e.action === 'key_revoked')
      .map((e) => [e.target, e.detail]);
    expect(details).toEqual([
      [used.record.id, { last_used_at: '2030-06-10T09:12:00.000Z' }],
      [unused.record.id, { last_used_at: null }],
    ]);
  });

  it('of two revocations at once, one is refused: the gate item is conditioned on the key being live there', async () => {
    const minted = await mint();
    holdTransactions(2);
    const results = await Promise.allSettled([revoke(minted.id), revoke(minted.id, person(OWNER))]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(results.find((r) => r.status === 'rejected')).toMatchObject({ reason: { kind: 'conflict' } });
    expect(
      itemsOf(table, 'AUDIT#')
        .filter((e) => e.action !== 'act_refused')
        .filter((e) => e.action === 'key_revoked'),
    ).toHaveLength(1);
  });

  it("refuses a member, and answers not_found for another organization's key", async () => {
    const minted = await mint();
    expect((await actErrorOf(revoke(minted.id, person(MEMBER)))).kind).toBe('forbidden');
    const foreign = apiKey({ scopes: ['posts:read'], n: 8, orgId: OTHER_ORG_ID });
    table.seed(apiKeyItem(foreign));
    expect((await actErrorOf(revoke(foreign.record.id))).kind).toBe('not_found');
    expect(table.get(keys.apiKey(foreign.hash))).toMatchObject({ revoked_at: null });
    expect(table.get(keys.usage(ORG_ID, '2030-06'))).toBeUndefined();
  });
});

describe('hidden characters in names', () => {
  it('refuses a key name with a bidi override or another invisible format character; an emoji joiner is fine', async () => {
    for (const name of ['deploy\u202Egnp.exe', 'ci\u2066bot', 'o\uFEFFps'])
      expect(await actErrorOf(mint(person(ADMIN), ['posts:read'], name))).toMatchObject({
        kind: 'invalid',
        message: expect.stringMatching(/invisible/),
      });
    expect(itemsOf(table, 'AUDIT#').filter((e) => e.action === 'key_minted')).toEqual([]);
    await expect(mint(person(ADMIN), ['posts:read'], 'team \u{1F468}\u200D\u{1F469}')).resolves.toBeDefined();
  });
});
