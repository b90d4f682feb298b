import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ffmpegPath } from '#adapters/media-tools';
import { FAKE_APPS } from '../fakes/oauth.ts';
import { makeSamples, type Samples } from '../support/media-samples.ts';
import {
  api,
  cliOk,
  dangerous,
  failPlatform,
  fakeState,
  inDays,
  uploadMedia,
  type Workspace,
  waitForPost,
  workspace,
} from './helpers.ts';

// TikTok's post modes and YouTube's formats over HTTP against the local stack and the platforms'
// contract fakes: the operator's `audited` setting choosing TikTok's inbox or Direct Post, TikTok's
// refusal of an unaudited app's public post, the disclosure fields, a YouTube Short, and a video
// with a thumbnail, a playlist and a publish time whose playlist call fails once.

type Json = Record<string, unknown>;
type Delivery = {
  channel_id: string;
  stage: string;
  external_id: string | null;
  url: string | null;
  error: string | null;
  warnings?: Array<{ code: string; detail: string }>;
};
type Post = { id: string; status: string; deliveries: Delivery[] };

let samples: Samples;
let ws: Workspace;
let vertical: string;

/** TikTok's fake: whether TikTok audited the client (its control endpoint). */
async function fakeAudited(audited: boolean) {
  const res = await fetch(`${inject('fakesOrigin')}/__fakes/tiktok/config`, {
    method: 'POST',
    body: JSON.stringify({ audited }),
  });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ audited });
}

/** The operator's setting, through the CLI as operators run it. */
const operatorAudited = (yes: boolean) =>
  cliOk('platform-app', 'set', '--platform', 'tiktok', '--audited', yes ? 'yes' : 'no');

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'herald-formats-tt-yt-'));
  samples = await makeSamples(dir);
  // Vertical (180×320) and 4 seconds: a Short, and longer than TikTok's 3 s minimum.
  vertical = join(dir, 'vertical.mp4');
  execFileSync(ffmpegPath(), [
    '-v',
    'error',
    '-nostdin',
    '-y',
    ...['-f', 'lavfi', '-i', 'testsrc=size=180x320:rate=25', '-t', '4'],
    ...['-c:v', 'mpeg4', '-pix_fmt', 'yuv420p', vertical],
  ]);
  const app = FAKE_APPS.tiktok;
  await cliOk(
    'platform-app',
    'set',
    '--platform',
    'tiktok',
    '--client-id',
    app.clientId,
    '--client-secret',
    app.clientSecret,
  );
  ws = await workspace(['tiktok', 'youtube']);
  await dangerous(ws, true);
}, 120_000);

afterAll(async () => {
  await fakeAudited(true);
  await operatorAudited(false);
  rmSync(samples.dir, { recursive: true, force: true });
});

const upload = async (path: string, contentType: string): Promise<string> =>
  (await uploadMedia(ws.key, readFileSync(path), `m.${path.split('.').pop()}`, contentType)).url;

/** Publishes one variant now; the delivery once it settled. */
async function publish(variant: Json, title: string | null = null): Promise<Delivery> {
  const res = await api<Post>('POST', '/v1/posts', {
    key: ws.key,
    body: { title, publish_now: true, variants: [variant] },
  });
  expect(res.status, res.text).toBe(201);
  const post = await waitForPost<Post>(ws.key, res.body.id, (p) =>
    p.deliveries.every((d) => d.stage === 'published' || d.stage === 'failed'),
  );
  return post.deliveries[0] as Delivery;
}

type TikTokPost = { publishId: string; mode: string; title: string; postInfo: Json; privacyLevel: string };
const tiktokPosts = async (marker: string) =>
  ((await fakeState('tiktok')).posts as TikTokPost[]).filter((p) => JSON.stringify(p).includes(marker));

describe('TikTok post modes', () => {
  it('an unaudited app (the default): the video goes to the creator’s inbox, published with no URL', async () => {
    await operatorAudited(false);
    const listed = await cliOk('platform-app', 'list');
    expect((listed.data as Json[]).find((a) => a.platform === 'tiktok')).toMatchObject({
      configured: true,
      audited: false,
    });
    const before = (await fakeState('tiktok')).posts?.length ?? 0;
    const d = await publish({
      channel_id: ws.channels.tiktok,
      body: `inbox ${Date.now()}`,
      media: [{ url: await upload(vertical, 'video/mp4'), type: 'video' }],
    });
    expect(d.stage, JSON.stringify(d)).toBe('published');
    expect(d.url).toBeNull();
    const posts = ((await fakeState('tiktok')).posts as TikTokPost[]).slice(before);
    expect(posts).toHaveLength(1);
    expect(posts[0]).toMatchObject({ mode: 'inbox', publishId: d.external_id });
    // The upload endpoint got source_info alone.
    const init = (await fakeState('tiktok')).requests.filter(
      (r) => r.path === '/v2/post/publish/inbox/video/init/',
    );
    expect(Object.keys(init.at(-1)?.json as Json)).toEqual(['source_info']);
  });

  it("an app the operator marked audited that TikTok has not: a public post is TikTok's refusal, saying what to do", async () => {
    await operatorAudited(true);
    await fakeAudited(false);
    try {
      const marker = `refused ${Date.now()}`;
      const d = await publish({
        channel_id: ws.channels.tiktok,
        body: marker,
        media: [{ url: await upload(vertical, 'video/mp4'), type: 'video' }],
        options: { privacy_level: 'PUBLIC_TO_EVERYONE' },
      });
      expect(d.stage, JSON.stringify(d)).toBe('failed');
      expect(d.error).toMatch(/unaudited_client_can_only_post_to_private_accounts/);
      expect(d.error).toMatch(/post_mode inbox/);
      expect(await tiktokPosts(marker)).toEqual([]);
    } finally {
      await fakeAudited(true);
    }
  });

  it('an audited app posts directly; the disclosure fields and the cover frame reach TikTok', async () => {
    await operatorAudited(true);
    const marker = `disclosed ${Date.now()}`;
    const d = await publish({
      channel_id: ws.channels.tiktok,
      body: marker,
      media: [{ url: await upload(vertical, 'video/mp4'), type: 'video' }],
      options: { brand_content: true, brand_organic: true, ai_generated: true, cover_timestamp_ms: 500 },
    });
    expect(d.stage, JSON.stringify(d)).toBe('published');
    expect(d.url).toMatch(/^https:\/\/www\.tiktok\.com\/@.+\/video\/\d+$/);
    const [post] = await tiktokPosts(marker);
    expect(post?.mode).toBe('direct');
    expect(post?.postInfo).toMatchObject({
      title: marker,
      privacy_level: 'PUBLIC_TO_EVERYONE',
      brand_content_toggle: true,
      brand_organic_toggle: true,
      is_aigc: true,
      video_cover_timestamp_ms: 500,
    });
  });
});

