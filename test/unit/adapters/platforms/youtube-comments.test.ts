import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PublishContext, PublishResult } from '#adapters/platforms/types';
import { connector } from '#adapters/platforms/youtube/index';
import { commentMaxText } from '#core/platforms';
import { FAKE_APPS } from '../../../fakes/oauth.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { createFake, type YouTubeFake } from '../../../fakes/youtube.ts';
import { failure, mediaInput, patternBytes, publishContext } from './context.ts';

// The YouTube first comment against the contract fake: commentThreads.insert on the uploaded video
// (youtube.force-ssl), its link, the checkpoint before it, reconcile of an interrupted one through
// commentThreads.list, and the refusals of a grant without the scope and of a video that is gone.

let fakes: FakePlatforms;
let fake: YouTubeFake;
const CREDS = { access_token: 'token', refresh_token: 'refresh', account_id: 'UCherald' };
const channel = { id: 'ch_yt', handle: 'Herald', platform: 'youtube' as const };
const TEXT = 'Chapters: 0:00 intro, 1:30 the demo';

beforeAll(async () => {
  fakes = await new FakePlatforms([createFake()]).start();
  fake = fakes.fake<YouTubeFake>('youtube');
  process.env.HERALD_PLATFORM_YOUTUBE_URL = fakes.url('youtube');
});
afterAll(async () => {
  delete process.env.HERALD_PLATFORM_YOUTUBE_URL;
  await fakes.stop();
});
beforeEach(() => fakes.reset());

async function publishRoot(): Promise<PublishResult> {
  const video = mediaInput(patternBytes(4096, 3, 17), 'video', 'video/mp4', { filename: 'demo.mp4' });
  return connector.publish(
    publishContext({ channel, credentials: CREDS, text: 'The demo', media: [video] }).ctx,
  );
}

function commentContext(root: PublishResult, over: Partial<PublishContext> = {}) {
  const ref = { externalId: root.externalId, url: root.url };
  return publishContext({
    channel,
    credentials: CREDS,
    part: { kind: 'comment' },
    replyTo: { root: ref, parent: ref },
    text: TEXT,
    media: [],
    idempotencyKey: 'post_1.ch_yt.c',
    ...over,
  });
}

