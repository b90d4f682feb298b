import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connector } from '#adapters/platforms/facebook/index';
import type { PublishContext, PublishResult } from '#adapters/platforms/types';
import { commentMaxText } from '#core/platforms';
import { createFake, type FacebookFake } from '../../../fakes/facebook.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { cdn, failure, mediaInput, publishContext } from './context.ts';

// The Facebook Page first comment against the contract fake: POST /{page-post-id}/comments with the
// Page token (the Page is the author), its permalink, the checkpoint before it, reconcile of an
// interrupted one by listing the post's comments, and the errors of a missing grant or post.

const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypmp42-page-video')]);
const cdnFake = cdn();
const platforms = new FakePlatforms([createFake(), cdnFake]);
let fake: FacebookFake;

beforeAll(async () => {
  await platforms.start();
  fake = platforms.fake<FacebookFake>('facebook');
  process.env.HERALD_PLATFORM_FACEBOOK_URL = platforms.url('facebook');
});
afterAll(async () => {
  delete process.env.HERALD_PLATFORM_FACEBOOK_URL;
  await platforms.stop();
});
beforeEach(() => platforms.reset());

const channel = { id: 'ch_fb', handle: 'Acme', platform: 'facebook' as const };
const credentials = () => ({ access_token: 'token', account_id: fake.pageId });
const TEXT = 'Tickets: https://acme.example/tickets';

function rootContext(over: Partial<PublishContext> = {}) {
  return publishContext({ channel, credentials: credentials(), text: 'We are open on Sunday!', ...over });
}

function commentContext(root: PublishResult, over: Partial<PublishContext> = {}) {
  const ref = { externalId: root.externalId, url: root.url };
  return publishContext({
    channel,
    credentials: credentials(),
    part: { kind: 'comment' },
    replyTo: { root: ref, parent: ref },
    text: TEXT,
    media: [],
    idempotencyKey: 'post_1.ch_fb.c',
    ...over,
  });
}

const commentPosts = () =>
  platforms.requests('facebook').filter((r) => r.method === 'POST' && r.path.endsWith('/comments'));

describe('facebook first comment', () => {
  it('comments on the feed post as the Page and returns the comment permalink', async () => {
    const root = await connector.publish(rootContext().ctx);
    const { ctx, checkpoints } = commentContext(root);

    const result = await connector.publish(ctx);

    expect(fake.comments).toHaveLength(1);
    const c = fake.comments[0]!;
    expect(c).toMatchObject({ objectId: root.externalId, message: TEXT, from: { id: fake.pageId } });
    expect(result).toEqual({ externalId: c.id, url: c.permalink });
    expect(commentPosts()[0]?.path).toMatch(new RegExp(`/${root.externalId}/comments$`));
    expect(new URLSearchParams(commentPosts()[0]?.body.toString('utf8')).get('message')).toBe(TEXT);
    expect(checkpoints).toEqual([expect.objectContaining({ stage: 'commenting', parent: root.externalId })]);
  });

  it('comments on a video post by its video id', async () => {
    cdnFake.files.set('clip.mp4', { bytes: MP4, type: 'video/mp4' });
    const video = mediaInput(new Uint8Array(MP4), 'video', 'video/mp4', {
      url: `${platforms.url('cdn')}/clip.mp4`,
    });
    const root = await connector.publish(rootContext({ media: [video] }).ctx);

    await connector.publish(commentContext(root).ctx);

    expect(fake.comments[0]?.objectId).toBe(root.externalId);
  });

  it('an interrupted comment (the answer lost) is found by reconcile, once', async () => {
    const root = await connector.publish(rootContext().ctx);
    fake.loseNextResponse = true;
    const first = commentContext(root);
    const err = await failure(connector.publish(first.ctx));
    expect(err.maybeCarriedOut).toBe(true);

    const found = await connector.reconcile(
      commentContext(root, { checkpoint: first.checkpoints[0] ?? null }).ctx,
    );

    expect(fake.comments).toHaveLength(1);
    expect(found).toEqual({ externalId: fake.comments[0]?.id, url: fake.comments[0]?.permalink });
  });

  it('reconcile: null without a checkpoint, null when only another author wrote the text', async () => {
    const root = await connector.publish(rootContext().ctx);
    expect(await connector.reconcile(commentContext(root).ctx)).toBeNull();

    fake.comments.push({
      id: `${root.externalId.split('_')[1]}_999`,
      objectId: root.externalId,
      message: TEXT,
      createdAt: Date.now(),
      from: { id: '10160000000000777', name: 'A fan' },
      permalink: 'https://www.facebook.com/x',
    });
    const cp = { stage: 'commenting', parent: root.externalId, sentAt: new Date().toISOString() };
    expect(await connector.reconcile(commentContext(root, { checkpoint: cp }).ctx)).toBeNull();
  });

  it('a Page token without pages_manage_engagement is platform_rejected (#200); nothing is made', async () => {
    const root = await connector.publish(rootContext().ctx);
    fake.tokensWithoutComments.add('token');

    const err = await failure(connector.publish(commentContext(root).ctx));

    expect(err.category).toBe('platform_rejected');
    expect(err.message).toContain('(#200)');
    expect(fake.comments).toHaveLength(0);
  });

  it('a comment on a post the Page does not have (#100/33) is user_content', async () => {
    const missing = { externalId: `${fake.pageId}_404404`, url: null };
    const err = await failure(connector.publish(commentContext(missing).ctx));
    expect(err.category).toBe('user_content');
    expect(err.retryable).toBe(false);
  });

  it('throttling of the comment (#32) is rate_limited', async () => {
    const root = await connector.publish(rootContext().ctx);
    platforms.failNext('facebook', {
      path: /\/comments$/,
      status: 400,
      body: {
        error: { message: 'Page request limit reached', type: 'OAuthException', code: 32, fbtrace_id: 'F' },
      },
    });
    expect((await failure(connector.publish(commentContext(root).ctx))).category).toBe('rate_limited');
  });

  it('takes a comment of the comment limit (commentMaxText) and refuses one more (user_content)', async () => {
    const max = commentMaxText('facebook');
    const root = await connector.publish(rootContext().ctx);
    await connector.publish(commentContext(root, { text: 'é'.repeat(max) }).ctx);
    const over = await failure(connector.publish(commentContext(root, { text: 'é'.repeat(max + 1) }).ctx));
    expect(over.category).toBe('user_content');
    expect(fake.comments).toHaveLength(1);
  });
});
