import { describe, expect, it } from 'vitest';
import type { FieldError } from '#core/errors';
import { checkVariant, type MediaKind, type Platform, textLength, type VariantInput } from '#core/platforms';

const BASE = '/variants/0';
const FAMILY = '👨‍👩‍👧'; // man, ZWJ, woman, ZWJ, girl: one grapheme, five code points
const URL_LONG = `https://example.com/${'a'.repeat(100)}`;

const withMedia = (...types: MediaKind[]): VariantInput['media'] => types.map((type) => ({ type }));
const codes = (errors: FieldError[]) => errors.map((e) => e.code);
const check = (platform: Platform, v: Partial<VariantInput>) =>
  checkVariant(platform, { body: 'Hello', ...v }, BASE);

describe('X weighted counting', () => {
  it('weighs ASCII 1, CJK 2, an emoji 2 and any URL 23', () => {
    // Arrange / Act / Assert
    expect(textLength('x_weighted', 'abc')).toBe(3);
    expect(textLength('x_weighted', '日本語')).toBe(6);
    expect(textLength('x_weighted', '😀')).toBe(2);
    expect(textLength('x_weighted', FAMILY)).toBe(2);
    expect(textLength('x_weighted', URL_LONG)).toBe(23);
    expect(textLength('x_weighted', `see ${URL_LONG} now`)).toBe(4 + 23 + 4);
  });

  it('accepts exactly 280 weighted characters and refuses 281', () => {
    // Arrange
    const at = 'a'.repeat(280);
    const over = 'a'.repeat(281);

    // Act
    const ok = check('x', { body: at });
    const tooLong = check('x', { body: over });

    // Assert
    expect(ok).toEqual([]);
    expect(tooLong).toEqual([expect.objectContaining({ pointer: `${BASE}/body`, code: 'text_too_long' })]);
  });

  it('counts 141 CJK characters as 282, over the limit, while 140 fit', () => {
    expect(check('x', { body: '漢'.repeat(140) })).toEqual([]);
    expect(codes(check('x', { body: '漢'.repeat(141) }))).toEqual(['text_too_long']);
  });

  it('counts a long URL as 23 so a post with several fits', () => {
    // Arrange: 10 URLs of 120 characters each are 10 × 23 + 9 spaces = 239 weighted.
    const body = Array.from({ length: 10 }, () => URL_LONG).join(' ');

    // Act / Assert
    expect(body.length).toBeGreaterThan(1000);
    expect(check('x', { body })).toEqual([]);
  });

  it('counts 141 emoji as 282, over the limit', () => {
    expect(check('x', { body: '😀'.repeat(140) })).toEqual([]);
    expect(codes(check('x', { body: '😀'.repeat(141) }))).toEqual(['text_too_long']);
  });
});

describe('Bluesky grapheme counting', () => {
  it('counts an emoji family as one grapheme', () => {
    expect(textLength('graphemes', FAMILY)).toBe(1);
    expect(textLength('graphemes', 'e\u0301')).toBe(1); // e + combining acute accent
  });

  it('accepts 300 graphemes (even 1,500 code units of emoji families) and refuses 301', () => {
    // Arrange
    const at = FAMILY.repeat(300);

    // Act / Assert
    expect(at.length).toBeGreaterThan(1500);
    expect(check('bluesky', { body: at })).toEqual([]);
    expect(check('bluesky', { body: 'a'.repeat(301) })).toEqual([
      expect.objectContaining({ pointer: `${BASE}/body`, code: 'text_too_long' }),
    ]);
  });
});

describe('Mastodon counting', () => {
  it('counts every URL as 23 characters', () => {
    expect(textLength('chars_urls_23', URL_LONG)).toBe(23);
    // 477 + 23 = 500 fits although the raw text is far longer.
    expect(check('mastodon', { body: `${'a'.repeat(476)} ${URL_LONG}` })).toEqual([]);
  });

  it('counts spoiler_text toward the 500 characters', () => {
    // Arrange
    const body = 'a'.repeat(490);

    // Act
    const fits = check('mastodon', { body, options: { spoiler_text: 'b'.repeat(10) } });
    const over = check('mastodon', { body, options: { spoiler_text: 'b'.repeat(11) } });

    // Assert
    expect(fits).toEqual([]);
    expect(over).toEqual([expect.objectContaining({ pointer: `${BASE}/body`, code: 'text_too_long' })]);
  });

  it('reports a body that is too long on its own only once', () => {
    const errors = check('mastodon', { body: 'a'.repeat(501), options: { spoiler_text: 'cw' } });
    expect(codes(errors)).toEqual(['text_too_long']);
  });
});