/** An access token from the fake's consent and token endpoints, with exactly these scopes. */
async function googleToken(scopes: string[]): Promise<string> {
  const app = FAKE_APPS.youtube;
  const redirect = 'https://api.example.com/oauth/callback/youtube';
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: app.clientId,
    redirect_uri: redirect,
    scope: scopes.join(' '),
    access_type: 'offline',
    state: 's',
  });
  const consent = await fetch(`${fakes.url('youtube')}/o/oauth2/v2/auth?${q}`, { redirect: 'manual' });
  const code = new URL(consent.headers.get('location') ?? '').searchParams.get('code') ?? '';
  const res = await fetch(`${fakes.url('youtube')}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirect,
      client_id: app.clientId,
      client_secret: app.clientSecret,
    }),
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

describe('youtube first comment', () => {
  it('inserts a top-level comment thread on the video and links to it', async () => {
    const root = await publishRoot();
    const { ctx, checkpoints } = commentContext(root);

    const result = await connector.publish(ctx);

    expect(fake.comments).toHaveLength(1);
    const c = fake.comments[0]!;
    expect(c).toMatchObject({
      videoId: root.externalId,
      channelId: 'UCherald',
      authorChannelId: 'UCherald',
      text: TEXT,
    });
    expect(result).toEqual({
      externalId: c.id,
      url: `https://www.youtube.com/watch?v=${root.externalId}&lc=${c.id}`,
    });
    const call = fakes
      .requests('youtube')
      .find((r) => r.method === 'POST' && r.path === '/youtube/v3/commentThreads');
    expect(call?.query.get('part')).toBe('snippet');
    expect(call?.json).toEqual({
      snippet: {
        channelId: 'UCherald',
        videoId: root.externalId,
        topLevelComment: { snippet: { textOriginal: TEXT } },
      },
    });
    expect(checkpoints).toEqual([expect.objectContaining({ stage: 'commenting', parent: root.externalId })]);
  });

  it('an interrupted comment (503 after YouTube made it) is found by reconcile, once', async () => {
    const root = await publishRoot();
    fake.loseNextCommentResponse = true;
    const first = commentContext(root);
    const err = await failure(connector.publish(first.ctx));
    expect(err.maybeCarriedOut).toBe(true);

    const found = await connector.reconcile(
      commentContext(root, { checkpoint: first.checkpoints[0] ?? null }).ctx,
    );

    expect(fake.comments).toHaveLength(1);
    expect(found?.externalId).toBe(fake.comments[0]?.id);
  });

  it('reconcile: null without a checkpoint; null when the video has no such comment by the channel', async () => {
    const root = await publishRoot();
    expect(await connector.reconcile(commentContext(root).ctx)).toBeNull();
    fake.comments.push({
      id: 'UgzOther',
      videoId: root.externalId,
      authorChannelId: 'UCsomeoneelse',
      channelId: 'UCherald',
      text: TEXT,
      publishedAt: Date.now(),
    });
    const cp = { stage: 'commenting', parent: root.externalId, sentAt: new Date().toISOString() };
    expect(await connector.reconcile(commentContext(root, { checkpoint: cp }).ctx)).toBeNull();
  });

  it('reconcile that cannot list the threads leaves the outcome unknown', async () => {
    const root = await publishRoot();
    const cp = { stage: 'commenting', parent: root.externalId, sentAt: new Date().toISOString() };
    fakes.failNext('youtube', {
      path: /commentThreads$/,
      status: 500,
      body: { error: { code: 500, message: 'Backend Error', errors: [{ reason: 'backendError' }] } },
    });
    const err = await failure(connector.reconcile(commentContext(root, { checkpoint: cp }).ctx));
    expect(err.opts.unknownOutcome).toBe(true);
  });

  it('a grant without youtube.force-ssl is refused (403 insufficientPermissions → platform_rejected)', async () => {
    const root = await publishRoot();
    const token = await googleToken(['https://www.googleapis.com/auth/youtube.upload']);
    const { ctx } = commentContext(root, { credentials: { access_token: token, account_id: 'UCherald' } });
    const err = await failure(connector.publish(ctx));
    expect(err.category).toBe('platform_rejected');
    expect(err.message).toContain('insufficientPermissions');
    expect(fake.comments).toHaveLength(0);
  });

  it('a grant with youtube.force-ssl comments', async () => {
    const root = await publishRoot();
    const token = await googleToken(['https://www.googleapis.com/auth/youtube.force-ssl']);
    await connector.publish(
      commentContext(root, { credentials: { access_token: token, account_id: 'UCherald' } }).ctx,
    );
    expect(fake.comments).toHaveLength(1);
  });

  it('a video that is gone (404 videoNotFound) and a text over 10,000 characters are user_content', async () => {
    const gone = { externalId: 'vidMissing', url: null };
    const err = await failure(connector.publish(commentContext(gone).ctx));
    expect(err.category).toBe('user_content');
    expect(err.message).toContain('videoNotFound');
    const root = await publishRoot();
    const long = await failure(connector.publish(commentContext(root, { text: 'x'.repeat(10_001) }).ctx));
    expect(long.message).toContain('commentTextTooLong');
    expect(fake.comments).toHaveLength(0);
  });

  it('the daily quota (403 quotaExceeded) is rate_limited', async () => {
    const root = await publishRoot();
    fakes.failNext('youtube', {
      path: /commentThreads$/,
      status: 403,
      body: { error: { code: 403, message: 'quota', errors: [{ reason: 'quotaExceeded' }] } },
    });
    expect((await failure(connector.publish(commentContext(root).ctx))).category).toBe('rate_limited');
  });

  it('takes a comment of the comment limit (commentMaxText) and refuses one more (user_content)', async () => {
    const max = commentMaxText('youtube');
    const root = await publishRoot();
    await connector.publish(commentContext(root, { text: 'é'.repeat(max) }).ctx);
    const over = await failure(connector.publish(commentContext(root, { text: 'é'.repeat(max + 1) }).ctx));
    expect(over.category).toBe('user_content');
    expect(fake.comments).toHaveLength(1);
  });
});
