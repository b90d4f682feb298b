import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { uploadPolling } from '#adapters/platforms/facebook/formats';
import { connector as facebook } from '#adapters/platforms/facebook/index';
import { connector as instagram } from '#adapters/platforms/instagram/index';
import { containerPolling } from '#adapters/platforms/meta/publish';
import type { PublishContext } from '#adapters/platforms/types';
import { createFake as createFacebook, type FacebookFake } from '../../../fakes/facebook.ts';
import { createFake as createInstagram, type InstagramFake } from '../../../fakes/instagram.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { cdn, failure, mediaInput, publishContext } from './context.ts';

// Instagram and Facebook formats (`options.format` story and reel) against the contract fakes:
// Instagram's REELS and STORIES containers, Facebook's reel and story upload phases, the checkpoint
// saved before the irreversible step, resuming from it, reconcile, and what the fakes refuse.

const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from('story-jpeg')]);
const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 0x20]), Buffer.from('ftypisom-a-vertical-reel')]);
const NOT_VIDEO = Buffer.from('this is plain text, not a video container');

const cdnFake = cdn();
const platforms = new FakePlatforms([createInstagram(), createFacebook(), cdnFake]);
let ig: InstagramFake;
let fb: FacebookFake;
const saved = { container: { ...containerPolling }, upload: { ...uploadPolling } };

beforeAll(async () => {
  await platforms.start();
  ig = platforms.fake<InstagramFake>('instagram');
  fb = platforms.fake<FacebookFake>('facebook');
  process.env.HERALD_PLATFORM_INSTAGRAM_URL = platforms.url('instagram');
  process.env.HERALD_PLATFORM_FACEBOOK_URL = platforms.url('facebook');
  Object.assign(containerPolling, { firstDelayMs: 5, maxDelayMs: 20, budgetMs: 2000 });
  Object.assign(uploadPolling, { firstDelayMs: 5, maxDelayMs: 20, budgetMs: 2000 });
});
afterAll(async () => {
  Object.assign(containerPolling, saved.container);
  Object.assign(uploadPolling, saved.upload);
  delete process.env.HERALD_PLATFORM_INSTAGRAM_URL;
  delete process.env.HERALD_PLATFORM_FACEBOOK_URL;
  await platforms.stop();
});
beforeEach(() => platforms.reset());

function media(name: string, type: 'image' | 'video', bytes: Buffer) {
  const ct = type === 'image' ? 'image/jpeg' : 'video/mp4';
  cdnFake.files.set(name, { bytes, type: ct });
  return mediaInput(new Uint8Array(bytes), type, ct, {
    filename: name,
    url: `${platforms.url('cdn')}/${name}`,
  });
}

function igContext(over: Partial<PublishContext> = {}, keepCheckpoint = false) {
  return publishContext(
    {
      channel: { id: 'ch_ig', handle: 'acme', platform: 'instagram' },
      credentials: { access_token: 'token', account_id: ig.igUserId },
      text: '',
      ...over,
    },
    { keepCheckpoint },
  );
}

function fbContext(over: Partial<PublishContext> = {}, keepCheckpoint = false) {
  return publishContext(
    {
      channel: { id: 'ch_fb', handle: 'Acme', platform: 'facebook' },
      credentials: { access_token: 'token', account_id: fb.pageId },
      text: '',
      ...over,
    },
    { keepCheckpoint },
  );
}

const igPosts = (path: RegExp) =>
  platforms
    .requests('instagram')
    .filter((r) => r.method === 'POST' && path.test(r.path))
    .map((r) => new URLSearchParams(r.body.toString('utf8')));

const fbCalls = () =>
  platforms
    .requests('facebook')
    .filter((r) => r.method === 'POST')
    .map((r) => {
      const p = new URLSearchParams(r.body.toString('utf8'));
      const edge = r.path.split('/').at(-1) ?? '';
      return r.path.includes('/video-upload/')
        ? 'transfer'
        : `${edge}${p.get('upload_phase') ? `:${p.get('upload_phase')}` : ''}`;
    });

