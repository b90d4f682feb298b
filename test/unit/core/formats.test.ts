import { describe, expect, it } from 'vitest';
import type { ChannelRecord } from '#core/accounts';
import { checkFormat, formatMediaLimits, formatOf } from '#core/formats';
import type { MediaAssetRecord } from '#core/media';
import { PLATFORMS, type Platform } from '#core/platforms';
import { postInputIds, validatePostInput } from '#core/post-input';
import type { CreatePostInput } from '#core/requests';
import { channel, fixedId, mediaAsset } from '../support/fixtures.ts';

// Each rule of core/formats.ts: one refusal and one acceptance, through validatePostInput (what
// createPost, updatePost and validatePost run) so the platform's own rules run beside them.

const NOW = new Date('2030-01-01T00:00:00Z');
const channels = new Map<string, ChannelRecord>(
  PLATFORMS.map((p, n) => {
    const c = channel(n + 1, p);
    c.granted_scopes = [
      'instagram_manage_comments',
      'pages_manage_engagement',
      'https://www.googleapis.com/auth/youtube.force-ssl',
      'threads_manage_replies',
    ];
    return [c.id, c];
  }),
);
const on = (p: Platform) => fixedId('channel', PLATFORMS.indexOf(p) + 1);

let n = 0;
const asset = (o: Partial<MediaAssetRecord> & { page_count?: number | null }): MediaAssetRecord =>
  mediaAsset({ id: fixedId('media', ++n), status: 'ready', ...o });
const MB = 1024 * 1024;
const photo = asset({
  filename: 'p.jpg',
  content_type: 'image/jpeg',
  size_bytes: MB,
  width: 1080,
  height: 1350,
});
const tall = asset({
  filename: 't.jpg',
  content_type: 'image/jpeg',
  size_bytes: MB,
  width: 1080,
  height: 1920,
});
const vertical = asset({
  kind: 'video',
  filename: 'v.mp4',
  content_type: 'video/mp4',
  size_bytes: 50 * MB,
  width: 1080,
  height: 1920,
  duration_sec: 30,
});
const wide = asset({ ...vertical, id: fixedId('media', ++n), filename: 'w.mp4', width: 1920, height: 1080 });
const tenMinutes = asset({ ...vertical, id: fixedId('media', ++n), filename: 'l.mp4', duration_sec: 600 });
const tiny = asset({ ...vertical, id: fixedId('media', ++n), filename: 's.mp4', width: 360, height: 640 });
const pdf = asset({
  kind: 'document',
  filename: 'deck.pdf',
  content_type: 'application/pdf',
  size_bytes: 2 * MB,
  page_count: 12,
});
const longPdf = asset({ ...pdf, id: fixedId('media', ++n), filename: 'long.pdf', page_count: 301 });
const thumb = asset({
  filename: 'th.png',
  content_type: 'image/png',
  size_bytes: 500_000,
  width: 1280,
  height: 720,
});
const bigThumb = asset({
  filename: 'big.png',
  content_type: 'image/png',
  size_bytes: 3 * MB,
  width: 1280,
  height: 720,
});
// fixtures' url uses the id: rebuild the copies' urls.
for (const a of [wide, tenMinutes, tiny, longPdf])
  a.url = `https://media.example/orgs/${a.org_id}/media/${a.id}/${a.filename}`;
const webp = asset({
  filename: 'w.webp',
  content_type: 'image/webp',
  size_bytes: MB,
  width: 1080,
  height: 1350,
});
const all = [webp, photo, tall, vertical, wide, tenMinutes, tiny, pdf, longPdf, thumb, bigThumb];
const media = new Map(all.map((a) => [a.id, a]));

const item = (a: MediaAssetRecord, alt?: string) => ({
  url: a.url,
  type: a.kind,
  ...(alt ? { alt } : {}),
});
type Variant = CreatePostInput['variants'][number];
type Post = Omit<Variant, 'channel_id'> & { on: Platform };
/** A variant on `p` of `assets` (no alt text) with `options`, for check. */
const post = (
  p: Platform,
  body: string,
  assets: MediaAssetRecord[] = [],
  options?: Record<string, unknown>,
): Post => ({
  on: p,
  body,
  ...(assets.length > 0 ? { media: assets.map((a) => item(a)) } : {}),
  ...(options ? { options } : {}),
});
const check = (v: Post, title?: string) => {
  const { on: p, ...rest } = v;
  return validatePostInput(
    { title, variants: [{ channel_id: on(p), ...rest }] },
    { channels, media, now: NOW },
  ).map((e) => [e.pointer, e.code]);
};

