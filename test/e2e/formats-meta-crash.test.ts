import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ffmpegPath } from '#adapters/media-tools';
import { freePort } from '../../bin/local/services.ts';
import { PLATFORMS } from '../../functions/core/constants.ts';
import { type RunningStack, startLocalStack } from '../support/local-stack.ts';
import { ALL_SCOPES, CREDENTIALS, failPlatform, fakeState } from './helpers.ts';

// A Facebook reel's upload phases killed in between: the local stack on its own data directory is
// killed with SIGKILL (its whole process group) while the worker waits for the platform's answer of
// one phase — the transfer, or the finish — which the platform carried out; started again on the
// same data, the delivery resumes from its checkpoint. Either way the Page has exactly one reel,
// made from one upload session.

type Json = Record<string, unknown>;
const root = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
const verbose = Boolean(process.env.HERALD_E2E_VERBOSE);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let dir = '';
let port = 0;
let stack: RunningStack;
let key = '';
let channel = '';
let video = '';

async function boot() {
  const fakes = inject('fakesOrigin');
  stack = await startLocalStack(
    {
      ...Object.fromEntries(
        PLATFORMS.map((p) => [`HERALD_PLATFORM_${p.toUpperCase()}_URL`, `${fakes}/${p}`]),
      ),
      HERALD_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
    },
    verbose,
    { dataDir: dir, port, detached: true },
  );
}

async function call<T = Json>(method: string, path: string, body?: unknown) {
  const res = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as T, text };
}

async function admin(...args: string[]): Promise<Json> {
  const { stdout } = await run(process.execPath, [join(root, 'bin/herald.js'), ...args, '--json'], {
    env: { ...process.env, HERALD_DATA_DIR: dir },
    cwd: root,
  });
  return JSON.parse(stdout) as Json;
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}\n${stack.output().slice(-3000)}`);
    await sleep(200);
  }
}

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
  dir = mkdtempSync(join(tmpdir(), 'herald-reel-crash-'));
  video = join(dir, 'vertical.mp4');
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
  port = await freePort();
  await boot();
  const created = await admin(
    'org',
    'create',
    '--name',
    'Reels',
    '--plan',
    'agency',
    '--owner-email',
    `r${Date.now()}@e2e.test`,
  );
  const orgId = (created.org as Json).id as string;
  const ownerId = (created.owner as Json).id as string;
  key = (await admin('key', 'mint', '--org', orgId, '--by', ownerId, '--scopes', ALL_SCOPES)).key as string;
  await admin('settings', 'set', '--org', orgId, '--by', ownerId, '--dangerous-ops', 'on');
  channel = (
    await admin(
      'channel',
      'connect',
      '--org',
      orgId,
      '--platform',
      'facebook',
      '--credentials',
      JSON.stringify(CREDENTIALS.facebook),
    )
  ).id as string;
}, 180_000);

afterAll(async () => {
  await stack?.kill();
  rmSync(dir, { recursive: true, force: true });
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
  it('killed while the transfer’s answer is on its way (the file is uploaded): resumed with the same session, one reel', async () => {
    const asset = await upload();
    await failPlatform('facebook', {
      status: 200,
      pathPattern: '^/video-upload/',
      headerIncludes: asset.id,
      holdAnswerMs: 600_000,
    });
    const postId = await reel(`crash transfer ${Date.now()}`, asset.url);
    await until(
      'the transfer to be carried out',
      async () => {
        const s = (await fakeState('facebook')) as unknown as FbState;
        return ofAsset(s.uploads, asset.id).some((u) => u.phase === 'uploaded') ? true : undefined;
      },
      60_000,
    );

    await stack.kill();
    await boot();

    await publishedOnce(postId, asset.id);
  }, 300_000);

  it('killed while the finish’s answer is on its way (the reel is published): reconciled, not finished twice', async () => {
    const asset = await upload();
    const marker = `crashfinish${Date.now()}`;
    await failPlatform('facebook', {
      status: 200,
      pathPattern: '/video_reels$',
      bodyIncludes: marker,
      holdAnswerMs: 600_000,
    });
    const postId = await reel(marker, asset.url);
    await until(
      'the reel to be published on the Page',
      async () => {
        const s = (await fakeState('facebook')) as unknown as FbState;
        return ofAsset(s.posts, asset.id).length ? true : undefined;
      },
      60_000,
    );

    await stack.kill();
    await boot();

    await publishedOnce(postId, asset.id);
  }, 300_000);
});
