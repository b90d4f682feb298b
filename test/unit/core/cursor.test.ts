import { describe, expect, it } from 'vitest';
import { type CursorScope, decodeCursor, encodeCursor } from '#core/cursor';
import { ApiError } from '#core/errors';
import { apiErrorOf } from '../support/errors.ts';
import { fixedId, ORG_ID, OTHER_ORG_ID } from '../support/fixtures.ts';

const SECRET = 'cursor-test-secret';
const SCOPE: CursorScope = { list: 'posts', orgId: ORG_ID, filter: 'scheduled' };
const LAST = fixedId('post', 42);

/** Replaces one character of `s` at `index` with a different base64url character. */
const flip = (s: string, index: number) =>
  s.slice(0, index) + (s[index] === 'A' ? 'B' : 'A') + s.slice(index + 1);

describe('cursor', () => {
  it('round-trips the last key of the page', () => {
    // Arrange
    const cursor = encodeCursor(SECRET, SCOPE, LAST);

    // Act
    const decoded = decodeCursor(SECRET, SCOPE, cursor);

    // Assert
    expect(decoded).toBe(LAST);
  });

  it('is opaque: the key and the org are not readable as plain text', () => {
    const cursor = encodeCursor(SECRET, SCOPE, LAST);
    expect(cursor).not.toContain(LAST);
    expect(cursor).not.toContain(ORG_ID);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  });

  it('refuses a cursor whose payload was changed', () => {
    // Arrange: a payload that says another key, with the original MAC.
    const [, mac] = encodeCursor(SECRET, SCOPE, LAST).split('.');
    const forgedBody = Buffer.from(
      JSON.stringify({ l: 'posts', o: ORG_ID, f: 'scheduled', k: fixedId('post', 1) }),
    ).toString('base64url');

    // Act
    const err = apiErrorOf(() => decodeCursor(SECRET, SCOPE, `${forgedBody}.${mac}`));

    // Assert
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'invalid_request', status: 400 });
  });

  it('refuses a cursor whose MAC was changed', () => {
    const cursor = encodeCursor(SECRET, SCOPE, LAST);
    const tampered = flip(cursor, cursor.length - 3);
    expect(apiErrorOf(() => decodeCursor(SECRET, SCOPE, tampered)).code).toBe('invalid_request');
  });

  it('refuses a cursor signed with another secret', () => {
    const cursor = encodeCursor('another-secret', SCOPE, LAST);
    expect(apiErrorOf(() => decodeCursor(SECRET, SCOPE, cursor)).code).toBe('invalid_request');
  });

  it.each<[string, CursorScope]>([
    ['another organization', { ...SCOPE, orgId: OTHER_ORG_ID }],
    ['another list', { ...SCOPE, list: 'media' }],
    ['another status filter', { ...SCOPE, filter: 'draft' }],
    ['no status filter', { list: 'posts', orgId: ORG_ID }],
  ])('refuses a valid cursor replayed against %s', (_what, other) => {
    // Arrange
    const cursor = encodeCursor(SECRET, SCOPE, LAST);

    // Act / Assert
    expect(apiErrorOf(() => decodeCursor(SECRET, other, cursor)).code).toBe('invalid_request');
  });

  it.each(['', 'garbage', 'a.b.c', '.', `${'x'.repeat(10)}.`])(
    'refuses the malformed cursor %j',
    (cursor) => {
      expect(apiErrorOf(() => decodeCursor(SECRET, SCOPE, cursor)).code).toBe('invalid_request');
    },
  );
});