describe('formatOf', () => {
  it('reads options.format, else the platform default, else none', () => {
    expect(formatOf('instagram', { format: 'story' })).toBe('story');
    expect(formatOf('instagram', {})).toBe('feed');
    expect(formatOf('youtube', { format: 'bogus' })).toBe('video');
    expect(formatOf('x', {})).toBeNull();
  });
});

describe('instagram story and reel', () => {
  it('accepts a story of one image without a caption, and a reel of one video with one', () => {
    expect(check(post('instagram', '', [tall], { format: 'story' }))).toEqual([]);
    expect(check(post('instagram', 'Our reel', [vertical], { format: 'reel' }))).toEqual([]);
  });

  it('refuses a story with a caption, alt text, two items or a first comment', () => {
    expect(
      check({
        on: 'instagram',
        body: 'caption',
        media: [item(tall, 'a tall photo'), item(photo)],
        options: { format: 'story' },
        first_comment: { body: 'hi' },
      }),
    ).toEqual([
      ['/variants/0/media', 'too_many_media'],
      ['/variants/0/body', 'text_too_long'],
      ['/variants/0/media/0/alt', 'text_too_long'],
      ['/variants/0/first_comment', 'first_comment_unsupported'],
    ]);
  });

  it('takes a 9:16 story image that a feed post refuses (its own limits)', () => {
    expect(check(post('instagram', '', [tall]))).toEqual([
      ['/variants/0/media/0', 'unsupported_aspect_ratio'],
    ]);
  });

  it('refuses a reel that is an image, and one story video over 60 s', () => {
    expect(check(post('instagram', 'r', [photo], { format: 'reel' }))).toEqual([
      ['/variants/0/media/0/type', 'unsupported_media'],
    ]);
    expect(check(post('instagram', '', [tenMinutes], { format: 'story' }))).toEqual([
      ['/variants/0/media/0', 'media_too_long'],
    ]);
    // The same 10 minutes are a reel Instagram takes (3 s–15 min).
    expect(check(post('instagram', 'r', [tenMinutes], { format: 'reel' }))).toEqual([]);
  });

  it('refuses a story without media once (the format says it, not twice)', () => {
    expect(check(post('instagram', '', [], { format: 'story' }))).toEqual([
      ['/variants/0/media', 'media_required'],
    ]);
  });
});

describe('facebook story and reel', () => {
  it('accepts a story photo and a vertical reel of 30 s', () => {
    expect(check(post('facebook', '', [photo], { format: 'story' }))).toEqual([]);
    expect(check(post('facebook', 'New reel', [vertical], { format: 'reel' }))).toEqual([]);
  });

  it('refuses a story with text, and a link with a story or a reel', () => {
    expect(check(post('facebook', 'text', [photo], { format: 'story', link: 'https://a.example' }))).toEqual([
      ['/variants/0/body', 'text_too_long'],
      ['/variants/0/options/link', 'invalid_option'],
    ]);
    expect(check(post('facebook', 'r', [vertical], { format: 'reel', link: 'https://a.example' }))).toEqual([
      ['/variants/0/options/link', 'invalid_option'],
    ]);
  });

  it('refuses a reel that is landscape, too long, or under 540×960', () => {
    expect(check(post('facebook', 'r', [wide], { format: 'reel' }))).toEqual([
      ['/variants/0/media/0', 'unsupported_aspect_ratio'],
    ]);
    expect(check(post('facebook', 'r', [tenMinutes], { format: 'reel' }))).toEqual([
      ['/variants/0/media/0', 'media_too_long'],
    ]);
    expect(check(post('facebook', 'r', [tiny], { format: 'reel' }))).toEqual([
      ['/variants/0/media/0', 'media_too_small'],
    ]);
    // A feed post takes the same landscape video.
    expect(check(post('facebook', 'r', [wide]))).toEqual([]);
  });
});

