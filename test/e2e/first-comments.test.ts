import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAKE_APPS } from '../fakes/oauth.ts';
import { makeSamples, type SampleName, type Samples } from '../support/media-samples.ts';
import {
  api,
  baseUrl,
  cliOk,
  dangerous,
  fakeState,
  uploadMedia,
  type Workspace,
  waitForPost,
  workspace,
} from './helpers.ts';

// First comments through the platforms' comment APIs (Instagram, Facebook, LinkedIn, YouTube) over
// HTTP against the local stack: the channel reports the capability from the grant recorded at
// connect, the post publishes, and the comment lands under it on the platform's fake, posted once,
// with its outcome on the delivery.

type Json = Record<string, unknown>;
type Part = { stage: string; external_id: string | null; url: string | null; error: string | null };
type Post = {
  id: string;
  status: string;
  deliveries: Array<Part & { channel_id: string; first_comment: Part | null }>;
};

let samples: Samples;
let ws: Workspace;
const PLATFORMS = ['instagram', 'facebook', 'linkedin', 'youtube'] as const;

const LANDING = 'http://127.0.0.1:9/connected';
/** Connected through consent, so the grant (the comment scope) is recorded at the callback. */
const CONSENTED = ['instagram', 'facebook', 'youtube'] as const;

async function connect(platform: string): Promise<string> {
  const app = FAKE_APPS[platform as keyof typeof FAKE_APPS];
  await cliOk(
    'platform-app',
    'set',
    '--platform',
    platform,
    '--client-id',
    app.clientId,
    '--client-secret',
    app.clientSecret,
  );
  const created = await api<{ id: string; authorize_url: string }>('POST', '/v1/channel-connections', {
    key: ws.key,
    body: { platform, redirect_uri: LANDING },
  });
  expect(created.status, created.text).toBe(201);
  const atPlatform = await fetch(created.body.authorize_url, { redirect: 'manual' });
  expect(atPlatform.status).toBe(302);
  const back = new URL(String(atPlatform.headers.get('location')));
  expect(back.origin).toBe(baseUrl());
  expect((await fetch(back, { redirect: 'manual' })).status).toBe(303);
  type Session = {
    id: string;
    status: string;
    channel: { id: string } | null;
    accounts?: Array<{ id: string }> | null;
  };
  let now = (await api<Session>('GET', `/v1/channel-connections/${created.body.id}`, { key: ws.key })).body;
  if (now.status === 'selecting_account') {
    const picked = await api<Session>('POST', `/v1/channel-connections/${now.id}/select`, {
      key: ws.key,
      body: { account_id: now.accounts?.[0]?.id },
    });
    expect(picked.status, picked.text).toBe(200);
    now = picked.body;
  }
  expect(now.status, JSON.stringify(now)).toBe('connected');
  return String(now.channel?.id);
}

beforeAll(async () => {
  samples = await makeSamples(mkdtempSync(join(tmpdir(), 'herald-first-comments-')));
  ws = await workspace(['linkedin']);
  for (const platform of CONSENTED) ws.channels[platform] = await connect(platform);
  await dangerous(ws, true);
}, 120_000);
afterAll(() => rmSync(samples.dir, { recursive: true, force: true }));

async function upload(name: SampleName): Promise<string> {
  const sample = samples.files[name];
  const ext = sample.path.split('.').pop();
  return (await uploadMedia(ws.key, readFileSync(sample.path), `s.${ext}`, sample.contentType)).url;
}

/** The comment texts the platform's fake holds, whatever its own shape calls the text. */
async function commentsWith(platform: string, marker: string): Promise<Json[]> {
  const state = await fakeState(platform);
  return (state.comments ?? []).filter((c) => JSON.stringify(c).includes(marker));
}

describe('first comments on the platforms with a comment API', () => {
  it.each(PLATFORMS)(
    '%s: the channel can, the post publishes, its comment lands once under it',
    async (platform) => {
      const options = await api<{ capabilities: { first_comment: boolean } }>(
        'GET',
        `/v1/channels/${ws.channels[platform]}/options`,
        { key: ws.key },
      );
      expect(options.status, options.text).toBe(200);
      expect(options.body.capabilities.first_comment).toBe(true);

      const marker = `fc-${platform}-${Date.now()}`;
      const media =
        platform === 'instagram'
          ? [{ url: await upload('jpeg'), type: 'image' }]
          : platform === 'youtube'
            ? [{ url: await upload('mp4'), type: 'video' }]
            : [];
      const res = await api<Post>('POST', '/v1/posts', {
        key: ws.key,
        body: {
          title: platform === 'youtube' ? `A video ${marker}` : null,
          publish_now: true,
          variants: [
            {
              channel_id: ws.channels[platform],
              body: `The post ${marker}`,
              media,
              first_comment: { body: `Link below ${marker} https://example.com/more` },
            },
          ],
        },
      });
      expect(res.status, res.text).toBe(201);
      const post = await waitForPost<Post>(ws.key, res.body.id, (p) =>
        p.deliveries.every((d) => d.stage === 'published' && d.first_comment?.stage !== 'queued'),
      );
      const d = post.deliveries[0];
      expect(d?.stage, JSON.stringify(d)).toBe('published');
      expect(d?.first_comment, JSON.stringify(d)).toMatchObject({ stage: 'published', error: null });
      expect(d?.first_comment?.external_id).toBeTruthy();
      const comments = await commentsWith(platform, marker);
      expect(comments).toHaveLength(1);
      // Under the post the delivery made (each fake names the commented object in its own field).
      const rootId = String(d?.external_id);
      const under = JSON.stringify(comments[0]);
      expect(
        under.includes(rootId) ||
          rootId.split(/[:/_]/).some((part) => part.length > 6 && under.includes(part)),
      ).toBe(true);
    },
  );

  it('a comment over LinkedIn’s 1,250 characters is refused at createPost, nothing written', async () => {
    const res = await api<Json>('POST', '/v1/posts', {
      key: ws.key,
      body: {
        draft: true,
        variants: [
          { channel_id: ws.channels.linkedin, body: 'x', first_comment: { body: 'y'.repeat(1251) } },
        ],
      },
    });
    expect(res.status, res.text).toBe(400);
    expect(JSON.stringify(res.body)).toContain('/variants/0/first_comment/body');
  });
});
