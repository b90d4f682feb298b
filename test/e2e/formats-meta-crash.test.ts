import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffmpegPath } from '#adapters/media-tools';
import { CrashStack } from './crash-stack.ts';
import { failPlatform, fakeState } from './helpers.ts';

// A Facebook reel's upload phases killed in between: the local stack on its own data directory is
// killed with SIGKILL (its whole process group) while the worker waits for the platform's answer of
// one phase — the transfer, or the finish — which the platform carried out; started again on the
// same data, the delivery resumes from its checkpoint. Either way the Page has exactly one reel,
// made from one upload session. Both cases are set up before one crash: each comes back after the
// delivery queue's visibility timeout (two minutes locally), which they then wait out together.

type Json = Record<string, unknown>;
const crash = new CrashStack();
const until = crash.until.bind(crash);
let key = '';
let channel = '';
let video = '';
const call = <T = Json>(method: string, path: string, body?: unknown) =>
  crash.call<T>(method, path, key, body);

/** A vertical video asset of this stack; its public URL and id. */
async function upload(): Promise<{ url: string; id: string }> {
  const bytes = readFileSync(video);
  const t = await call<{ asset_id: string; upload_url: string }>('POST', '/v1/media/uploads', {
    filename: 'reel.mp4',
    content_type: 'video/mp4',
    size_bytes: bytes.length,
  });
  expect(t.status, t.text).toBe(201);
  const put = await fetch(t.body.upload_url, {
    method: 'PUT',
    body: bytes,
    headers: { 'content-type': 'video/mp4' },
  });
  expect(put.status).toBe(200);
  const done = await call<{ url: string }>('POST', `/v1/media/uploads/${t.body.asset_id}/complete`);
  expect(done.status, done.text).toBe(200);
  return { url: done.body.url, id: t.body.asset_id };
}

type FbState = { posts: Json[] | null; uploads: Json[] | null };
const ofAsset = (rows: Json[] | null, id: string) =>
  (rows ?? []).filter((r) => JSON.stringify(r).includes(id));

beforeAll(async () => {
  await crash.open('herald-reel-crash-');
  video = join(crash.dir, 'vertical.mp4');
  execFileSync(
    ffmpegPath(),
    [
      ...['-v', 'error', '-nostdin', '-y'],
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
        video,
      ],
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  await crash.boot();
  const t = await crash.tenant(['facebook']);
  key = t.key;
  channel = t.channels.facebook as string;
}, 180_000);

afterAll(async () => {
  await crash.close();
});

async function reel(body: string, mediaUrl: string) {
  const created = await call<{ id: string }>('POST', '/v1/posts', {
    publish_now: true,
    variants: [
      { channel_id: channel, body, media: [{ url: mediaUrl, type: 'video' }], options: { format: 'reel' } },
    ],
  });
  expect(created.status, created.text).toBe(201);
  return created.body.id;
}

async function publishedOnce(postId: string, assetId: string) {
  const post = await until(
    'the reel published',
    async () => {
      const p = (await call<{ status: string; deliveries: Json[] }>('GET', `/v1/posts/${postId}`)).body;
      return p.status === 'published' ? p : undefined;
    },
    200_000,
  );
  const state = (await fakeState('facebook')) as unknown as FbState;
  const reels = ofAsset(state.posts, assetId);
  const sessions = ofAsset(state.uploads, assetId);
  expect(reels).toHaveLength(1);
  expect(reels[0]).toMatchObject({ format: 'reel' });
  expect(sessions.map((u) => [u.edge, u.phase])).toEqual([['video_reels', 'finished']]);
  expect(post.deliveries[0]).toMatchObject({ stage: 'published', external_id: sessions[0]?.videoId });
}

describe('kill -9 between the phases of a Facebook reel upload', () => {
  const held = { transfer: { postId: '', assetId: '' }, finish: { postId: '', assetId: '' } };

  beforeAll(async () => {
    // The transfer: the file reaches the platform, its answer never comes back.
    const transfer = await upload();
    await failPlatform('facebook', {
      status: 200,
      pathPattern: '^/video-upload/',
      headerIncludes: transfer.id,
      holdAnswerMs: 600_000,
    });
    // The finish: the reel is published, the answer never comes back.
    const finish = await upload();
    const marker = `crashfinish${Date.now()}`;
    await failPlatform('facebook', {
      status: 200,
      pathPattern: '/video_reels$',
      bodyIncludes: marker,
      holdAnswerMs: 600_000,
    });
    held.transfer = {
      postId: await reel(`crash transfer ${Date.now()}`, transfer.url),
      assetId: transfer.id,
    };
    held.finish = { postId: await reel(marker, finish.url), assetId: finish.id };
    await Promise.all([
      until(
        'the transfer to be carried out',
        async () => {
          const s = (await fakeState('facebook')) as unknown as FbState;
          return ofAsset(s.uploads, transfer.id).some((u) => u.phase === 'uploaded') ? true : undefined;
        },
        60_000,
      ),
      until(
        'the reel to be published on the Page',
        async () => {
          const s = (await fakeState('facebook')) as unknown as FbState;
          return ofAsset(s.posts, finish.id).length ? true : undefined;
        },
        60_000,
      ),
    ]);

    await crash.stack.kill();
    await crash.boot();
  }, 180_000);

  it('killed while the transfer’s answer is on its way (the file is uploaded): resumed with the same session, one reel', async () => {
    await publishedOnce(held.transfer.postId, held.transfer.assetId);
  }, 240_000);

  it('killed while the finish’s answer is on its way (the reel is published): reconciled, not finished twice', async () => {
    await publishedOnce(held.finish.postId, held.finish.assetId);
  }, 240_000);
});
