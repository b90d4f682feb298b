import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connector } from '#adapters/platforms/instagram/index';
import { containerPolling } from '#adapters/platforms/meta/publish';
import type { PublishContext, PublishResult } from '#adapters/platforms/types';
import { commentMaxText } from '#core/platforms';
import { createFake, type InstagramFake } from '../../../fakes/instagram.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { cdn, failure, mediaInput, publishContext } from './context.ts';

// The Instagram first comment against the contract fake: a comment on the media the root became
// (POST /{ig-media-id}/comments), the checkpoint before it, reconcile of an interrupted one by
// listing the media's comments, and the errors of a missing grant or a missing media.

const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe1]), Buffer.from('instagram-jpeg')]);
const cdnFake = cdn();
const platforms = new FakePlatforms([createFake(), cdnFake]);
let fake: InstagramFake;
const savedPolling = { ...containerPolling };

beforeAll(async () => {
  await platforms.start();
  fake = platforms.fake<InstagramFake>('instagram');
  process.env.HERALD_PLATFORM_INSTAGRAM_URL = platforms.url('instagram');
  Object.assign(containerPolling, { firstDelayMs: 5, maxDelayMs: 20, budgetMs: 2000 });
});
afterAll(async () => {
  Object.assign(containerPolling, savedPolling);
  delete process.env.HERALD_PLATFORM_INSTAGRAM_URL;
  await platforms.stop();
});
beforeEach(() => platforms.reset());

const channel = { id: 'ch_ig', handle: 'acme', platform: 'instagram' as const };
const credentials = () => ({ access_token: 'token', account_id: fake.igUserId });

async function publishRoot(): Promise<PublishResult> {
  cdnFake.files.set('photo.jpg', { bytes: JPEG, type: 'image/jpeg' });
  const photo = mediaInput(new Uint8Array(JPEG), 'image', 'image/jpeg', {
    url: `${platforms.url('cdn')}/photo.jpg`,
  });
  const { ctx } = publishContext({ channel, credentials: credentials(), text: 'Harbour', media: [photo] });
  return connector.publish(ctx);
}

function commentContext(root: PublishResult, over: Partial<PublishContext> = {}) {
  const ref = { externalId: root.externalId, url: root.url };
  return publishContext({
    channel,
    credentials: credentials(),
    part: { kind: 'comment' },
    replyTo: { root: ref, parent: ref },
    text: 'Link in bio: https://acme.example/spring #acme',
    media: [],
    idempotencyKey: 'post_1.ch_ig.c',
    ...over,
  });
}

describe('instagram first comment', () => {
  it('comments on the published media as the account, after a checkpoint', async () => {
    const root = await publishRoot();
    const { ctx, checkpoints } = commentContext(root);

    const result = await connector.publish(ctx);

    expect(fake.comments).toHaveLength(1);
    const c = fake.comments[0]!;
    expect(c).toMatchObject({
      mediaId: root.externalId,
      text: 'Link in bio: https://acme.example/spring #acme',
    });
    expect(result).toEqual({ externalId: c.id, url: null });
    expect(checkpoints).toEqual([expect.objectContaining({ stage: 'commenting', parent: root.externalId })]);
    const post = platforms
      .requests('instagram')
      .find((r) => r.method === 'POST' && /\/comments$/.test(r.path));
    expect(new URLSearchParams(post?.body.toString('utf8')).get('message')).toBe(c.text);
  });

  it('an interrupted comment is found by reconcile and not made twice', async () => {
    const root = await publishRoot();
    fake.loseNextCommentResponse = true;
    const first = commentContext(root);
    const err = await failure(connector.publish(first.ctx));
    expect(err.maybeCarriedOut).toBe(true);
    expect(fake.comments).toHaveLength(1);

    const retry = commentContext(root, { checkpoint: first.checkpoints[0] ?? null });
    const found = await connector.reconcile(retry.ctx);

    expect(found).toEqual({ externalId: fake.comments[0]?.id, url: null });
    expect(fake.comments).toHaveLength(1);
  });

  it('reconcile: null without a checkpoint (no request), null when no comment of the account matches', async () => {
    const root = await publishRoot();
    const before = platforms.requests('instagram').length;
    expect(await connector.reconcile(commentContext(root).ctx)).toBeNull();
    expect(platforms.requests('instagram').length).toBe(before);

    // Someone else wrote the same words under the post; ours never arrived.
    fake.comments.push({
      id: '17870000000000001',
      mediaId: root.externalId,
      text: 'Link in bio: https://acme.example/spring #acme',
      timestamp: Date.now(),
      from: { id: '17841400000000999', username: 'someone' },
    });
    const cp = { stage: 'commenting', parent: root.externalId, sentAt: new Date().toISOString() };
    expect(await connector.reconcile(commentContext(root, { checkpoint: cp }).ctx)).toBeNull();
  });

  it('reconcile that cannot list the comments leaves the outcome unknown (retryable)', async () => {
    const root = await publishRoot();
    const cp = { stage: 'commenting', parent: root.externalId, sentAt: new Date().toISOString() };
    platforms.failNext('instagram', {
      path: /\/comments$/,
      status: 500,
      body: {
        error: { message: 'An unknown error occurred', type: 'OAuthException', code: 1, fbtrace_id: 'A' },
      },
    });
    const err = await failure(connector.reconcile(commentContext(root, { checkpoint: cp }).ctx));
    expect(err.opts.unknownOutcome).toBe(true);
    expect(err.retryable).toBe(true);
  });

  it('a grant without instagram_manage_comments is platform_rejected (#10); nothing is made', async () => {
    const root = await publishRoot();
    fake.tokensWithoutComments.add('token');
    const err = await failure(connector.publish(commentContext(root).ctx));
    expect(err.category).toBe('platform_rejected');
    expect(err.message).toContain('(#10)');
    expect(err.retryable).toBe(false);
    expect(fake.comments).toHaveLength(0);
  });

  it('a comment on media the account does not have (#100/33) is user_content', async () => {
    const ref = { externalId: '17999999999999999', url: null };
    const { ctx } = commentContext(
      { externalId: ref.externalId, url: null },
      { replyTo: { root: ref, parent: ref } },
    );
    const err = await failure(connector.publish(ctx));
    expect(err.category).toBe('user_content');
    expect(err.message).toContain('(#100/33)');
  });

  it('a thread part is refused: Instagram has no threads', async () => {
    const root = await publishRoot();
    const { ctx } = commentContext(root, { part: { kind: 'thread', index: 0 } });
    expect((await failure(connector.publish(ctx))).category).toBe('user_content');
  });

  it('takes a comment of the comment limit (commentMaxText) and refuses one more (user_content)', async () => {
    const max = commentMaxText('instagram');
    const root = await publishRoot();
    await connector.publish(commentContext(root, { text: 'é'.repeat(max) }).ctx);
    const over = await failure(connector.publish(commentContext(root, { text: 'é'.repeat(max + 1) }).ctx));
    expect(over.category).toBe('user_content');
    expect(fake.comments).toHaveLength(1);
  });
});