type YouTubeState = {
  videos: Array<{
    id: string;
    snippet: Json;
    status: Json;
    thumbnail: { sets: number; sha256: string } | null;
  }>;
  playlistItems: Array<{ playlistId: string; videoId: string }>;
  requests: Array<{ method: string; path: string; query: string; json: unknown }>;
};
const youtube = async () => (await fakeState('youtube')) as unknown as YouTubeState;
const PLAYLIST = 'PLherald0000000000000000000000tutorials';

describe('YouTube formats', () => {
  it('a Short: a vertical video published at its Shorts URL', async () => {
    const marker = `short ${Date.now()}`;
    const d = await publish(
      {
        channel_id: ws.channels.youtube,
        body: marker,
        media: [{ url: await upload(vertical, 'video/mp4'), type: 'video' }],
        options: { format: 'short' },
      },
      marker,
    );
    expect(d.stage, JSON.stringify(d)).toBe('published');
    expect(d.url).toBe(`https://www.youtube.com/shorts/${d.external_id}`);
    const v = (await youtube()).videos.find((x) => x.id === d.external_id);
    expect(v?.snippet.title).toBe(marker);
  });

  it('thumbnail, playlist and publish_at reach YouTube once, the playlist call failing once and retried', async () => {
    const marker = `scheduled ${Date.now()}`;
    const thumbUrl = await upload(samples.files.jpeg.path, 'image/jpeg');
    const at = inDays(3).replace(/\.\d{3}Z$/, 'Z');
    await failPlatform('youtube', { status: 503, pathPattern: '^/youtube/v3/playlistItems$', times: 1 });
    const d = await publish(
      {
        channel_id: ws.channels.youtube,
        body: marker,
        media: [{ url: await upload(vertical, 'video/mp4'), type: 'video' }],
        options: { thumbnail_url: thumbUrl, playlist_id: PLAYLIST, publish_at: at },
      },
      marker,
    );
    expect(d.stage, JSON.stringify(d)).toBe('published');
    expect(d.warnings ?? []).toEqual([]);
    const state = await youtube();
    const v = state.videos.find((x) => x.id === d.external_id);
    expect(v?.status).toMatchObject({ privacyStatus: 'private', publishAt: at });
    const jpeg = createHash('sha256').update(readFileSync(samples.files.jpeg.path)).digest('hex');
    expect(v?.thumbnail).toEqual({ contentType: 'image/jpeg', sets: 1, sha256: jpeg });
    expect(state.playlistItems.filter((i) => i.videoId === d.external_id)).toEqual([
      expect.objectContaining({ playlistId: PLAYLIST, videoId: d.external_id }),
    ]);
    const inserts = state.requests.filter(
      (r) =>
        r.method === 'POST' &&
        r.path === '/youtube/v3/playlistItems' &&
        JSON.stringify(r.json).includes(String(d.external_id)),
    );
    // The refused try and the retry; the video was uploaded once.
    expect(inserts).toHaveLength(2);
    expect(state.videos.filter((x) => x.snippet.title === marker)).toHaveLength(1);
    expect(
      state.requests.filter(
        (r) => r.path === '/upload/youtube/v3/thumbnails/set' && r.query.includes(String(d.external_id)),
      ),
    ).toHaveLength(1);
  });

  it('a playlist YouTube does not have: published with the playlist_failed warning', async () => {
    const d = await publish({
      channel_id: ws.channels.youtube,
      body: `no playlist ${Date.now()}`,
      media: [{ url: await upload(vertical, 'video/mp4'), type: 'video' }],
      options: { playlist_id: 'PLnosuchplaylist0000' },
    });
    expect(d.stage, JSON.stringify(d)).toBe('published');
    expect(d.warnings).toEqual([
      { code: 'playlist_failed', detail: expect.stringMatching(/playlistNotFound/) },
    ]);
  });

  it("getChannelOptions lists the channel's playlists as choices.playlist_id", async () => {
    const res = await api<{ choices: Record<string, Array<{ value: string; label: string }>> }>(
      'GET',
      `/v1/channels/${ws.channels.youtube}/options`,
      { key: ws.key },
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body.choices.playlist_id).toContainEqual({ value: PLAYLIST, label: 'Tutorials' });
  });
});
