import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connector } from '#adapters/platforms/bluesky/index';
import type { PublishContext } from '#adapters/platforms/types';
import type { LinkCard } from '#core/link-cards';
import { createFake, type FakeBluesky } from '../../../fakes/bluesky.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { publishContext } from './context.ts';

// A link card on Bluesky: app.bsky.embed.external with the card's image uploaded as the thumb blob
// (com.atproto.repo.uploadBlob), checked by the fake against the lexicon's rules.

let fakes: FakePlatforms;
let fake: FakeBluesky;
let n = 0;

beforeAll(async () => {
  fakes = await new FakePlatforms([createFake()]).start();
  fake = fakes.fake<FakeBluesky>('bluesky');
});
afterAll(() => fakes.stop());
beforeEach(() => {
  fakes.reset();
  n++;
});

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000100000001008060000001ff3ff61', 'hex');

function context(over: Partial<PublishContext> = {}) {
  const identifier = `cards${n}.bsky.social`;
  return publishContext({
    channel: { id: 'ch_1', handle: identifier, platform: 'bluesky' },
    credentials: { service: fakes.url('bluesky'), identifier, app_password: 'app-password' },
    idempotencyKey: `post_card_${n}:ch_1`,
    text: 'Read this: https://example.com/post',
    ...over,
  });
}

const card = (image: LinkCard['image']): LinkCard => ({
  url: 'https://example.com/post',
  title: 'A post',
  description: 'What it says',
  image,
});

describe('a link card on Bluesky', () => {
  it('embeds app.bsky.embed.external with the image as its thumb blob', async () => {
    const { ctx } = context({ linkCard: card({ bytes: new Uint8Array(PNG), contentType: 'image/png' }) });
    await connector.publish(ctx);
    const [post] = fake.posts;
    const embed = post?.record.embed as { $type: string; external: Record<string, unknown> };
    expect(embed).toEqual({
      $type: 'app.bsky.embed.external',
      external: {
        uri: 'https://example.com/post',
        title: 'A post',
        description: 'What it says',
        thumb: { $type: 'blob', ref: { $link: expect.any(String) }, mimeType: 'image/png', size: PNG.length },
      },
    });
    expect(post?.external?.thumb?.bytes.equals(PNG)).toBe(true);
    // The URL stays a link facet in the text, as without a card.
    expect(post?.record.facets).toHaveLength(1);
  });

  it('a card without an image has no thumb', async () => {
    const { ctx } = context({ linkCard: card(null) });
    await connector.publish(ctx);
    expect(fake.posts[0]?.external).toEqual({
      uri: 'https://example.com/post',
      title: 'A post',
      description: 'What it says',
      thumb: null,
    });
    expect(fakes.requests('bluesky').some((r) => r.path.endsWith('uploadBlob'))).toBe(false);
  });

  it('a thumb the PDS refuses leaves the card without it: the post is made', async () => {
    fake.maxBlobBytes = 10;
    const { ctx } = context({ linkCard: card({ bytes: new Uint8Array(PNG), contentType: 'image/png' }) });
    await connector.publish(ctx);
    expect(fake.posts[0]?.external?.thumb).toBeNull();
    expect(fake.posts[0]?.external?.title).toBe('A post');
  });

  it('an image over 1,000,000 bytes is never sent (the worker fits it first)', async () => {
    const big = new Uint8Array(1_000_001);
    big.set(PNG);
    const { ctx } = context({ linkCard: card({ bytes: big, contentType: 'image/png' }) });
    await connector.publish(ctx);
    expect(fake.posts[0]?.external?.thumb).toBeNull();
    expect(fakes.requests('bluesky').some((r) => r.path.endsWith('uploadBlob'))).toBe(false);
  });

  it('no card: no embed', async () => {
    const { ctx } = context({ linkCard: null });
    await connector.publish(ctx);
    expect(fake.posts[0]?.record.embed).toBeUndefined();
  });
});

describe('the fake holds the external embed to the lexicon', () => {
  it('refuses an external without its required title, or with a thumb over 1,000,000 bytes', async () => {
    const { ctx } = context();
    const session = (await (
      await fetch(`${fakes.url('bluesky')}/xrpc/com.atproto.server.createSession`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ identifier: ctx.channel.handle, password: 'app-password' }),
      })
    ).json()) as { accessJwt: string; did: string };
    const create = (record: Record<string, unknown>) =>
      fetch(`${fakes.url('bluesky')}/xrpc/com.atproto.repo.createRecord`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${session.accessJwt}` },
        body: JSON.stringify({
          repo: session.did,
          collection: 'app.bsky.feed.post',
          record: { $type: 'app.bsky.feed.post', text: 'x', createdAt: new Date().toISOString(), ...record },
        }),
      });
    const noTitle = await create({
      embed: { $type: 'app.bsky.embed.external', external: { uri: 'https://e.com/', description: '' } },
    });
    expect(noTitle.status).toBe(400);
    expect(((await noTitle.json()) as { message: string }).message).toMatch(
      /external must have the property "title"/,
    );

    fake.maxBlobBytes = 5_000_000;
    const blob = (await (
      await fetch(`${fakes.url('bluesky')}/xrpc/com.atproto.repo.uploadBlob`, {
        method: 'POST',
        headers: { 'content-type': 'image/png', authorization: `Bearer ${session.accessJwt}` },
        body: Buffer.alloc(1_000_001, 1),
      })
    ).json()) as { blob: unknown };
    const tooBig = await create({
      embed: {
        $type: 'app.bsky.embed.external',
        external: { uri: 'https://e.com/', title: 't', description: 'd', thumb: blob.blob },
      },
    });
    expect(tooBig.status).toBe(400);
    expect(((await tooBig.json()) as { message: string }).message).toMatch(/image file too large/);
  });
});
