import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { ValidationError } from '#core/errors';
import { CreatePostBody, ListPostsQuery } from '#core/requests';
import { parseOrThrow, pointer } from '#core/validation';

/** The field errors the request pipeline (parseOrThrow) reports for `input`. */
function fieldErrors(schema: z.ZodMiniType, input: unknown, prefix = '') {
  try {
    parseOrThrow(schema, input, prefix);
  } catch (err) {
    if (err instanceof ValidationError) return err.errors ?? [];
    throw err;
  }
  throw new Error('expected the input to be refused');
}

describe('JSON pointers', () => {
  it('joins path segments with / and escapes ~ as ~0 and / as ~1 (RFC 6901)', () => {
    expect(pointer(['variants', 0, 'channel_id'])).toBe('/variants/0/channel_id');
    expect(pointer(['a/b', 'c~d', '~/'])).toBe('/a~1b/c~0d/~0~1');
  });

  it('is "" for the whole document and takes a prefix', () => {
    expect(pointer([])).toBe('');
    expect(pointer(['limit'], '/query')).toBe('/query/limit');
  });
});

describe('field errors', () => {
  it('reports unknown_field once per unrecognized key, with its pointer', () => {
    // Act
    const errors = fieldErrors(CreatePostBody(), {
      variants: [{ channel_id: 'ch_1', body: 'x', colour: 'red' }],
      draft: true,
      tags: [],
      'a/b': 1,
    });

    // Assert
    expect(errors.map((e) => [e.pointer, e.code])).toEqual(
      expect.arrayContaining([
        ['/variants/0/colour', 'unknown_field'],
        ['/tags', 'unknown_field'],
        ['/a~1b', 'unknown_field'],
      ]),
    );
    expect(errors).toHaveLength(3);
  });

  it('tells a missing field (required) from a wrong type (invalid_type)', () => {
    const missing = fieldErrors(CreatePostBody(), { draft: true });
    const wrong = fieldErrors(CreatePostBody(), { variants: 'all', draft: true });
    const nulled = fieldErrors(CreatePostBody(), { variants: null, draft: true });
    expect(missing).toEqual([expect.objectContaining({ pointer: '/variants', code: 'required' })]);
    expect(wrong).toEqual([expect.objectContaining({ pointer: '/variants', code: 'invalid_type' })]);
    expect(nulled).toEqual([expect.objectContaining({ pointer: '/variants', code: 'invalid_type' })]);
  });

  it('reports a nested required field at its full pointer', () => {
    const errors = fieldErrors(CreatePostBody(), { variants: [{ channel_id: 'ch_1' }], draft: true });
    expect(errors).toEqual([expect.objectContaining({ pointer: '/variants/0/body', code: 'required' })]);
  });

  it('names an enum violation invalid_value and a bad date-time invalid_format', () => {
    expect(fieldErrors(ListPostsQuery(), { status: 'gone' })).toEqual([
      expect.objectContaining({ pointer: '/status', code: 'invalid_value' }),
    ]);
    expect(fieldErrors(CreatePostBody(), { variants: [], scheduled_at: 'tomorrow' })).toEqual([
      expect.objectContaining({ pointer: '/scheduled_at', code: 'invalid_format' }),
    ]);
  });

  it('distinguishes too_short / too_long strings from too_few / too_many items', () => {
    const schema = z.object({
      s: z.string().check(z.minLength(2), z.maxLength(3)),
      a: z.array(z.int()).check(z.maxLength(1)),
    });
    expect(fieldErrors(schema, { s: 'x', a: [] }).map((e) => e.code)).toEqual(['too_short']);
    expect(fieldErrors(schema, { s: 'xxxx', a: [1, 2] }).map((e) => e.code)).toEqual([
      'too_long',
      'too_many_items',
    ]);
  });
});

describe('parseOrThrow', () => {
  it('returns the parsed value when valid', () => {
    expect(parseOrThrow(ListPostsQuery(), { limit: '10' }, '/query')).toEqual({ limit: 10 });
  });

  it('throws validation_failed with query pointers under /query', () => {
    // Act
    let caught: unknown;
    try {
      parseOrThrow(ListPostsQuery(), { limit: '0', page: '2' }, '/query');
    } catch (err) {
      caught = err;
    }

    // Assert
    expect(caught).toBeInstanceOf(ValidationError);
    const err = caught as ValidationError;
    expect(err).toMatchObject({ code: 'validation_failed', status: 400 });
    expect(err.errors?.map((e) => [e.pointer, e.code])).toEqual(
      expect.arrayContaining([
        ['/query/limit', 'too_small'],
        ['/query/page', 'unknown_field'],
      ]),
    );
  });

  it.each(['101', '2.5', 'ten'])('refuses limit=%s at /query/limit', (limit) => {
    expect(() => parseOrThrow(ListPostsQuery(), { limit }, '/query')).toThrow(ValidationError);
    try {
      parseOrThrow(ListPostsQuery(), { limit }, '/query');
    } catch (err) {
      expect((err as ValidationError).errors?.[0]?.pointer).toBe('/query/limit');
    }
  });
});
