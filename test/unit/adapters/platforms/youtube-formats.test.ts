import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ChoicesContext, MediaInput, PublishContext } from '#adapters/platforms/types';
import { choices } from '#adapters/platforms/youtube/choices';
import { connector } from '#adapters/platforms/youtube/index';
import { stepRetry } from '#adapters/platforms/youtube/steps';
import type { OptionsNote } from '#core/channel-options';
import type { DeliveryWarningCode } from '#core/constants';
import { FakePlatforms } from '../../../fakes/server.ts';
import { createFake, type YouTubeFake } from '../../../fakes/youtube.ts';
import {
  type Fixture,
  mediaInput,
  memoryTokens,
  patternBytes,
  publishContext,
  publishFixture,
} from './context.ts';

// YouTube's formats and the steps after the upload (Shorts, publish_at, thumbnails.set,
// playlistItems.insert, the playlists as choices) against the contract fake.

let fakes: FakePlatforms;
let fake: YouTubeFake;
const savedDelays = [...stepRetry.delaysMs];

beforeAll(async () => {
  fakes = await new FakePlatforms([createFake()]).start();
  fake = fakes.fake<YouTubeFake>('youtube');
  process.env.HERALD_PLATFORM_YOUTUBE_URL = fakes.url('youtube');
  stepRetry.delaysMs = [5, 5];
});

afterAll(async () => {
  stepRetry.delaysMs = savedDelays;
  delete process.env.HERALD_PLATFORM_YOUTUBE_URL;
  await fakes.stop();
});

beforeEach(() => fakes.reset());

const CREDS = { access_token: 'token', refresh_token: 'refresh', account_id: 'UCherald' };
const PLAYLIST = 'PLherald0000000000000000000000tutorials';
const THUMB = patternBytes(5000, 9, 13);

const video = (): MediaInput =>
  mediaInput(patternBytes(4096, 3, 17), 'video', 'video/mp4', { filename: 'clip.mp4' });
const thumbnail = (): MediaInput =>
  mediaInput(THUMB, 'image', 'image/jpeg', { url: 'https://media.example/media/med_thumb/thumb.jpg' });

type Warned = Fixture & { warned: Array<{ code: DeliveryWarningCode; detail: string }> };

function ctxOf(over: Partial<PublishContext> = {}): Warned {
  const warned: Warned['warned'] = [];
  const f = publishFixture({
    channel: { id: 'ch_1', handle: 'Herald', platform: 'youtube' },
    credentials: CREDS,
    text: 'Launch day!',
    media: [video()],
    idempotencyKey: 'post_1.ch_1',
    warn: (code, detail) => warned.push({ code, detail }),
    ...over,
  });
  return Object.assign(f, { warned });
}

const requests = () => fakes.requests('youtube');
const playlistInserts = () =>
  requests().filter((r) => r.method === 'POST' && r.path === '/youtube/v3/playlistItems');

describe('youtube formats', () => {
  it('a Short is an ordinary upload (no #Shorts added) whose URL is its Shorts page', async () => {
    const res = await connector.publish(ctxOf({ options: { format: 'short' }, text: 'Quick tip' }));
    const v = fake.videos[0]!;
    expect(res).toEqual({ externalId: v.id, url: `https://www.youtube.com/shorts/${v.id}` });
    expect(v.snippet.title).toBe('Quick tip');
    expect(v.snippet.description).toBe('Quick tip');
    expect(v.snippet.tags).toBeUndefined();
  });

  it('publish_at uploads the video private with status.publishAt', async () => {
    const at = new Date(Date.now() + 86_400_000).toISOString();
    await connector.publish(ctxOf({ options: { publish_at: at, privacy_status: 'public' } }));
    expect(fake.videos[0]!.status).toMatchObject({ privacyStatus: 'private', publishAt: at });
  });

  it('the fake refuses a publishAt on a public video, as videos.insert does', async () => {
    const res = await fetch(
      `${fakes.url('youtube')}/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status`,
      {
        method: 'POST',
        headers: {
          authorization: 'Bearer token',
          'content-type': 'application/json',
          'x-upload-content-length': '10',
          'x-upload-content-type': 'video/mp4',
        },
        body: JSON.stringify({
          snippet: { title: 'x', categoryId: '22' },
          status: { privacyStatus: 'public', publishAt: new Date(Date.now() + 60_000).toISOString() },
        }),
      },
    );
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain('invalidPublishAt');
  });
});