describe('youtube short, thumbnail and publish_at', () => {
  it('accepts a vertical Short of 30 s with a thumbnail and a future publish_at', () => {
    expect(
      check(
        post('youtube', 'd', [vertical], {
          format: 'short',
          thumbnail_url: thumb.url,
          publish_at: '2030-02-01T00:00:00Z',
        }),
      ),
    ).toEqual([]);
  });

  it('refuses a Short of 10 minutes and a landscape one', () => {
    expect(check(post('youtube', 'd', [tenMinutes], { format: 'short' }))).toEqual([
      ['/variants/0/media/0', 'media_too_long'],
    ]);
    expect(check(post('youtube', 'd', [wide], { format: 'short' }))).toEqual([
      ['/variants/0/media/0', 'unsupported_aspect_ratio'],
    ]);
    // As a video, both are fine.
    expect(check(post('youtube', 'd', [tenMinutes]))).toEqual([]);
  });

  it('refuses a thumbnail that is no ready image of the org, or over 2 MB', () => {
    for (const url of [
      'https://media.example/orgs/x/media/med_01JD0000000000000000000099/x.png',
      vertical.url,
      bigThumb.url,
    ])
      expect(check(post('youtube', 'd', [vertical], { thumbnail_url: url }))).toEqual([
        ['/variants/0/options/thumbnail_url', 'invalid_option'],
      ]);
  });

  it('reads the thumbnail asset with the media', () => {
    expect(
      postInputIds({
        variants: [{ channel_id: on('youtube'), body: 'd', options: { thumbnail_url: thumb.url } }],
      }).mediaIds,
    ).toEqual([thumb.id]);
  });

  it('refuses a publish_at in the past, or with a privacy other than private', () => {
    expect(check(post('youtube', 'd', [vertical], { publish_at: '2029-12-31T00:00:00Z' }))).toEqual([
      ['/variants/0/options/publish_at', 'invalid_option'],
    ]);
    expect(
      check(
        post('youtube', 'd', [vertical], { publish_at: '2030-02-01T00:00:00Z', privacy_status: 'public' }),
      ),
    ).toEqual([['/variants/0/options/publish_at', 'invalid_option']]);
    expect(
      check(
        post('youtube', 'd', [vertical], { publish_at: '2030-02-01T00:00:00Z', privacy_status: 'private' }),
      ),
    ).toEqual([]);
  });
});

describe('linkedin document', () => {
  it('accepts one PDF with a title', () => {
    expect(check(post('linkedin', 'Our deck', [pdf], { format: 'document', document_title: 'Q3' }))).toEqual(
      [],
    );
  });

  it('refuses a document post of an image, of none, of a PDF and an image, and over 300 pages', () => {
    expect(check(post('linkedin', 'd', [photo], { format: 'document' }))).toEqual([
      ['/variants/0/media/0/type', 'unsupported_media'],
    ]);
    expect(check(post('linkedin', 'd', [], { format: 'document' }))).toEqual([
      ['/variants/0/media', 'media_required'],
    ]);
    expect(check(post('linkedin', 'd', [pdf, photo], { format: 'document' }))).toEqual([
      ['/variants/0/media', 'too_many_media'],
      ['/variants/0/media/1/type', 'unsupported_media'],
    ]);
    expect(check(post('linkedin', 'd', [longPdf], { format: 'document' }))).toEqual([
      ['/variants/0/media/0', 'media_too_long'],
    ]);
  });

  it('refuses a PDF anywhere else, and document_title without the format', () => {
    expect(check(post('linkedin', 'd', [pdf], { document_title: 'Q3' }))).toEqual([
      ['/variants/0/media/0/type', 'unsupported_media'],
      ['/variants/0/options/document_title', 'invalid_option'],
    ]);
    for (const p of ['x', 'facebook', 'instagram'] as const)
      expect(check(post(p, 'd', [pdf])), p).toContainEqual(['/variants/0/media/0/type', 'unsupported_media']);
  });
});