describe('instagram formats', () => {
  it('reel: one REELS container with video_url, caption and share_to_feed, then media_publish', async () => {
    ig.processingPolls = 1;
    const { ctx } = igContext({
      text: 'Behind the scenes #reel',
      options: { format: 'reel' },
      media: [media('reel.mp4', 'video', MP4)],
    });

    const result = await instagram.publish(ctx);

    const [create] = igPosts(/\/media$/);
    expect(create?.get('media_type')).toBe('REELS');
    expect(create?.get('video_url')).toBe(`${platforms.url('cdn')}/reel.mp4`);
    expect(create?.get('caption')).toBe('Behind the scenes #reel');
    expect(create?.get('share_to_feed')).toBe('true');
    expect(ig.media).toHaveLength(1);
    expect(ig.media[0]).toMatchObject({ productType: 'REELS', mediaType: 'VIDEO', shareToFeed: true });
    expect(result).toEqual({ externalId: ig.media[0]?.id, url: ig.media[0]?.permalink });
  });

  it('story: a STORIES container with image_url and no caption or alt text; listed on /stories, not /media', async () => {
    const { ctx } = igContext({ options: { format: 'story' }, media: [media('s.jpg', 'image', JPEG)] });

    const result = await instagram.publish(ctx);

    const [create] = igPosts(/\/media$/);
    expect(create?.get('media_type')).toBe('STORIES');
    expect(create?.get('image_url')).toBe(`${platforms.url('cdn')}/s.jpg`);
    expect(create?.has('caption')).toBe(false);
    expect(create?.has('alt_text')).toBe(false);
    expect(ig.media[0]).toMatchObject({ productType: 'STORY', mediaType: 'IMAGE' });
    expect(result.externalId).toBe(ig.media[0]?.id);
    const base = `${platforms.url('instagram')}/v24.0/${ig.igUserId}`;
    const list = async (edge: string) =>
      ((await (await fetch(`${base}/${edge}?access_token=token&fields=id`)).json()) as { data: unknown[] })
        .data;
    expect(await list('stories')).toEqual([{ id: result.externalId }]);
    expect(await list('media')).toEqual([]);
  });

  it('story: a video goes as STORIES with video_url', async () => {
    const { ctx } = igContext({ options: { format: 'story' }, media: [media('s.mp4', 'video', MP4)] });

    await instagram.publish(ctx);

    const [create] = igPosts(/\/media$/);
    expect([create?.get('media_type'), create?.get('video_url')]).toEqual([
      'STORIES',
      `${platforms.url('cdn')}/s.mp4`,
    ]);
    expect(ig.media[0]).toMatchObject({ productType: 'STORY', mediaType: 'VIDEO' });
  });

  it('a story with a caption, a reel of an image, two items as a reel: refused before any call', async () => {
    const cases: Array<Partial<PublishContext>> = [
      { text: 'caption', options: { format: 'story' }, media: [media('a.jpg', 'image', JPEG)] },
      { options: { format: 'reel' }, media: [media('a.jpg', 'image', JPEG)] },
      { options: { format: 'reel' }, media: [media('a.mp4', 'video', MP4), media('b.mp4', 'video', MP4)] },
    ];
    for (const c of cases) {
      const err = await failure(instagram.publish(igContext(c).ctx));
      expect(err.category).toBe('user_content');
    }
    expect(igPosts(/\/media$/)).toEqual([]);
  });

  it('the fake refuses a REELS container without video_url and fails a reel whose file is not a video (2207026)', async () => {
    const res = await fetch(`${platforms.url('instagram')}/v24.0/${ig.igUserId}/media`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ access_token: 'token', media_type: 'REELS', image_url: 'https://x/a.jpg' }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(100);

    const err = await failure(
      instagram.publish(
        igContext({ options: { format: 'reel' }, media: [media('t.mp4', 'video', NOT_VIDEO)] }).ctx,
      ),
    );
    expect(err.category).toBe('media_error');
    expect(err.message).toContain('2207026');
    expect(ig.media).toEqual([]);
  });

  it('a story published whose answer was lost: reconcile finds it on /stories; publishing again makes no second one', async () => {
    ig.loseNextPublishResponse = true;
    const first = igContext({ options: { format: 'story' }, media: [media('s.jpg', 'image', JPEG)] }, true);
    await failure(instagram.publish(first.ctx));
    expect(ig.media).toHaveLength(1);

    const again = { ...first.ctx, checkpoint: first.checkpoints.at(-1) ?? null };
    const found = await instagram.reconcile(again);
    expect(found).toEqual({ externalId: ig.media[0]?.id, url: ig.media[0]?.permalink });
    expect(await instagram.publish(again)).toEqual(found);
    expect(ig.media).toHaveLength(1);
    expect(igPosts(/\/media_publish$/)).toHaveLength(1);
  });
});

