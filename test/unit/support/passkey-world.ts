import { beforeEach } from 'vitest';
import { putEnrollment } from '#adapters/enrollments';
import { keys } from '#adapters/keys';
import type { User } from '#core/accounts';
import { ActError, ENROLLMENT_TTL_MS, hashSecret, newSecretToken } from '#core/people';
import { dynamo } from '#shared/clients';
import { beginEnrollment, finishEnrollment, type RelyingParty } from '#usecases/passkeys';
import { FakeDynamo, type Item } from '../faults/support/dynamo.ts';
import { SoftAuthenticator } from './authenticator.ts';
import { fixedId, ORG_ID, OTHER_ORG_ID, org } from './fixtures.ts';

// The table behind the production DynamoDB client (the SDK runs for real above the socket), two
// organizations and their people, enrollment links, and a helper that enrolls a person with a
// software authenticator — for the passkey and console session tests.

export const RP: RelyingParty = { id: 'console.example', name: 'Herald', origin: 'https://console.example' };
export const T0 = new Date('2030-03-01T10:00:00.000Z');
export const at = (ms: number) => new Date(T0.getTime() + ms);
export const MIN = 60_000;

const user = (n: number, role: User['role'], orgId = ORG_ID): User => ({
  id: fixedId('user', n),
  org_id: orgId,
  email: `person${n}@acme.example`,
  role,
  created_at: '2030-01-01T00:00:00.000Z',
});

export const ALICE = user(1, 'owner');
export const BOB = user(2, 'admin');
export const CAROL = user(3, 'member');
/** Of another organization. */
export const DAVE = user(4, 'owner', OTHER_ORG_ID);

export const userItem = (u: User): Item => ({ ...keys.user(u.org_id, u.id), entity: 'user', ...u });

export function usePasskeyWorld() {
  const table = new FakeDynamo();
  table.install(dynamo);
  beforeEach(() => {
    table.reset([
      { ...keys.org(ORG_ID), entity: 'org', ...org() },
      { ...keys.org(OTHER_ORG_ID), entity: 'org', ...org({}, OTHER_ORG_ID), name: 'Other' },
      ...[ALICE, BOB, CAROL, DAVE].map(userItem),
    ]);
  });
  return table;
}

/** A fresh enrollment link's token for `u`, issued at `now`. */
export async function issueLink(u: User, now = T0): Promise<string> {
  const token = newSecretToken();
  await putEnrollment(hashSecret(token), {
    org_id: u.org_id,
    user_id: u.id,
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + ENROLLMENT_TTL_MS).toISOString(),
    issued_by: 'operator',
  });
  return token;
}

let sources = 0;
/** A source address of its own, so the rate limit never meets a test that does not test it. */
export const freshSource = () => `198.51.100.${++sources % 250}-${sources}`;

/** Enrolls `u` through a new link with `auth` (a new authenticator unless given); the new session. */
export async function enroll(u: User, auth = new SoftAuthenticator(RP.origin), now = T0) {
  const token = await issueLink(u, now);
  const source = freshSource();
  const begun = await beginEnrollment({ token, rp: RP, source, now });
  const response = auth.create(begun.options);
  const started = await finishEnrollment({ ceremonyId: begun.ceremonyId, response, rp: RP, source, now });
  return { ...started, auth, token };
}

/** The ActError `promise` rejects with. */
export async function refusal(promise: Promise<unknown>): Promise<ActError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ActError) return err;
    throw new Error(`expected an ActError, got ${String(err)}`);
  }
  throw new Error('expected an ActError, the promise resolved');
}

/** The table's items but the ceremonies and attempt counters (for "nothing was written"). */
export function stored(table: FakeDynamo): string {
  return JSON.stringify(
    [...table.items.values()]
      .filter((i) => !/^(CEREMONY|ATTEMPTS)#/.test(String(i.pk)))
      .sort((a, b) => `${a.pk}${a.sk}`.localeCompare(`${b.pk}${b.sk}`)),
  );
}