describe('polls', () => {
  const poll = { choices: ['Yes', 'No'], duration_minutes: 1440 };
  it('accepts a poll without media on x, mastodon, threads and linkedin', () => {
    for (const p of ['x', 'mastodon', 'threads', 'linkedin'] as const)
      expect(check(post(p, 'Which one?', [], { poll })), p).toEqual([]);
  });

  it('refuses a poll with media, and one choice (the schema)', () => {
    for (const p of ['x', 'mastodon', 'threads', 'linkedin'] as const)
      expect(check(post(p, 'Which one?', [photo], { poll })), p).toEqual([
        ['/variants/0/media', 'too_many_media'],
      ]);
    expect(check(post('x', 'q', [], { poll: { choices: ['Only'] } }))).toEqual([
      ['/variants/0/options/poll/choices', 'invalid_option'],
    ]);
  });

  it('refuses a poll where the platform has none', () => {
    expect(check(post('bluesky', 'q', [], { poll }))).toEqual([
      ['/variants/0/options/poll', 'invalid_option'],
    ]);
  });

  it("takes LinkedIn's question from the title, else the text, at most 140 characters", () => {
    expect(check(post('linkedin', 'x'.repeat(141), [], { poll }))).toEqual([
      ['/variants/0/body', 'text_too_long'],
    ]);
    expect(check(post('linkedin', 'x'.repeat(141), [], { poll }), 'Which one?')).toEqual([]);
    expect(check(post('linkedin', 'text', [], { poll }), 'q'.repeat(141))).toEqual([
      ['/title', 'text_too_long'],
    ]);
    expect(check(post('linkedin', ' ', [], { poll }))).toEqual([['/variants/0/body', 'too_short']]);
  });
});

describe('tiktok', () => {
  it('accepts inbox mode without the settings, and direct mode with them', () => {
    expect(check(post('tiktok', 'v', [vertical], { post_mode: 'inbox' }))).toEqual([]);
    expect(
      check(
        post('tiktok', 'v', [vertical], {
          post_mode: 'direct',
          privacy_level: 'SELF_ONLY',
          disable_duet: true,
        }),
      ),
    ).toEqual([]);
  });

  it('refuses a privacy level or interaction setting in inbox mode', () => {
    expect(
      check(
        post('tiktok', 'v', [vertical], {
          post_mode: 'inbox',
          privacy_level: 'PUBLIC_TO_EVERYONE',
          disable_comment: true,
        }),
      ),
    ).toEqual([
      ['/variants/0/options/privacy_level', 'invalid_option'],
      ['/variants/0/options/disable_comment', 'invalid_option'],
    ]);
  });

  it('refuses private branded content; takes it public', () => {
    const options = { brand_content: true, privacy_level: 'SELF_ONLY' };
    expect(check(post('tiktok', 'v', [vertical], options))).toEqual([
      ['/variants/0/options/privacy_level', 'invalid_option'],
    ]);
    expect(
      check(post('tiktok', 'v', [vertical], { ...options, privacy_level: 'PUBLIC_TO_EVERYONE' })),
    ).toEqual([]);
  });

  it('refuses a cover frame on a photo post, or past the end of the video', () => {
    expect(check(post('tiktok', 'p', [photo], { cover_timestamp_ms: 1000 }))).toEqual([
      ['/variants/0/options/cover_timestamp_ms', 'invalid_option'],
    ]);
    expect(check(post('tiktok', 'v', [vertical], { cover_timestamp_ms: 31_000 }))).toEqual([
      ['/variants/0/options/cover_timestamp_ms', 'invalid_option'],
    ]);
    expect(check(post('tiktok', 'v', [vertical], { cover_timestamp_ms: 1000 }))).toEqual([]);
  });
});

describe('checkFormat on its own', () => {
  it('says nothing about a platform without formats or rules here', () => {
    expect(checkFormat('pinterest', { body: 'a', media: [] }, '/variants/0', { media, now: NOW })).toEqual(
      [],
    );
    expect(formatMediaLimits('x', null, 'image')).toBeUndefined();
    expect(formatMediaLimits('youtube', 'short', 'video')?.maxSec).toBe(180);
  });
});

describe('media_fit with a format', () => {
  it("fits a feed image, but a format's own limits stand (a rendition is planned from the platform's)", () => {
    expect(check(post('instagram', 'a', [webp], { media_fit: 'auto' }))).toEqual([]);
    expect(check(post('instagram', '', [webp], { format: 'story', media_fit: 'auto' }))).toEqual([
      ['/variants/0/media/0', 'unsupported_format'],
    ]);
  });
});
