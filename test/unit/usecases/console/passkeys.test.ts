import { describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import { ATTEMPTS_PER_MINUTE, hashSecret, newSecretToken } from '#core/people';
import { resolveSession } from '#usecases/console-sessions';
import {
  beginAddPasskey,
  beginEnrollment,
  beginSignIn,
  finishAddPasskey,
  finishEnrollment,
  finishSignIn,
  listPasskeys,
  removePasskey,
  signOutEverywhere,
} from '#usecases/passkeys';
import { SoftAuthenticator } from '../../support/authenticator.ts';
import { ORG_ID } from '../../support/fixtures.ts';
import {
  ALICE,
  at,
  BOB,
  DAVE,
  enroll,
  freshSource,
  issueLink,
  MIN,
  RP,
  refusal,
  stored,
  T0,
  usePasskeyWorld,
} from '../../support/passkey-world.ts';

// Passkeys end to end against a software authenticator (real P-256 keys, signatures, CBOR), with
// the table behind the production DynamoDB client: enrollment links, sign-in, a person's own
// passkeys, and every way an answer can be wrong.

const table = usePasskeyWorld();

const audit = () =>
  table
    .all('AUDIT#')
    .map((e) => ({ action: e.action, target: e.target, user: (e.actor as { user_id: string }).user_id }));

async function signIn(auth: SoftAuthenticator, now = T0, over: Parameters<SoftAuthenticator['get']>[1] = {}) {
  const source = freshSource();
  const begun = await beginSignIn({ rp: RP, source, now });
  const response = auth.get(begun.options, over);
  return {
    begun,
    response,
    finish: () => finishSignIn({ ceremonyId: begun.ceremonyId, response, rp: RP, source, now }),
  };
}

describe('enrollment', () => {
  it('goes from the link to a passkey, a session and a spent link', async () => {
    const token = await issueLink(ALICE);
    const source = freshSource();
    const begun = await beginEnrollment({ token, rp: RP, source, now: T0 });

    expect(begun).toMatchObject({ email: ALICE.email, orgName: 'Acme' });
    const o = begun.options;
    expect(o.rp).toEqual({ id: RP.id, name: RP.name });
    expect(Buffer.from(o.user.id, 'base64url').toString('utf8')).toBe(`${ORG_ID}/${ALICE.id}`);
    expect(o.user.name).toBe(ALICE.email);
    expect(o.authenticatorSelection).toMatchObject({
      residentKey: 'required',
      userVerification: 'preferred',
    });
    expect(o.attestation).toBe('none');
    expect(o.excludeCredentials).toEqual([]);
    expect(table.get(keys.ceremony(begun.ceremonyId))).toMatchObject({
      kind: 'enroll',
      challenge: o.challenge,
    });

    const auth = new SoftAuthenticator(RP.origin);
    const response = auth.create(o);
    const started = await finishEnrollment({
      ceremonyId: begun.ceremonyId,
      response,
      rp: RP,
      source,
      now: T0,
    });

    const cred = auth.credentials[0]!;
    const passkey = table.get(keys.passkey(ORG_ID, ALICE.id, cred.id));
    expect(passkey).toMatchObject({
      org_id: ORG_ID,
      user_id: ALICE.id,
      counter: 0,
      transports: ['internal'],
    });
    expect(String(passkey?.public_key).length).toBeGreaterThan(80);
    expect(passkey?.name).toBe('Passkey added 2030-03-01');

    expect(started.cookie.startsWith(`${ORG_ID}~${ALICE.id}~`)).toBe(true);
    expect(table.get(keys.consoleSession(hashSecret(started.cookie)))).toMatchObject({
      org_id: ORG_ID,
      user_id: ALICE.id,
      role: 'owner',
      ttl: Math.ceil(Date.parse(started.session.expires_at) / 1000),
    });
    expect(table.get(keys.enrollment(hashSecret(token)))).toBeUndefined();
    expect(table.get(keys.ceremony(begun.ceremonyId))).toBeUndefined();
    expect(audit()).toEqual([
      { action: 'passkey_added', target: cred.id, user: ALICE.id },
      { action: 'signed_in', target: null, user: ALICE.id },
    ]);
    // Nothing secret reaches the table: neither the link's token nor the cookie.
    expect(JSON.stringify([...table.items.values()])).not.toContain(token);
    expect(JSON.stringify([...table.items.values()])).not.toContain(started.cookie.split('~')[2]);

    expect((await resolveSession(started.cookie, T0))?.user.id).toBe(ALICE.id);
  });

  it('offers a second link its user’s passkeys as ones not to register again', async () => {
    const { auth } = await enroll(ALICE);
    const begun = await beginEnrollment({
      token: await issueLink(ALICE),
      rp: RP,
      source: freshSource(),
      now: T0,
    });
    expect(begun.options.excludeCredentials?.map((c) => c.id)).toEqual([auth.credentials[0]!.id]);
  });

  it('refuses a link used already, and nothing is written', async () => {
    const { token } = await enroll(ALICE);
    const before = stored(table);
    const e = await refusal(beginEnrollment({ token, rp: RP, source: freshSource(), now: T0 }));
    expect(e).toMatchObject({ kind: 'not_found' });
    expect(e.message).toMatch(/expired or was already used/);
    expect(stored(table)).toBe(before);
  });

  it('spends a link once even when two ceremonies were begun on it', async () => {
    const token = await issueLink(ALICE);
    const first = await beginEnrollment({ token, rp: RP, source: freshSource(), now: T0 });
    const second = await beginEnrollment({ token, rp: RP, source: freshSource(), now: T0 });
    const auth = new SoftAuthenticator(RP.origin);
    await finishEnrollment({
      ceremonyId: first.ceremonyId,
      response: auth.create(first.options),
      rp: RP,
      source: 's',
      now: T0,
    });
    const before = stored(table);

    const e = await refusal(
      finishEnrollment({
        ceremonyId: second.ceremonyId,
        response: auth.create(second.options),
        rp: RP,
        source: 's',
        now: T0,
      }),
    );
    expect(e).toMatchObject({ kind: 'not_found' });
    expect(stored(table)).toBe(before);
    expect(table.all(`PASSKEY#${ALICE.id}#`)).toHaveLength(1);
  });

  it('refuses an expired link, also when it expires between the options and the answer', async () => {
    const late = await issueLink(ALICE);
    const e = await refusal(
      beginEnrollment({ token: late, rp: RP, source: freshSource(), now: at(31 * MIN) }),
    );
    expect(e).toMatchObject({ kind: 'not_found' });

    const token = await issueLink(ALICE);
    const begun = await beginEnrollment({ token, rp: RP, source: freshSource(), now: at(29 * MIN) });
    const response = new SoftAuthenticator(RP.origin).create(begun.options);
    const before = stored(table);
    const e2 = await refusal(
      finishEnrollment({ ceremonyId: begun.ceremonyId, response, rp: RP, source: 's', now: at(31 * MIN) }),
    );
    expect(e2).toMatchObject({ kind: 'not_found' });
    expect(e2.message).toMatch(/expired or was already used/);
    expect(stored(table)).toBe(before);
    expect(table.all('PASSKEY#')).toEqual([]);
  });

  it('refuses a forged or empty link, and nothing is written', async () => {
    await issueLink(ALICE);
    const before = stored(table);
    for (const token of [newSecretToken(), '', 'x'.repeat(5000)]) {
      const e = await refusal(beginEnrollment({ token, rp: RP, source: freshSource(), now: T0 }));
      expect(e).toMatchObject({ kind: 'not_found' });
    }
    expect(stored(table)).toBe(before);
    expect(table.all('CEREMONY')).toEqual([]);
  });

  it('refuses an answer made for another origin or another rp id, and the ceremony is spent', async () => {
    for (const over of [
      { origin: 'https://evil.example' },
      { rpId: 'evil.example' },
      { origin: 'http://console.example' },
    ]) {
      const token = await issueLink(ALICE);
      const source = freshSource();
      const begun = await beginEnrollment({ token, rp: RP, source, now: T0 });
      const response = new SoftAuthenticator(RP.origin).create(begun.options, over);
      const before = stored(table);
      const e = await refusal(
        finishEnrollment({ ceremonyId: begun.ceremonyId, response, rp: RP, source, now: T0 }),
      );
      expect(e).toMatchObject({ kind: 'invalid' });
      expect(e.message).toMatch(/another site/);
      expect(stored(table)).toBe(before);
      // The link still works; the ceremony does not.
      expect(table.get(keys.enrollment(hashSecret(token)))).toBeDefined();
      const again = await refusal(
        finishEnrollment({ ceremonyId: begun.ceremonyId, response, rp: RP, source, now: T0 }),
      );
      expect(again.message).toMatch(/took too long/);
    }
  });

  it('refuses an answer to another challenge, a sign-in answer and a malformed one', async () => {
    const token = await issueLink(ALICE);
    const auth = new SoftAuthenticator(RP.origin);
    const other = await beginEnrollment({ token, rp: RP, source: freshSource(), now: T0 });
    const answers: Array<[unknown, RegExp]> = [
      [auth.create(other.options), /another attempt/],
      [auth.create(other.options, { type: 'webauthn.get' }), /malformed/],
      [null, /malformed/],
      ['text', /malformed/],
      [{ id: 'a', rawId: 'b', type: 'public-key', response: {} }, /malformed/],
      [
        {
          id: 'a',
          rawId: 'a',
          type: 'public-key',
          response: { clientDataJSON: 'e30', attestationObject: 'oA' },
        },
        /could not be verified/,
      ],
    ];
    for (const [response, message] of answers) {
      const begun = await beginEnrollment({ token, rp: RP, source: freshSource(), now: T0 });
      const e = await refusal(
        finishEnrollment({ ceremonyId: begun.ceremonyId, response, rp: RP, source: 's', now: T0 }),
      );
      expect(e.kind).toBe('invalid');
      expect(e.message).toMatch(message);
    }
    expect(table.all('PASSKEY#')).toEqual([]);
    expect(table.get(keys.enrollment(hashSecret(token)))).toBeDefined();
  });

  it('refuses an answer after the ceremony’s five minutes', async () => {
    const token = await issueLink(ALICE);
    const begun = await beginEnrollment({ token, rp: RP, source: freshSource(), now: T0 });
    const response = new SoftAuthenticator(RP.origin).create(begun.options);
    const e = await refusal(
      finishEnrollment({ ceremonyId: begun.ceremonyId, response, rp: RP, source: 's', now: at(5 * MIN) }),
    );
    expect(e.message).toMatch(/took too long/);
    expect(table.all('PASSKEY#')).toEqual([]);
  });

  it('refuses a link whose user was removed', async () => {
    const token = await issueLink(BOB);
    await table.reset([...table.items.values()].filter((i) => i.sk !== keys.user(ORG_ID, BOB.id).sk));
    const e = await refusal(beginEnrollment({ token, rp: RP, source: freshSource(), now: T0 }));
    expect(e).toMatchObject({ kind: 'not_found' });
  });

  it('limits attempts per source and minute, wrong links included', async () => {
    const source = freshSource();
    for (let i = 0; i < ATTEMPTS_PER_MINUTE; i++) {
      await refusal(beginEnrollment({ token: newSecretToken(), rp: RP, source, now: at(i * 100) }));
    }
    const token = await issueLink(ALICE);
    const e = await refusal(beginEnrollment({ token, rp: RP, source, now: at(30_000) }));
    expect(e).toMatchObject({ kind: 'rate_limited' });
    // Another address, or the next minute, is let through.
    await expect(
      beginEnrollment({ token, rp: RP, source: freshSource(), now: at(30_000) }),
    ).resolves.toBeDefined();
    await expect(beginEnrollment({ token, rp: RP, source, now: at(MIN) })).resolves.toBeDefined();
  });
});

describe('sign-in', () => {
  it('signs in with the passkey: discoverable options, counter and last use recorded, a session and signed_in', async () => {
    const { auth } = await enroll(ALICE);
    const { begun, finish } = await signIn(auth, at(MIN));
    expect(begun.options.allowCredentials ?? []).toEqual([]);
    expect(begun.options.rpId).toBe(RP.id);
    expect(begun.options.userVerification).toBe('preferred');

    const started = await finish();
    const cred = auth.credentials[0]!;
    expect(table.get(keys.passkey(ORG_ID, ALICE.id, cred.id))).toMatchObject({
      counter: 1,
      last_used_at: at(MIN).toISOString(),
    });
    expect(started.session).toMatchObject({ org_id: ORG_ID, user_id: ALICE.id, role: 'owner' });
    expect((await resolveSession(started.cookie, at(MIN)))?.user.email).toBe(ALICE.email);
    expect(audit().filter((e) => e.action === 'signed_in')).toHaveLength(2);
  });

  it('refuses a replayed answer: the ceremony is spent, and another ceremony has another challenge', async () => {
    const { auth } = await enroll(ALICE);
    const { begun, response, finish } = await signIn(auth);
    await finish();
    const before = stored(table);

    const again = await refusal(
      finishSignIn({ ceremonyId: begun.ceremonyId, response, rp: RP, source: 's', now: T0 }),
    );
    expect(again).toMatchObject({ kind: 'invalid', message: 'The sign-in took too long; try again.' });

    const fresh = await beginSignIn({ rp: RP, source: freshSource(), now: T0 });
    const other = await refusal(
      finishSignIn({ ceremonyId: fresh.ceremonyId, response, rp: RP, source: 's', now: T0 }),
    );
    expect(other.kind).toBe('invalid');
    expect(stored(table)).toBe(before);
  });

  it('refuses a counter that did not grow (a cloned authenticator), and nothing is written', async () => {
    const { auth } = await enroll(ALICE);
    await (await signIn(auth, T0, { counter: 5 })).finish();
    const before = stored(table);
    for (const counter of [5, 4, 0]) {
      const e = await refusal((await signIn(auth, T0, { counter })).finish());
      expect(e.kind).toBe('invalid');
      expect(e.message).toMatch(/counter/);
    }
    expect(stored(table)).toBe(before);
    await expect((await signIn(auth, T0, { counter: 6 })).finish()).resolves.toBeDefined();
  });

  it('accepts an authenticator that keeps no counter (always 0), time after time', async () => {
    const { auth } = await enroll(ALICE, new SoftAuthenticator(RP.origin, 0));
    await (await signIn(auth)).finish();
    await expect((await signIn(auth)).finish()).resolves.toBeDefined();
  });

  it('refuses an answer for another origin or rp id', async () => {
    const { auth } = await enroll(ALICE);
    for (const over of [{ origin: 'https://evil.example' }, { rpId: 'evil.example' }]) {
      const e = await refusal((await signIn(auth, T0, over)).finish());
      expect(e.message).toMatch(/another site/);
    }
    expect(table.all('AUDIT#').filter((e) => e.action === 'signed_in')).toHaveLength(1);
  });

  it('refuses a passkey presented as another user’s, or of another organization', async () => {
    const alice = await enroll(ALICE);
    const bob = await enroll(BOB);
    await enroll(DAVE);
    const bobCred = bob.auth.credentials[0]!;
    const handle = (orgId: string, userId: string) => Buffer.from(`${orgId}/${userId}`).toString('base64url');

    // Alice's passkey with Bob's (or Dave's) user handle: no such passkey under that user.
    for (const userHandle of [
      bobCred.userHandle,
      handle(DAVE.org_id, DAVE.id),
      handle('org_x', ALICE.id),
      'bm9wZQ',
      '',
    ]) {
      const e = await refusal((await signIn(alice.auth, T0, { userHandle })).finish());
      expect(e).toMatchObject({ kind: 'invalid', message: 'This passkey is not registered here.' });
    }

    // Bob's credential id and user handle, signed with Alice's key: the signature does not hold.
    const forged = await signIn(alice.auth, T0, { userHandle: bobCred.userHandle });
    const response = { ...forged.response, id: bobCred.id, rawId: bobCred.id };
    const e = await refusal(
      finishSignIn({ ceremonyId: forged.begun.ceremonyId, response, rp: RP, source: 's', now: T0 }),
    );
    expect(e).toMatchObject({ kind: 'invalid', message: 'The passkey could not be verified; try again.' });

    expect(
      audit()
        .filter((x) => x.action === 'signed_in')
        .map((x) => x.user),
    ).toEqual([ALICE.id, BOB.id, DAVE.id]);
  });

  it('refuses a passkey whose user was removed', async () => {
    const { auth } = await enroll(BOB);
    table.reset([...table.items.values()].filter((i) => i.sk !== keys.user(ORG_ID, BOB.id).sk));
    const e = await refusal((await signIn(auth)).finish());
    expect(e.message).toBe('This passkey is not registered here.');
  });

  it('limits sign-in attempts per source and minute', async () => {
    const source = freshSource();
    for (let i = 0; i < ATTEMPTS_PER_MINUTE; i++) await beginSignIn({ rp: RP, source, now: at(i * 1000) });
    const e = await refusal(beginSignIn({ rp: RP, source, now: at(59_000) }));
    expect(e).toMatchObject({ kind: 'rate_limited' });
    await expect(beginSignIn({ rp: RP, source: freshSource(), now: at(59_000) })).resolves.toBeDefined();
    await expect(beginSignIn({ rp: RP, source, now: at(MIN) })).resolves.toBeDefined();
  });
});

describe('a person’s own passkeys', () => {
  async function signedIn() {
    const started = await enroll(ALICE);
    const me = await resolveSession(started.cookie, T0);
    if (!me) throw new Error('no session');
    return { me, auth: started.auth };
  }

  it('adds another passkey (the first excluded), lists both, and signs in with either', async () => {
    const { me, auth } = await signedIn();
    const begun = await beginAddPasskey({ signedIn: me, rp: RP, now: at(MIN) });
    expect(begun.options.excludeCredentials?.map((c) => c.id)).toEqual([auth.credentials[0]!.id]);
    const phone = new SoftAuthenticator(RP.origin);
    const added = await finishAddPasskey({
      signedIn: me,
      ceremonyId: begun.ceremonyId,
      response: phone.create(begun.options),
      rp: RP,
      name: '  My   phone ',
      now: at(MIN),
    });
    expect(added).toEqual({
      id: phone.credentials[0]!.id,
      name: 'My phone',
      created_at: at(MIN).toISOString(),
      last_used_at: null,
    });
    expect((await listPasskeys(me)).map((p) => p.name)).toEqual(['Passkey added 2030-03-01', 'My phone']);
    expect(audit().at(-1)).toEqual({ action: 'passkey_added', target: added.id, user: ALICE.id });
    await expect((await signIn(phone)).finish()).resolves.toBeDefined();
    await expect((await signIn(auth)).finish()).resolves.toBeDefined();
  });

  it('refuses a ceremony begun by someone else, or an answer for another site', async () => {
    const { me } = await signedIn();
    const bob = await enroll(BOB);
    const bobMe = (await resolveSession(bob.cookie, T0))!;
    const begun = await beginAddPasskey({ signedIn: bobMe, rp: RP, now: T0 });
    const response = new SoftAuthenticator(RP.origin).create(begun.options);
    const e = await refusal(
      finishAddPasskey({ signedIn: me, ceremonyId: begun.ceremonyId, response, rp: RP, now: T0 }),
    );
    expect(e.kind).toBe('invalid');

    const mine = await beginAddPasskey({ signedIn: me, rp: RP, now: T0 });
    const evil = new SoftAuthenticator('https://evil.example').create(mine.options);
    const e2 = await refusal(
      finishAddPasskey({ signedIn: me, ceremonyId: mine.ceremonyId, response: evil, rp: RP, now: T0 }),
    );
    expect(e2.message).toMatch(/another site/);
    expect(await listPasskeys(me)).toHaveLength(1);
  });

  it('refuses to remove the last passkey, removes one of two, and the removed one no longer signs in', async () => {
    const { me, auth } = await signedIn();
    const first = auth.credentials[0]!.id;
    const last = await refusal(removePasskey(me, first, T0));
    expect(last.kind).toBe('conflict');
    expect(last.message).toMatch(/only passkey/);
    expect(await listPasskeys(me)).toHaveLength(1);

    const begun = await beginAddPasskey({ signedIn: me, rp: RP, now: T0 });
    const phone = new SoftAuthenticator(RP.origin);
    await finishAddPasskey({
      signedIn: me,
      ceremonyId: begun.ceremonyId,
      response: phone.create(begun.options),
      rp: RP,
      now: T0,
    });

    await removePasskey(me, first, at(MIN));
    expect((await listPasskeys(me)).map((p) => p.id)).toEqual([phone.credentials[0]!.id]);
    expect(audit().at(-1)).toEqual({ action: 'passkey_removed', target: first, user: ALICE.id });
    const e = await refusal((await signIn(auth, T0, { credential: auth.credentials[0]! })).finish());
    expect(e.message).toBe('This passkey is not registered here.');

    expect((await refusal(removePasskey(me, first, T0))).kind).toBe('not_found');
    expect((await refusal(removePasskey(me, phone.credentials[0]!.id, T0))).kind).toBe('conflict');
  });

  it('cannot see or remove another person’s passkey', async () => {
    const { me } = await signedIn();
    const bob = await enroll(BOB);
    const bobCred = bob.auth.credentials[0]!.id;
    expect((await listPasskeys(me)).map((p) => p.id)).not.toContain(bobCred);
    expect((await refusal(removePasskey(me, bobCred, T0))).kind).toBe('not_found');
    expect(table.get(keys.passkey(ORG_ID, BOB.id, bobCred))).toBeDefined();
  });
});

describe('ending sessions', () => {
  /** Alice with two devices: the laptop enrolled, the phone added; a session on each. */
  async function twoDevices() {
    const laptop = await enroll(ALICE);
    const me = (await resolveSession(laptop.cookie, T0))!;
    const begun = await beginAddPasskey({ signedIn: me, rp: RP, now: T0 });
    const phone = new SoftAuthenticator(RP.origin);
    await finishAddPasskey({
      signedIn: me,
      ceremonyId: begun.ceremonyId,
      response: phone.create(begun.options),
      rp: RP,
      now: T0,
    });
    const onPhone = await (await signIn(phone, at(MIN))).finish();
    return { laptop, me, phone, onPhone };
  }

  it('removing a lost device’s passkey ends the sessions it opened, and only those', async () => {
    const { laptop, me, onPhone, phone } = await twoDevices();
    expect(await resolveSession(onPhone.cookie, at(2 * MIN))).not.toBeNull();

    await removePasskey(me, phone.credentials[0]!.id, at(3 * MIN));
    expect(await resolveSession(onPhone.cookie, at(4 * MIN))).toBeNull();
    expect(await resolveSession(laptop.cookie, at(4 * MIN))).not.toBeNull();
  });

  it('signs a person out everywhere: every session of theirs ends, others’ stay, and it is recorded', async () => {
    const { laptop, me, onPhone } = await twoDevices();
    const bob = await enroll(BOB);
    await signOutEverywhere(me, at(3 * MIN));
    expect(await resolveSession(onPhone.cookie, at(4 * MIN))).toBeNull();
    expect(await resolveSession(laptop.cookie, at(4 * MIN))).toBeNull();
    expect(await resolveSession(bob.cookie, at(4 * MIN))).not.toBeNull();
    expect(audit().filter((e) => e.action === 'signed_out_everywhere')).toEqual([
      { action: 'signed_out_everywhere', target: null, user: ALICE.id },
    ]);
    // A sign-in after it opens a session that holds.
    const again = await (await signIn(laptop.auth, at(5 * MIN))).finish();
    expect(await resolveSession(again.cookie, at(6 * MIN))).not.toBeNull();
  });
});

describe('hidden characters in a passkey name', () => {
  it('refuses a name with a bidi override before the ceremony is spent, adding nothing', async () => {
    const laptop = await enroll(ALICE);
    const me = (await resolveSession(laptop.cookie, T0))!;
    const begun = await beginAddPasskey({ signedIn: me, rp: RP, now: T0 });
    const phone = new SoftAuthenticator(RP.origin);
    const e = await refusal(
      finishAddPasskey({
        signedIn: me,
        ceremonyId: begun.ceremonyId,
        response: phone.create(begun.options),
        rp: RP,
        name: 'Phone\u202Eevil',
        now: T0,
      }),
    );
    expect(e).toMatchObject({ kind: 'invalid', message: expect.stringMatching(/invisible/) });
    expect(await listPasskeys(me)).toHaveLength(1);
  });
});
