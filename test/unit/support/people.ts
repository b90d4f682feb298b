import { beforeEach } from 'vitest';
import { keys } from '#adapters/keys';
import type { Org, Role, User } from '#core/accounts';
import { ActError, type Actor } from '#core/people';
import { dynamo } from '#shared/clients';
import { FakeDynamo, type Item } from '../faults/support/dynamo.ts';
import { CREATED_AT, fixedId, ORG_ID, OTHER_ORG_ID, org, orgItem } from './fixtures.ts';

// The people of an organization in an in-memory table with DynamoDB's semantics (the fault suite's
// FakeDynamo behind the production client): an organization with an owner, an admin and a member,
// and a second organization with its own owner, for the console's and the CLI's acts.

export const NOW = new Date('2030-06-10T09:30:00.000Z');

export const user = (n: number, role: Role, orgId = ORG_ID, email = `${role}${n}@acme.test`): User => ({
  id: fixedId('user', n),
  org_id: orgId,
  email,
  role,
  created_at: CREATED_AT,
});

export const OWNER = user(1, 'owner');
export const ADMIN = user(2, 'admin');
export const MEMBER = user(3, 'member');
/** The owner of OTHER_ORG_ID. */
export const STRANGER = user(9, 'owner', OTHER_ORG_ID, 'owner@other.test');

export const person = (u: User): Actor => ({ kind: 'person', userId: u.id });
export const onBehalfOf = (u: User): Actor => ({ kind: 'operator', onBehalfOf: u.id });

/** A user as the table stores it, with the guard that keeps its email unique in the org. */
export const userItems = (u: User): Item[] => [
  { ...keys.user(u.org_id, u.id), entity: 'user', ...u },
  { ...keys.userEmail(u.org_id, u.email), entity: 'user_email', user_id: u.id },
];

export const passkeyItem = (u: User, credentialId: string): Item => ({
  ...keys.passkey(u.org_id, u.id, credentialId),
  entity: 'passkey',
  org_id: u.org_id,
  user_id: u.id,
  credential_id: credentialId,
  public_key: 'cHVibGlj',
  counter: 0,
  transports: ['internal'],
  name: 'Passkey',
  created_at: CREATED_AT,
  last_used_at: null,
});

/**
 * The table, reset before each test to: ORG_ID (owner_count as given; absent as an organization
 * created before the counter) with OWNER, ADMIN and MEMBER, and OTHER_ORG_ID with STRANGER.
 */
export function usePeopleTable(opts: { ownerCount?: number | null } = {}) {
  const table = new FakeDynamo();
  beforeEach(() => {
    // Installed again before each test: a test's holdTransactions never outlives it.
    table.install(dynamo);
    const count = opts.ownerCount === undefined ? 1 : opts.ownerCount;
    const acme: Org = { ...org(), ...(count === null ? {} : { owner_count: count }) };
    table.reset([
      orgItem(acme),
      orgItem({ ...org({}, OTHER_ORG_ID), name: 'Other', owner_count: 1 }),
      ...[OWNER, ADMIN, MEMBER, STRANGER].flatMap(userItems),
    ]);
  });
  return table;
}

/** Items whose sort key starts with `prefix` in organization `orgId`. */
export const itemsOf = (table: FakeDynamo, prefix: string, orgId = ORG_ID) =>
  table.all(prefix).filter((i) => i.pk === `ORG#${orgId}`);

/** The ActError `promise` rejects with; fails the test otherwise. */
export async function actErrorOf(promise: Promise<unknown>): Promise<ActError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ActError)) throw new Error(`expected an ActError, got ${String(err)}`);
  return err;
}

/** The TransactWriteItems the table applied whose puts include one under `skPrefix`. */
export function appliedTransactionsPutting(table: FakeDynamo, skPrefix: string) {
  return table.callsOf(
    'TransactWriteItems',
    (c) => c.applied && c.view.items.some((i) => String(i.sk).startsWith(skPrefix)),
  );
}

interface Handler {
  handle(request: { headers: Record<string, string>; body?: unknown }): Promise<unknown>;
}

/**
 * Holds the next `n` TransactWriteItems until all `n` have arrived, then lets them through in
 * arrival order: acts started together have all read the table before any of them writes, the
 * worst interleaving for a check made on what was read.
 */
export function holdTransactions(n: number): void {
  holdWrites(n, (target) => target === 'TransactWriteItems');
}

/** holdTransactions for the writes of post items: PutItem, UpdateItem, DeleteItem or a transaction naming one. */
export function holdPostWrites(n: number): void {
  holdWrites(
    n,
    (target, body) =>
      ['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems'].includes(target) &&
      body.includes('"POST#'),
  );
}

/** Holds the next `n` requests `match` picks (by operation and wire body), as holdTransactions. */
export function holdWrites(n: number, match: (target: string, body: string) => boolean): void {
  const handler = (dynamo.config as unknown as { requestHandler: Handler }).requestHandler;
  const original = handler.handle.bind(handler);
  const held: Array<() => void> = [];
  handler.handle = async (request) => {
    const target = String(request.headers['x-amz-target']).split('.').at(-1) ?? '';
    if (!match(target, new TextDecoder().decode(request.body as Uint8Array))) return original(request);
    const turn = new Promise<void>((release) => held.push(release));
    if (held.length === n) {
      handler.handle = original;
      for (const release of held) release();
    }
    await turn;
    return original(request);
  };
}
