import { describe, expect, it } from 'vitest';
import type { ChannelRecord } from '#core/accounts';
import type { Platform } from '#core/platforms';
import { postInputIds, postType, validatePostInput } from '#core/post-input';
import type { CreatePostInput } from '#core/requests';
import { requestSchemas } from '#core/requests';
import { issuesToFieldErrors } from '#core/validation';
import { channel, fixedId, mediaAsset } from '../support/fixtures.ts';

const PLATFORMS: Platform[] = ['x', 'bluesky', 'threads', 'mastodon', 'linkedin', 'tiktok', 'instagram'];
const channels = new Map<string, ChannelRecord>(
  PLATFORMS.map((p, n) => {
    const c = channel(n + 1, p);
    // Threads needs the replies grant for both parts; recorded at connect.
    if (p === 'threads')
      c.granted_scopes = ['threads_basic', 'threads_content_publish', 'threads_manage_replies'];
    return [c.id, c];
  }),
);
const on = (p: Platform) => fixedId('channel', PLATFORMS.indexOf(p) + 1);
const image = mediaAsset({ status: 'ready' });
const ctx = { channels, media: new Map([[image.id, image]]) };
const check = (variants: CreatePostInput['variants']) => validatePostInput({ variants }, ctx);

describe('validatePostInput: threads and first comments', () => {
  it('accepts a thread and a first comment on each platform that has them', () => {
    for (const p of ['x', 'bluesky', 'threads', 'mastodon'] as const) {
      const variants = [
        {
          channel_id: on(p),
          body: 'root',
          thread: [{ body: 'two' }, { body: 'three', media: [{ url: image.url, type: 'image' as const }] }],
          first_comment: { body: 'links below' },
        },
      ];
      expect(check(variants), p).toEqual([]);
      expect(postType({ variants })).toBe('thread');
    }
    expect(postType({ variants: [{ channel_id: on('x'), body: 'one' }] })).toBe('single');
  });

  it('refuses a thread where the platform has none, and a first comment on tiktok', () => {
    expect(check([{ channel_id: on('linkedin'), body: 'a', thread: [{ body: 'b' }] }])).toEqual([
      expect.objectContaining({ pointer: '/variants/0/thread', code: 'thread_unsupported' }),
    ]);
    expect(
      check([
        { channel_id: on('x'), body: 'a' },
        { channel_id: on('tiktok'), body: 'a', media: [], first_comment: { body: 'hi' } },
      ]).filter((e) => e.code !== 'media_required'),
    ).toEqual([
      expect.objectContaining({ pointer: '/variants/1/first_comment', code: 'first_comment_unsupported' }),
    ]);
    // A first comment is fine where the platform takes one.
    expect(check([{ channel_id: on('linkedin'), body: 'a', first_comment: { body: '#tags' } }])).toEqual([]);
  });

  it('refuses parts a channel was connected without the grant for, saying to reconnect', () => {
    const old = { ...channels.get(on('threads')), granted_scopes: undefined } as ChannelRecord;
    const errors = validatePostInput(
      {
        variants: [{ channel_id: old.id, body: 'a', thread: [{ body: 'b' }], first_comment: { body: 'c' } }],
      },
      { channels: new Map([[old.id, old]]), media: new Map() },
    );
    expect(errors.map((e) => [e.pointer, e.code])).toEqual([
      ['/variants/0/thread', 'thread_unsupported'],
      ['/variants/0/first_comment', 'first_comment_unsupported'],
    ]);
    expect(errors[0]?.message).toMatch(/threads_manage_replies.*reconnect/);
  });

  it("checks each item's text and media with the platform's rules, at the item's pointer", () => {
    const errors = check([
      {
        channel_id: on('bluesky'),
        body: 'root',
        thread: [
          { body: 'fine' },
          { body: 'x'.repeat(301) },
          { body: '' },
          {
            body: 'pics',
            media: Array.from({ length: 5 }, () => ({ url: image.url, type: 'image' as const })),
          },
          { body: 'gone', media: [{ url: 'https://media.example/nope.png', type: 'image' }] },
        ],
        first_comment: { body: 'y'.repeat(301) },
      },
    ]);
    expect(errors.map((e) => [e.pointer, e.code])).toEqual([
      ['/variants/0/thread/1/body', 'text_too_long'],
      ['/variants/0/thread/2/body', 'too_short'],
      ['/variants/0/thread/3/media', 'too_many_media'],
      ['/variants/0/thread/4/media/0/url', 'unknown_media'],
      ['/variants/0/first_comment/body', 'text_too_long'],
    ]);
  });

  it("holds a first comment to the platform's comment limit where it differs (LinkedIn: 1,250)", () => {
    const errors = check([
      { channel_id: on('linkedin'), body: 'a', first_comment: { body: 'z'.repeat(1251) } },
    ]);
    expect(errors).toEqual([
      expect.objectContaining({ pointer: '/variants/0/first_comment/body', code: 'text_too_long' }),
    ]);
  });

  it('reads the media of thread items too', () => {
    expect(
      postInputIds({
        variants: [
          {
            channel_id: on('x'),
            body: 'a',
            thread: [{ body: 'b', media: [{ url: image.url, type: 'image' }] }],
          },
        ],
      }).mediaIds,
    ).toEqual([image.id]);
  });

  it('the request schema refuses 25 items and an empty thread at /variants/<i>/thread', () => {
    const parse = (thread: unknown[]) => {
      const r = requestSchemas('createPost').body.safeParse({
        draft: true,
        variants: [{ channel_id: on('x'), body: 'a', thread }],
      });
      return r.success ? [] : issuesToFieldErrors(r.error.issues).map((e) => [e.pointer, e.code]);
    };
    expect(parse(Array.from({ length: 24 }, () => ({ body: 'b' })))).toEqual([]);
    expect(parse(Array.from({ length: 25 }, () => ({ body: 'b' })))).toEqual([
      ['/variants/0/thread', 'too_many_items'],
    ]);
    expect(parse([])).toEqual([['/variants/0/thread', 'too_few_items']]);
  });
});