describe('media rules', () => {
  it.each<Platform>(['instagram', 'tiktok', 'youtube', 'pinterest'])(
    '%s refuses a post without media (media_required)',
    (platform) => {
      expect(check(platform, {})).toEqual([
        expect.objectContaining({ pointer: `${BASE}/media`, code: 'media_required' }),
      ]);
    },
  );

  it.each<Platform>(['x', 'bluesky', 'linkedin', 'mastodon', 'threads', 'facebook'])(
    '%s accepts a text-only post',
    (platform) => {
      expect(check(platform, {})).toEqual([]);
    },
  );

  it('refuses a fifth image on x (too_many_media) and accepts four', () => {
    expect(check('x', { media: withMedia('image', 'image', 'image', 'image') })).toEqual([]);
    expect(check('x', { media: withMedia('image', 'image', 'image', 'image', 'image') })).toEqual([
      expect.objectContaining({ pointer: `${BASE}/media`, code: 'too_many_media' }),
    ]);
  });

  it('refuses an image combined with a video on x, where kinds are not mixed', () => {
    expect(codes(check('x', { media: withMedia('image', 'video') }))).toEqual(['too_many_media']);
  });

  it('accepts images and videos combined in an instagram carousel', () => {
    expect(check('instagram', { media: withMedia('image', 'video', 'image') })).toEqual([]);
  });

  it('refuses audio on x with the pointer of the item type (unsupported_media)', () => {
    expect(check('x', { media: withMedia('audio') })).toEqual([
      expect.objectContaining({ pointer: `${BASE}/media/0/type`, code: 'unsupported_media' }),
    ]);
  });

  it('accepts audio on mastodon', () => {
    expect(check('mastodon', { media: withMedia('audio') })).toEqual([]);
  });

  it('refuses an image on youtube (video only)', () => {
    const errors = check('youtube', { media: withMedia('image') });
    expect(errors).toContainEqual(
      expect.objectContaining({ pointer: `${BASE}/media/0/type`, code: 'unsupported_media' }),
    );
    expect(check('youtube', { media: withMedia('video') })).toEqual([]);
  });
});

describe('platform options', () => {
  it('points invalid_option at the offending option', () => {
    // Act
    const errors = check('youtube', { media: withMedia('video'), options: { privacy_status: 'secret' } });

    // Assert
    expect(errors).toEqual([
      expect.objectContaining({ pointer: '/variants/0/options/privacy_status', code: 'invalid_option' }),
    ]);
  });

  it('describes a wrongly typed option as a type error, not a missing one', () => {
    const [error] = check('youtube', { media: withMedia('video'), options: { tags: 'launch' } });
    expect(error).toMatchObject({ pointer: '/variants/0/options/tags', code: 'invalid_option' });
    expect(error?.message).toBe('youtube: Expected array.');
  });

  it('refuses an option the platform does not know, one error per key', () => {
    const errors = check('bluesky', { options: { privacy_status: 'public', colour: 'red' } });
    expect(errors.map((e) => [e.pointer, e.code])).toEqual([
      ['/variants/0/options/privacy_status', 'invalid_option'],
      ['/variants/0/options/colour', 'invalid_option'],
    ]);
  });

  it('accepts the options each platform documents', () => {
    expect(
      check('youtube', {
        media: withMedia('video'),
        options: { title: 'Launch', privacy_status: 'unlisted', made_for_kids: false },
      }),
    ).toEqual([]);
    expect(check('mastodon', { options: { visibility: 'unlisted', spoiler_text: 'cw' } })).toEqual([]);
    expect(check('pinterest', { media: withMedia('image'), options: { board_id: '12345' } })).toEqual([]);
  });

  it('uses the variant base for every pointer', () => {
    const errors = checkVariant(
      'tiktok',
      { body: 'x', options: { privacy_level: 'EVERYONE' } },
      '/variants/3',
    );
    expect(errors.map((e) => e.pointer)).toEqual(['/variants/3/media', '/variants/3/options/privacy_level']);
  });
});