describe('facebook reels', () => {
  it('start → rupload transfer by file_url with the OAuth header → status → finish PUBLISHED with the description', async () => {
    fb.processingPolls = 1;
    let postsAtFinishCheckpoint = -1;
    const rec = fbContext({
      text: 'Our new reel',
      options: { format: 'reel' },
      media: [media('r.mp4', 'video', MP4)],
    });
    const save = rec.ctx.saveCheckpoint;
    rec.ctx.saveCheckpoint = async (cp) => {
      if (cp.finishing) postsAtFinishCheckpoint = fb.posts.length;
      await save(cp);
    };

    const result = await facebook.publish(rec.ctx);

    expect(fbCalls()).toEqual(['video_reels:start', 'transfer', 'video_reels:finish']);
    const upload = platforms.requests('facebook').find((r) => r.path.includes('/video-upload/'));
    expect(upload?.headers.authorization).toBe('OAuth token');
    expect(upload?.headers.file_url).toBe(`${platforms.url('cdn')}/r.mp4`);
    const finish = new URLSearchParams(platforms.requests('facebook').at(-1)?.body.toString('utf8') ?? '');
    expect(finish.get('video_state')).toBe('PUBLISHED');
    expect(finish.get('description')).toBe('Our new reel');
    const videoId = fb.uploads[0]?.videoId as string;
    expect(finish.get('video_id')).toBe(videoId);
    expect(result).toEqual({ externalId: videoId, url: `https://www.facebook.com/reel/${videoId}` });
    expect(fb.posts).toHaveLength(1);
    expect(fb.posts[0]).toMatchObject({ format: 'reel', message: 'Our new reel', videoId });
    expect(fb.posts[0]?.media[0]?.bytes.equals(MP4)).toBe(true);
    // The checkpoint before finish names the video; nothing was published then.
    expect(postsAtFinishCheckpoint).toBe(0);
    expect(rec.checkpoints.at(-1)).toMatchObject({
      kind: 'reel',
      media_id: videoId,
      finishing: true,
    });
    // Two saves: the session as started, then right before finish (the transfer is not recorded).
    expect(rec.checkpoints).toHaveLength(2);
  });

  it('a finish that failed is resumed from the checkpoint: the same upload session, no second start or transfer, one reel', async () => {
    platforms.failNext('facebook', {
      status: 500,
      path: /video_reels$/,
      bodyIncludes: 'upload_phase=finish',
      body: { error: { message: 'An unexpected error has occurred.', code: 2, type: 'OAuthException' } },
    });
    const first = fbContext({ options: { format: 'reel' }, media: [media('r.mp4', 'video', MP4)] }, true);
    await failure(facebook.publish(first.ctx));
    expect(fb.posts).toHaveLength(0);

    const again = { ...first.ctx, checkpoint: first.checkpoints.at(-1) ?? null };
    expect(await facebook.reconcile(again)).toBeNull();
    const result = await facebook.publish(again);

    expect(fbCalls()).toEqual(['video_reels:start', 'transfer', 'video_reels:finish', 'video_reels:finish']);
    expect(fb.posts).toHaveLength(1);
    expect(result.externalId).toBe(fb.uploads[0]?.videoId);
  });

  it('a finish whose answer was lost: reconcile finds the reel by its publishing phase, publish again does not finish twice', async () => {
    fb.loseNextResponse = true;
    const first = fbContext({ options: { format: 'reel' }, media: [media('r.mp4', 'video', MP4)] }, true);
    await failure(facebook.publish(first.ctx));
    expect(fb.posts).toHaveLength(1);

    const again = { ...first.ctx, checkpoint: first.checkpoints.at(-1) ?? null };
    const videoId = fb.uploads[0]?.videoId as string;
    const expected = { externalId: videoId, url: `https://www.facebook.com/reel/${videoId}` };
    expect(await facebook.reconcile(again)).toEqual(expected);
    expect(await facebook.publish(again)).toEqual(expected);
    expect(fbCalls().filter((c) => c === 'video_reels:finish')).toHaveLength(1);
    expect(fb.posts).toHaveLength(1);
  });

  it('killed right after the transfer, before the finish checkpoint: the session is resumed (its status says uploaded), one reel', async () => {
    const first = fbContext({ options: { format: 'reel' }, media: [media('r.mp4', 'video', MP4)] }, true);
    const save = first.ctx.saveCheckpoint;
    first.ctx.saveCheckpoint = async (cp) => {
      if (cp.finishing) throw new Error('the worker died');
      await save(cp);
    };
    await expect(facebook.publish(first.ctx)).rejects.toThrow('the worker died');
    expect(fb.uploads[0]?.phase).toBe('uploaded');

    const again = { ...first.ctx, saveCheckpoint: save, checkpoint: first.checkpoints.at(-1) ?? null };
    expect(again.checkpoint).toMatchObject({ kind: 'reel' });
    expect(again.checkpoint?.finishing).toBeFalsy();
    expect(await facebook.reconcile(again)).toBeNull();
    await facebook.publish(again);
    expect(fbCalls()).toEqual(['video_reels:start', 'transfer', 'video_reels:finish']);
    expect(fb.posts.filter((p) => p.format === 'reel')).toHaveLength(1);
  });

  it('a reel whose file is not a video: processing fails, media_error, nothing published', async () => {
    const err = await failure(
      facebook.publish(
        fbContext({ options: { format: 'reel' }, media: [media('t.mp4', 'video', NOT_VIDEO)] }).ctx,
      ),
    );
    expect(err.category).toBe('media_error');
    expect(fb.posts).toEqual([]);
    expect(fbCalls()).not.toContain('video_reels:finish');
  });

  it('the fake refuses the phases out of order: finish before the transfer, a second transfer, a second finish', async () => {
    const graph = `${platforms.url('facebook')}/v24.0/${fb.pageId}/video_reels`;
    const form = (p: Record<string, string>) =>
      fetch(graph, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ access_token: 'token', ...p }),
      });
    const start = (await (await form({ upload_phase: 'start' })).json()) as {
      video_id: string;
      upload_url: string;
    };
    const early = await form({ upload_phase: 'finish', video_id: start.video_id, video_state: 'PUBLISHED' });
    expect(early.status).toBe(400);
    expect(((await early.json()) as { error: { code: number } }).error.code).toBe(6000);
    const put = () =>
      fetch(`${platforms.url('facebook')}${new URL(start.upload_url).pathname}`, {
        method: 'POST',
        headers: { authorization: 'OAuth token', file_url: `${platforms.url('cdn')}/r.mp4` },
      });
    media('r.mp4', 'video', MP4);
    expect((await put()).status).toBe(200);
    const twice = await put();
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as { debug_info: { type: string } }).debug_info.type).toBe(
      'ProcessingFailedError',
    );
    expect(
      (await form({ upload_phase: 'finish', video_id: start.video_id, video_state: 'PUBLISHED' })).status,
    ).toBe(200);
    expect(
      (await form({ upload_phase: 'finish', video_id: start.video_id, video_state: 'PUBLISHED' })).status,
    ).toBe(400);
    expect((await form({ upload_phase: 'transfer' })).status).toBe(400);
    expect(fb.posts).toHaveLength(1);
  });
});

