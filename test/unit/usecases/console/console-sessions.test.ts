import { describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import { hashSecret, newSecretToken, SESSION_ABSOLUTE_MS } from '#core/people';
import { newSession, peekSession, resolveSession, signOut } from '#usecases/console-sessions';
import { consoleGate } from '#usecases/support/console-gate';
import { ORG_ID } from '../../support/fixtures.ts';
import {
  ALICE,
  at,
  BOB,
  CAROL,
  DAVE,
  enroll,
  MIN,
  T0,
  usePasskeyWorld,
  userItem,
} from '../../support/passkey-world.ts';

// Console sessions: a cookie `<org>~<user>~<secret>` stored by its hash; one BatchGet of the
// session and its user per request; idle (1 h) and absolute (12 h) expiry; a demoted or removed
// user's session ended (deleted); last-seen written at most every 5 minutes; sign-out at once.

const table = usePasskeyWorld();
const H = 60 * MIN;

const sessionItem = (cookie: string) => table.get(keys.consoleSession(hashSecret(cookie)));

describe('resolveSession', () => {
  it('answers the person behind a fresh session in one BatchGet, writing nothing', async () => {
    const { cookie } = await enroll(BOB);
    table.calls.length = 0;
    const me = await resolveSession(cookie, at(MIN));
    expect(me?.user).toEqual(BOB);
    expect(me?.session).toMatchObject({ org_id: ORG_ID, user_id: BOB.id, role: 'admin' });
    expect(table.calls.map((c) => c.op)).toEqual(['BatchGetItem']);
    expect(await consoleGate.resolve(cookie, at(MIN))).toEqual(me);
  });

  it('touches last-seen at most every five minutes, with a conditional update', async () => {
    const { cookie } = await enroll(BOB);
    table.calls.length = 0;
    await resolveSession(cookie, at(4 * MIN));
    expect(table.callsOf('UpdateItem')).toEqual([]);
    const me = await resolveSession(cookie, at(6 * MIN));
    expect(me?.session.seen_at).toBe(at(6 * MIN).toISOString());
    const [touch] = table.callsOf('UpdateItem');
    expect(String(touch?.view.raw.ConditionExpression)).toContain('= :prev');
    expect(sessionItem(cookie)?.seen_at).toBe(at(6 * MIN).toISOString());
  });

  it('ends a session idle for an hour, and deletes it', async () => {
    const { cookie } = await enroll(BOB);
    expect(await resolveSession(cookie, at(H - 1))).not.toBeNull();
    expect(sessionItem(cookie)?.seen_at).toBe(at(H - 1).toISOString());
    // Idle is counted from the last touch.
    expect(await resolveSession(cookie, at(2 * H - 2))).not.toBeNull();
    expect(await resolveSession(cookie, at(3 * H - 2))).toBeNull();
    expect(sessionItem(cookie)).toBeUndefined();
    expect(await resolveSession(cookie, at(3 * H - 2))).toBeNull();
  });

  it('ends a session twelve hours after sign-in however active it is', async () => {
    const { cookie } = await enroll(BOB);
    for (let t = 50 * MIN; t < SESSION_ABSOLUTE_MS; t += 50 * MIN) {
      expect(await resolveSession(cookie, at(t))).not.toBeNull();
    }
    expect(await resolveSession(cookie, at(SESSION_ABSOLUTE_MS))).toBeNull();
    expect(sessionItem(cookie)).toBeUndefined();
  });

  it('ends the session of a user demoted below its role, or removed; keeps it on promotion', async () => {
    const bob = await enroll(BOB);
    table.seed(userItem({ ...BOB, role: 'member' }));
    expect(await resolveSession(bob.cookie, T0)).toBeNull();
    expect(sessionItem(bob.cookie)).toBeUndefined();
    // Promoted back, the ended session stays ended.
    table.seed(userItem(BOB));
    expect(await resolveSession(bob.cookie, T0)).toBeNull();

    const carol = await enroll(CAROL);
    table.seed(userItem({ ...CAROL, role: 'owner' }));
    expect((await resolveSession(carol.cookie, T0))?.user.role).toBe('owner');

    const alice = await enroll(ALICE);
    table.items.delete(`${keys.user(ORG_ID, ALICE.id).pk}\u0000${keys.user(ORG_ID, ALICE.id).sk}`);
    expect(await resolveSession(alice.cookie, T0)).toBeNull();
    expect(sessionItem(alice.cookie)).toBeUndefined();
  });

  it('answers null for a tampered, foreign or malformed cookie, leaving the real session alone', async () => {
    const { cookie } = await enroll(BOB);
    const dave = await enroll(DAVE);
    const [org, user, secret] = cookie.split('~') as [string, string, string];
    const flipped = `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;
    const bad = [
      `${org}~${user}~${flipped}`,
      `${org}~${ALICE.id}~${secret}`,
      `${DAVE.org_id}~${user}~${secret}`,
      // Dave's secret under Bob's names: hashes to nothing.
      `${org}~${user}~${dave.cookie.split('~')[2]}`,
      `${org}~${user}~${newSecretToken()}`,
      `${cookie}~x`,
      `${org}~${user}`,
      secret,
      '',
      undefined,
      '~~',
      `${org}~${user}~${'A'.repeat(43)}`,
      'x'.repeat(10_000),
    ];
    table.calls.length = 0;
    for (const c of bad) expect(await resolveSession(c, T0)).toBeNull();
    expect(table.calls.filter((c) => c.applied)).toEqual([]);
    expect(await resolveSession(cookie, T0)).not.toBeNull();
  });
});

describe('signOut', () => {
  it('ends the session at once and records signed_out once', async () => {
    const { cookie, session } = await enroll(BOB);
    await signOut(cookie, at(MIN));
    expect(sessionItem(cookie)).toBeUndefined();
    expect(await resolveSession(cookie, at(MIN))).toBeNull();
    await signOut(cookie, at(2 * MIN));
    const outs = table.all('AUDIT#').filter((e) => e.action === 'signed_out');
    expect(outs).toHaveLength(1);
    expect(outs[0]).toMatchObject({
      org_id: ORG_ID,
      at: at(MIN).toISOString(),
      actor: { kind: 'person', user_id: BOB.id, email: BOB.email },
      detail: { session: session.id },
    });
  });

  it('does nothing for a tampered or missing cookie, and ends only its own session', async () => {
    const bob = await enroll(BOB);
    const other = await enroll(BOB);
    const [org, user] = bob.cookie.split('~');
    for (const c of [undefined, '', `${org}~${user}~${newSecretToken()}`, 'garbage']) await signOut(c, T0);
    await signOut(other.cookie, T0);
    expect(await resolveSession(bob.cookie, T0)).not.toBeNull();
    expect(await resolveSession(other.cookie, T0)).toBeNull();
  });
});

describe('newSession', () => {
  it('makes a cookie naming the org and user with a 256-bit secret, stored only by its hash', () => {
    const s = newSession(ORG_ID, BOB.id, 'admin', T0, 'cred-1');
    const [org, user, secret] = s.cookie.split('~');
    expect([org, user]).toEqual([ORG_ID, BOB.id]);
    expect(Buffer.from(String(secret), 'base64url')).toHaveLength(32);
    expect(s.hash).toBe(hashSecret(s.cookie));
    expect(s.session).toMatchObject({
      role: 'admin',
      created_at: T0.toISOString(),
      seen_at: T0.toISOString(),
      expires_at: at(SESSION_ABSOLUTE_MS).toISOString(),
    });
    expect(JSON.stringify(s.session)).not.toContain(String(secret));
  });
});

describe('peekSession (the 404 of an address no page serves: read only)', () => {
  it('answers as resolveSession does, and never writes: no touch, no delete of an ended session', async () => {
    const { cookie } = await enroll(BOB);
    table.calls.length = 0;
    expect((await peekSession(cookie, at(10 * MIN)))?.user).toEqual(BOB);
    // Idle for an hour: refused, but left for resolveSession to end.
    expect(await peekSession(cookie, at(2 * H))).toBeNull();
    expect(table.calls.map((c) => c.op)).toEqual(['BatchGetItem', 'BatchGetItem']);
    expect(sessionItem(cookie)).toBeDefined();
    expect(await peekSession('not-a-cookie', at(MIN))).toBeNull();
    expect(await consoleGate.peek?.(cookie, at(10 * MIN))).not.toBeNull();
  });
});
