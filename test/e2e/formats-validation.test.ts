import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffmpegPath } from '#adapters/media-tools';
import { makeSamples, type Samples } from '../support/media-samples.ts';
import { api, uploadMedia, type Workspace, workspace } from './helpers.ts';

// The formats' bad input over HTTP against the local stack: validatePost answers each problem
// (valid false, the pointer and code), createPost refuses the same body with 400 validation_failed
// and the same field errors, and nothing is written. Media are real uploads, probed by the stack.

type Json = Record<string, unknown>;
type Check = { pointer: string; code: string; detail: string };

let samples: Samples;
let ws: Workspace;
let jpeg: string;
let tenMinutes: string;
let short: string;

/** A vertical video of `seconds` at 1 frame a second (small and quick to make, whatever its length). */
function vertical(out: string, seconds: number): string {
  execFileSync(
    ffmpegPath(),
    [
      '-v',
      'error',
      '-nostdin',
      '-y',
      '-f',
      'lavfi',
      '-i',
      'color=c=blue:size=144x256:rate=1',
      '-t',
      String(seconds),
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      '-pix_fmt',
      'yuv420p',
      out,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return out;
}

const upload = async (path: string, contentType: string): Promise<string> =>
  (await uploadMedia(ws.key, readFileSync(path), `f.${path.split('.').pop()}`, contentType)).url;

beforeAll(async () => {
  samples = await makeSamples(mkdtempSync(join(tmpdir(), 'herald-formats-')));
  ws = await workspace(['instagram', 'x', 'mastodon', 'linkedin', 'youtube', 'tiktok']);
  jpeg = await upload(samples.files.jpeg.path, 'image/jpeg');
  tenMinutes = await upload(vertical(join(samples.dir, 'ten-minutes.mp4'), 600), 'video/mp4');
  short = await upload(vertical(join(samples.dir, 'short.mp4'), 20), 'video/mp4');
}, 180_000);
afterAll(() => rmSync(samples.dir, { recursive: true, force: true }));

const variant = (platform: string, v: Json) => ({ channel_id: ws.channels[platform], ...v });

const listed = async () =>
  (await api<{ data: Json[] }>('GET', '/v1/posts?limit=100', { key: ws.key })).body.data.map((p) => p.id);

/** validatePost and createPost on the same body: both must name `expected` (pointer, code). */
async function refused(v: Json, expected: Array<[string, string]>) {
  const body = { draft: true, variants: [v] };
  const checked = await api<{ valid: boolean; errors: Check[] }>('POST', '/v1/posts/validate', {
    key: ws.key,
    body,
  });
  expect(checked.status, checked.text).toBe(200);
  expect(checked.body.valid).toBe(false);
  expect(checked.body.errors.map((e) => [e.pointer, e.code])).toEqual(expected);
  for (const e of checked.body.errors) expect(e.detail.length).toBeGreaterThan(10);

  const before = await listed();
  const created = await api<Json & { errors: Array<{ pointer: string; code: string }> }>(
    'POST',
    '/v1/posts',
    {
      key: ws.key,
      body,
    },
  );
  expect(created.status, created.text).toBe(400);
  expect(created.headers.get('content-type')).toMatch(/application\/problem\+json/);
  expect(created.body.code).toBe('validation_failed');
  expect(created.body.errors.map((e) => [e.pointer, e.code])).toEqual(expected);
  expect(await listed()).toEqual(before);
}

describe('bad input for the formats: a clear problem at validatePost and createPost, nothing written', () => {
  it('an Instagram story with a caption', async () => {
    await refused(
      variant('instagram', {
        body: 'A caption',
        media: [{ url: jpeg, type: 'image' }],
        options: { format: 'story' },
      }),
      [['/variants/0/body', 'text_too_long']],
    );
  });

  it('a poll with media, and a poll with one choice', async () => {
    await refused(
      variant('x', {
        body: 'Which one?',
        media: [{ url: jpeg, type: 'image' }],
        options: { poll: { choices: ['A', 'B'], duration_minutes: 60 } },
      }),
      [['/variants/0/media', 'too_many_media']],
    );
    await refused(variant('mastodon', { body: 'Which one?', options: { poll: { choices: ['Only one'] } } }), [
      ['/variants/0/options/poll/choices', 'invalid_option'],
    ]);
  });

  it('a YouTube Short of 10 minutes', async () => {
    await refused(
      variant('youtube', {
        body: 'd',
        media: [{ url: tenMinutes, type: 'video' }],
        options: { format: 'short' },
      }),
      [['/variants/0/media/0', 'media_too_long']],
    );
  });

  it('a LinkedIn document that is not a PDF', async () => {
    await refused(
      variant('linkedin', {
        body: 'Our deck',
        media: [{ url: jpeg, type: 'image' }],
        options: { format: 'document' },
      }),
      [['/variants/0/media/0/type', 'unsupported_media']],
    );
    // An image asset claimed as a document.
    await refused(
      variant('linkedin', {
        body: 'Our deck',
        media: [{ url: jpeg, type: 'document' }],
        options: { format: 'document' },
      }),
      [['/variants/0/media/0/type', 'media_type_mismatch']],
    );
  });

  it('an inbox-mode TikTok post with a privacy level', async () => {
    await refused(
      variant('tiktok', {
        body: 'v',
        media: [{ url: short, type: 'video' }],
        options: { post_mode: 'inbox', privacy_level: 'SELF_ONLY' },
      }),
      [['/variants/0/options/privacy_level', 'invalid_option']],
    );
  });
});

describe('the same formats, well formed', () => {
  it('validatePost finds nothing wrong with a story, a Short, a poll and an inbox TikTok post', async () => {
    const body = {
      draft: true,
      variants: [
        variant('instagram', {
          body: '',
          media: [{ url: jpeg, type: 'image' }],
          options: { format: 'story' },
        }),
        variant('youtube', {
          body: 'd',
          media: [{ url: short, type: 'video' }],
          options: { format: 'short' },
        }),
        variant('x', {
          body: 'Which one?',
          options: { poll: { choices: ['A', 'B'], duration_minutes: 60 } },
        }),
        variant('tiktok', {
          body: 'v',
          media: [{ url: short, type: 'video' }],
          options: { post_mode: 'inbox' },
        }),
      ],
    };
    const checked = await api<{ valid: boolean; errors: Check[] }>('POST', '/v1/posts/validate', {
      key: ws.key,
      body,
    });
    expect(checked.status, checked.text).toBe(200);
    expect(checked.body).toMatchObject({ valid: true, errors: [] });
    const created = await api<Json>('POST', '/v1/posts', { key: ws.key, body });
    expect(created.status, created.text).toBe(201);
    expect(created.body.status).toBe('draft');
  });
});