describe('facebook stories', () => {
  it('photo: an unpublished photo, then photo_stories; the story has its url and stays off the feed', async () => {
    const { ctx, checkpoints } = fbContext({
      options: { format: 'story' },
      media: [media('s.jpg', 'image', JPEG)],
    });

    const result = await facebook.publish(ctx);

    expect(fbCalls()).toEqual(['photos', 'photo_stories']);
    const photos = new URLSearchParams(platforms.requests('facebook')[0]?.body.toString('utf8') ?? '');
    expect(photos.get('published')).toBe('false');
    const story = fb.posts[0];
    expect(story).toMatchObject({ format: 'story' });
    expect(result).toEqual({ externalId: story?.id, url: story?.permalink });
    expect(checkpoints.at(-1)).toMatchObject({
      kind: 'photo_story',
      media_id: story?.mediaId,
      finishing: true,
    });
    const feed = await fetch(`${platforms.url('facebook')}/v24.0/${fb.pageId}/feed?access_token=token`);
    expect(((await feed.json()) as { data: unknown[] }).data).toEqual([]);
  });

  it('video: video_stories start → transfer → finish', async () => {
    const result = await facebook.publish(
      fbContext({ options: { format: 'story' }, media: [media('s.mp4', 'video', MP4)] }).ctx,
    );

    expect(fbCalls()).toEqual(['video_stories:start', 'transfer', 'video_stories:finish']);
    expect(fb.posts[0]).toMatchObject({ format: 'story', mediaId: fb.uploads[0]?.videoId });
    expect(result.externalId).toBe(fb.posts[0]?.id);
  });

  it('a story with text is refused before any call', async () => {
    const err = await failure(
      facebook.publish(
        fbContext({ text: 'hello', options: { format: 'story' }, media: [media('s.jpg', 'image', JPEG)] })
          .ctx,
      ),
    );
    expect(err.category).toBe('user_content');
    expect(fbCalls()).toEqual([]);
  });

  it('a photo story whose answer was lost: reconcile finds it by its media id; publishing again posts nothing more', async () => {
    fb.loseNextResponse = true;
    const first = fbContext({ options: { format: 'story' }, media: [media('s.jpg', 'image', JPEG)] }, true);
    await failure(facebook.publish(first.ctx));
    expect(fb.posts).toHaveLength(1);

    const again = { ...first.ctx, checkpoint: first.checkpoints.at(-1) ?? null };
    const story = fb.posts[0];
    expect(await facebook.reconcile(again)).toEqual({ externalId: story?.id, url: story?.permalink });
    expect(await facebook.publish(again)).toEqual({ externalId: story?.id, url: story?.permalink });
    expect(fbCalls().filter((c) => c === 'photo_stories')).toHaveLength(1);
    expect(fb.posts).toHaveLength(1);
  });

  it('the fake refuses a photo story of a photo that is already published', async () => {
    await facebook.publish(
      fbContext({ options: { format: 'story' }, media: [media('s.jpg', 'image', JPEG)] }).ctx,
    );
    const res = await fetch(`${platforms.url('facebook')}/v24.0/${fb.pageId}/photo_stories`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ access_token: 'token', photo_id: fb.posts[0]?.mediaId as string }),
    });
    expect(res.status).toBe(400);
  });
});