describe('youtube thumbnail and playlist', () => {
  it('sets the thumbnail from the asset bytes and adds the video to the playlist, once each', async () => {
    const f = ctxOf({
      options: { thumbnail_url: 'https://media.example/media/med_thumb/thumb.jpg', playlist_id: PLAYLIST },
      thumbnail: thumbnail(),
    });
    const res = await connector.publish(f);
    const v = fake.videos[0]!;
    expect(res.externalId).toBe(v.id);
    expect(v.thumbnail).toMatchObject({ contentType: 'image/jpeg', sets: 1 });
    expect(Buffer.from(v.thumbnail!.bytes).equals(Buffer.from(THUMB))).toBe(true);
    const set = requests().find((r) => r.path === '/upload/youtube/v3/thumbnails/set')!;
    expect(set.query.get('videoId')).toBe(v.id);
    expect(fake.playlistItems).toEqual([{ id: expect.any(String), playlistId: PLAYLIST, videoId: v.id }]);
    expect(playlistInserts()[0]!.json).toEqual({
      snippet: { playlistId: PLAYLIST, resourceId: { kind: 'youtube#video', videoId: v.id } },
    });
    // The first try does not look: nothing can be there yet.
    expect(
      requests().filter((r) => r.method === 'GET' && r.path === '/youtube/v3/playlistItems'),
    ).toHaveLength(0);
    // The upload session, then the mark before the insert, kept beside it.
    expect(f.checkpoints).toEqual([
      { session_uri: expect.any(String), size: 4096 },
      { session_uri: f.checkpoints[0]!.session_uri, size: 4096, playlist: 'sending' },
    ]);
    expect(f.warned).toEqual([]);
  });

  it("the playlist mark keeps the upload session even when ctx.checkpoint is not updated (the worker's way)", async () => {
    // The worker builds ctx.checkpoint once per attempt: a save does not change it.
    const { ctx, checkpoints } = publishContext({
      channel: { id: 'ch_1', handle: 'Herald', platform: 'youtube' },
      credentials: CREDS,
      media: [video()],
      options: { playlist_id: PLAYLIST },
    });
    await connector.publish(ctx);
    expect(ctx.checkpoint).toBeNull();
    expect(checkpoints.at(-1)).toEqual({
      session_uri: checkpoints[0]?.session_uri,
      size: 4096,
      playlist: 'sending',
    });
  });

  it('a playlist insert refused once (503) is retried: the video is in the playlist once, no warning', async () => {
    fakes.failNext('youtube', { status: 503, path: /playlistItems/ });
    const f = ctxOf({ options: { playlist_id: PLAYLIST } });
    await connector.publish(f);
    expect(fake.playlistItems).toHaveLength(1);
    expect(f.warned).toEqual([]);
  });

  it('a playlist insert whose answer was lost is looked for before trying again: added once', async () => {
    fake.loseNextPlaylistInsert = true;
    const f = ctxOf({ options: { playlist_id: PLAYLIST } });
    await connector.publish(f);
    expect(fake.playlistItems).toHaveLength(1);
    expect(playlistInserts()).toHaveLength(1);
    expect(f.warned).toEqual([]);
  });

  it('after a crash past the playlist mark, the next attempt uploads nothing and adds nothing again', async () => {
    const first = ctxOf({ options: { playlist_id: PLAYLIST } });
    const res = await connector.publish(first);
    // The worker died before recording the outcome: the next attempt sees the last checkpoint.
    const again = ctxOf({ options: { playlist_id: PLAYLIST }, checkpoint: first.checkpoint });
    expect(again.checkpoint).toMatchObject({ playlist: 'sending' });
    expect(await connector.reconcile(again)).toEqual(res);
    expect(await connector.publish(again)).toEqual(res);
    expect(fake.videos).toHaveLength(1);
    expect(fake.playlistItems).toHaveLength(1);
    expect(playlistInserts()).toHaveLength(1);
  });

  it('a playlist that fails for good leaves the video published with playlist_failed', async () => {
    const f = ctxOf({ options: { playlist_id: 'PLnotachannelplaylist00' } });
    const res = await connector.publish(f);
    expect(res.externalId).toBe(fake.videos[0]!.id);
    expect(f.warned).toEqual([
      { code: 'playlist_failed', detail: expect.stringMatching(/playlistNotFound/) },
    ]);
    // Not retried: a 404 is final.
    expect(playlistInserts()).toHaveLength(1);
  });

  it('retries spent: published with the warning after 1 + retries tries', async () => {
    fakes.failNext('youtube', { status: 503, path: /playlistItems/, times: 10 });
    const f = ctxOf({ options: { playlist_id: PLAYLIST } });
    await connector.publish(f);
    expect(f.warned.map((w) => w.code)).toEqual(['playlist_failed']);
    expect(fake.playlistItems).toHaveLength(0);
  });

  it('a thumbnail YouTube refuses, or an asset that cannot be read, is thumbnail_failed; the playlist step still runs', async () => {
    fakes.failNext('youtube', {
      status: 403,
      path: /thumbnails\/set/,
      body: {
        error: {
          code: 403,
          message:
            "The authenticated user doesn't have permissions to upload and set custom video thumbnails.",
          errors: [{ reason: 'forbidden', domain: 'youtube.thumbnail', message: 'forbidden' }],
        },
      },
    });
    const options = {
      thumbnail_url: 'https://media.example/media/med_thumb/thumb.jpg',
      playlist_id: PLAYLIST,
    };
    const f = ctxOf({ options, thumbnail: thumbnail() });
    await connector.publish(f);
    expect(f.warned).toEqual([{ code: 'thumbnail_failed', detail: expect.stringMatching(/403/) }]);
    expect(fake.playlistItems).toHaveLength(1);

    const gone = ctxOf({
      options,
      thumbnail: mediaInput(THUMB, 'image', 'image/jpeg', {
        read: async () => {
          throw new Error('media https://media.example/media/med_thumb/thumb.jpg is not a ready asset');
        },
      }),
    });
    await connector.publish(gone);
    expect(gone.warned.map((w) => w.code)).toEqual(['thumbnail_failed']);
  });
});

