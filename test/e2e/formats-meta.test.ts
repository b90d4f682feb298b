import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffmpegPath } from '#adapters/media-tools';
import { api, dangerous, fakeState, uploadMedia, type Workspace, waitForPost, workspace } from './helpers.ts';

// Instagram and Facebook formats through the local stack: createPost with `options.format`, the
// delivery published, and the platform's fake holding what its documented calls made (Instagram's
// REELS and STORIES containers; Facebook's reel and story upload phases).

type Json = Record<string, unknown>;
type Delivery = {
  channel_id: string;
  stage: string;
  external_id: string | null;
  url: string | null;
  error: string | null;
};
type Post = { id: string; status: string; deliveries: Delivery[] };

let ws: Workspace;
let dir = '';
/** A vertical 540×960, 4-second H.264/AAC MP4 (Facebook's reel minimum) and a 4:5 JPEG. */
const files = { mp4: '', jpeg: '' };

function ffmpeg(args: string[]) {
  execFileSync(ffmpegPath(), ['-v', 'error', '-nostdin', '-y', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'herald-formats-meta-'));
  files.mp4 = join(dir, 'vertical.mp4');
  files.jpeg = join(dir, 'portrait.jpg');
  ffmpeg([
    ...['-f', 'lavfi', '-i', 'testsrc=size=540x960:rate=30'],
    ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000'],
    ...[
      '-t',
      '4',
      '-c:v',
      'libx264',
      '-pix_fmt',
      'yuv420p',
      '-c:a',
      'aac',
      '-movflags',
      '+faststart',
      files.mp4,
    ],
  ]);
  ffmpeg(['-f', 'lavfi', '-i', 'testsrc=size=1080x1350', '-frames:v', '1', files.jpeg]);
  ws = await workspace(['instagram', 'facebook']);
  await dangerous(ws, true);
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Uploads a file as a media asset; its public URL and id. */
async function upload(kind: 'mp4' | 'jpeg'): Promise<{ url: string; id: string }> {
  const [name, contentType] = kind === 'mp4' ? ['f.mp4', 'video/mp4'] : ['f.jpg', 'image/jpeg'];
  return uploadMedia(ws.key, readFileSync(files[kind]), name, contentType);
}

async function publish(platform: 'instagram' | 'facebook', body: string, format: string, media: Json[]) {
  const res = await api<Post>('POST', '/v1/posts', {
    key: ws.key,
    body: {
      publish_now: true,
      variants: [{ channel_id: ws.channels[platform], body, media, options: { format } }],
    },
  });
  expect(res.status, res.text).toBe(201);
  const post = await waitForPost<Post>(
    ws.key,
    res.body.id,
    (p) => p.status === 'published' || p.status === 'failed',
    60_000,
  );
  expect(post.status, JSON.stringify(post.deliveries)).toBe('published');
  return post.deliveries[0] as Delivery;
}

const ofAsset = (rows: Json[] | null, assetId: string) =>
  (rows ?? []).filter((r) => JSON.stringify(r).includes(assetId));

describe('instagram formats through the stack', () => {
  it('reel: one REELS container shared to the feed, published as a reel with its caption', async () => {
    const video = await upload('mp4');
    const marker = `ig-reel-${Date.now()}`;

    const d = await publish('instagram', `A reel ${marker}`, 'reel', [{ url: video.url, type: 'video' }]);

    const state = (await fakeState('instagram')) as unknown as { posts: Json[]; uploads: Json[] };
    const media = ofAsset(state.posts, video.id);
    expect(media).toHaveLength(1);
    expect(media[0]).toMatchObject({
      productType: 'REELS',
      mediaType: 'VIDEO',
      shareToFeed: true,
      caption: `A reel ${marker}`,
    });
    expect(d).toMatchObject({ external_id: media[0]?.id, url: media[0]?.permalink });
    expect(ofAsset(state.uploads, video.id).map((c) => [c.kind, c.status])).toEqual([['REELS', 'PUBLISHED']]);
  });

  it('story: one STORIES container of the image, no caption, published as a story', async () => {
    const image = await upload('jpeg');

    const d = await publish('instagram', '', 'story', [{ url: image.url, type: 'image' }]);

    const state = (await fakeState('instagram')) as unknown as { posts: Json[]; uploads: Json[] };
    const media = ofAsset(state.posts, image.id);
    expect(media).toHaveLength(1);
    expect(media[0]).toMatchObject({ productType: 'STORY', mediaType: 'IMAGE' });
    expect(media[0]?.caption).toBeUndefined();
    expect(d.external_id).toBe(media[0]?.id);
    expect(ofAsset(state.uploads, image.id).map((c) => [c.kind, c.storyOf, c.status])).toEqual([
      ['STORIES', 'IMAGE', 'PUBLISHED'],
    ]);
  });
});

describe('facebook formats through the stack', () => {
  it('reel: start, rupload transfer by file_url, finish PUBLISHED with the description; one reel', async () => {
    const video = await upload('mp4');
    const marker = `fb-reel-${Date.now()}`;

    const d = await publish('facebook', `A Page reel ${marker}`, 'reel', [{ url: video.url, type: 'video' }]);

    const state = (await fakeState('facebook')) as unknown as {
      posts: Json[];
      uploads: Json[];
      requests: Array<{ method: string; path: string; headers: Record<string, string> }>;
    };
    const reels = ofAsset(state.posts, video.id);
    expect(reels).toHaveLength(1);
    expect(reels[0]).toMatchObject({ format: 'reel', message: `A Page reel ${marker}` });
    const sessions = ofAsset(state.uploads, video.id);
    expect(sessions.map((u) => [u.edge, u.phase])).toEqual([['video_reels', 'finished']]);
    const videoId = String(sessions[0]?.videoId);
    expect(d).toMatchObject({ external_id: videoId, url: `https://www.facebook.com/reel/${videoId}` });
    const transfers = state.requests.filter((r) => r.path.endsWith(`/video-upload/v24.0/${videoId}`));
    expect(transfers).toHaveLength(1);
    expect(transfers[0]?.headers.file_url).toBe(video.url);
    expect(transfers[0]?.headers.authorization).toMatch(/^OAuth /);
  });

  it('story of a photo: an unpublished photo, then photo_stories', async () => {
    const image = await upload('jpeg');

    const d = await publish('facebook', '', 'story', [{ url: image.url, type: 'image' }]);

    const state = (await fakeState('facebook')) as unknown as { posts: Json[] };
    const stories = ofAsset(state.posts, image.id);
    expect(stories).toHaveLength(1);
    expect(stories[0]).toMatchObject({ format: 'story', id: d.external_id, permalink: d.url });
  });

  it('story of a video: video_stories start, transfer, finish', async () => {
    const video = await upload('mp4');

    const d = await publish('facebook', '', 'story', [{ url: video.url, type: 'video' }]);

    const state = (await fakeState('facebook')) as unknown as { posts: Json[]; uploads: Json[] };
    const stories = ofAsset(state.posts, video.id);
    expect(stories).toHaveLength(1);
    expect(stories[0]).toMatchObject({ format: 'story', id: d.external_id });
    expect(ofAsset(state.uploads, video.id).map((u) => [u.edge, u.phase])).toEqual([
      ['video_stories', 'finished'],
    ]);
  });
});