describe('youtube choices: playlist_id', () => {
  function ask(): ChoicesContext & { notes: OptionsNote[] } {
    const notes: OptionsNote[] = [];
    return {
      channel: { id: 'ch_1', handle: 'Herald', platform: 'youtube' },
      credentials: CREDS,
      tokens: memoryTokens('youtube', CREDS, []),
      note: (n) => notes.push(n),
      notes,
    };
  }

  it("lists the channel's playlists (playlists.list mine=true), page after page", async () => {
    fake.playlists = Array.from({ length: 60 }, (_, i) => ({
      id: `PLmany${String(i).padStart(18, '0')}`,
      title: `List ${i}`,
    }));
    const a = ask();
    const got = await choices(a);
    expect(got.playlist_id).toHaveLength(60);
    expect(got.playlist_id?.[0]).toEqual({ value: 'PLmany000000000000000000', label: 'List 0' });
    const reads = requests().filter((r) => r.path === '/youtube/v3/playlists');
    expect(
      reads.map((r) => [r.query.get('mine'), r.query.get('maxResults'), r.query.get('pageToken')]),
    ).toEqual([
      ['true', '50', null],
      ['true', '50', 'PT50'],
    ]);
    expect(got.category_id?.length).toBeGreaterThan(0);
    expect(a.notes).toEqual([]);
  });

  it('a failing playlists.list keeps the categories and says why', async () => {
    fakes.failNext('youtube', { status: 500, path: /\/youtube\/v3\/playlists$/ });
    const a = ask();
    const got = await choices(a);
    expect(got.playlist_id).toEqual([]);
    expect(got.category_id?.length).toBeGreaterThan(0);
    expect(a.notes).toEqual([
      { code: 'choices_unavailable', option: 'playlist_id', message: expect.any(String) },
    ]);
  });
});
