import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connect } from '#adapters/platforms/instagram/connect';
import { connector } from '#adapters/platforms/instagram/index';
import type { InboxConnector } from '#adapters/platforms/types';
import { channelInbox, INBOX } from '#core/inbox';
import { createFake, type InstagramFake } from '../../../fakes/instagram.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { failure } from './context.ts';
import { pollAll, pollContext, replyContext } from './meta-inbox-context.ts';

// The Instagram inbox (Instagram API with Facebook Login) against the contract fake: comments and
// their replies on the account's media (embedded in the media read), the media it is tagged in
// (mentions, which cannot be answered), its messages through the Page's conversations, replies
// through POST /{ig-comment-id}/replies and the Send API, findReply, Graph errors.

const platforms = new FakePlatforms([createFake()]);
let fake: InstagramFake;
const inbox = connector.inbox as InboxConnector;

beforeAll(async () => {
  await platforms.start();
  fake = platforms.fake<InstagramFake>('instagram');
  process.env.HERALD_PLATFORM_INSTAGRAM_URL = platforms.url('instagram');
});
afterAll(async () => {
  delete process.env.HERALD_PLATFORM_INSTAGRAM_URL;
  await platforms.stop();
});
beforeEach(() => platforms.reset());

const channel = () => ({
  id: 'ch_ig',
  handle: 'acme',
  platform: 'instagram' as const,
  accountId: fake.igUserId,
});
const credentials = () => ({ access_token: 'token', account_id: fake.igUserId });
const poll = (o: Parameters<typeof pollContext>[2]) =>
  pollAll(inbox, pollContext(channel(), credentials(), o));
const ago = (ms: number) => new Date(Date.now() - ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const HOUR = 3600_000;
const DAY = 24 * HOUR;
const requests = (method: string, path: RegExp) =>
  platforms.requests('instagram').filter((r) => r.method === method && path.test(r.path));

describe('instagram inbox: comments', () => {
  it('backfills comments and replies since `since` with their own time, and maps them', async () => {
    const top = fake.inbox({
      kind: 'comment',
      text: 'Love it',
      created_at: ago(2 * DAY),
      author: { handle: 'grace.h', id: '901' },
    });
    const reply = fake.inbox({
      kind: 'comment',
      text: 'Same',
      parent: top.platform_id,
      created_at: ago(DAY),
    });
    const media = fake.media[0];
    fake.inbox({ kind: 'comment', text: 'Too old', parent: media?.id, created_at: ago(9 * DAY) });

    const { items } = await poll({ kinds: ['comment'] });

    expect(items.map((i) => i.text).sort()).toEqual(['Love it', 'Same']);
    expect(items.find((i) => i.platformId === top.platform_id)).toEqual({
      kind: 'comment',
      platformId: top.platform_id,
      text: 'Love it',
      url: media?.permalink,
      author: { handle: 'grace.h', name: null, avatar_url: null, platform_id: '901' },
      inReplyTo: media?.id,
      conversationId: media?.id,
      rootId: media?.id,
      createdAt: new Date(fake.comments[0]?.timestamp as number).toISOString(),
      ref: { thread: top.platform_id, permalink: media?.permalink },
    });
    expect(items.find((i) => i.platformId === reply.platform_id)).toMatchObject({
      inReplyTo: top.platform_id,
      rootId: media?.id,
      ref: { thread: top.platform_id },
    });
    expect(requests('GET', /\/comments$/)).toHaveLength(0);
  });

  it('finds a new reply under an old comment, and returns nothing twice', async () => {
    const top = fake.inbox({ kind: 'comment', text: 'first', created_at: ago(3 * HOUR) });
    const p1 = await poll({ kinds: ['comment'] });
    fake.inbox({ kind: 'comment', text: 'late reply', parent: top.platform_id });

    const p2 = await poll({ kinds: ['comment'], cursor: p1.cursor });
    const p3 = await poll({ kinds: ['comment'], cursor: p2.cursor });

    expect(p1.items.map((i) => i.text)).toEqual(['first']);
    expect(p2.items.map((i) => i.text)).toEqual(['late reply']);
    expect(p3.items).toEqual([]);
  });

  it('leaves out the account’s own comments', async () => {
    fake.inbox({ kind: 'comment', text: 'ours', author: { handle: 'acme', id: fake.igUserId } });
    fake.inbox({ kind: 'comment', text: 'theirs' });
    expect((await poll({ kinds: ['comment'] })).items.map((i) => i.text)).toEqual(['theirs']);
  });

  it('replies under the top-level comment and finds the reply after a lost answer', async () => {
    const top = fake.inbox({ kind: 'comment', text: 'Price?' });
    fake.inbox({ kind: 'comment', text: 'Also curious', parent: top.platform_id });
    const item = (await poll({ kinds: ['comment'] })).items.find((i) => i.text === 'Also curious');
    const ctx = replyContext(channel(), credentials(), item as never, '€20');
    expect(await inbox.findReply(ctx)).toBeNull();

    fake.loseNextCommentResponse = true;
    await failure(inbox.reply(ctx));

    const made = fake.comments.find((c) => c.text === '€20');
    expect(made).toMatchObject({ parentId: top.platform_id, from: { id: fake.igUserId } });
    expect(requests('POST', new RegExp(`/${top.platform_id}/replies$`))).toHaveLength(1);
    expect(await inbox.findReply(ctx)).toEqual({ externalId: made?.id, url: fake.media[0]?.permalink });
  });
});

describe('instagram inbox: mentions', () => {
  it('reads the media the account is tagged in, once, and refuses to answer one', async () => {
    const tag = fake.inbox({ kind: 'mention', text: 'With @acme at the fair', author: { handle: 'linus' } });

    const p1 = await poll({ kinds: ['mention'] });
    const p2 = await poll({ kinds: ['mention'], cursor: p1.cursor });

    expect(p1.items).toEqual([
      expect.objectContaining({
        kind: 'mention',
        platformId: tag.platform_id,
        text: 'With @acme at the fair',
        url: fake.tags[0]?.permalink,
        author: { handle: 'linus', name: null, avatar_url: null, platform_id: 'linus' },
        inReplyTo: null,
        rootId: tag.platform_id,
      }),
    ]);
    expect(p2.items).toEqual([]);
    const err = await failure(
      inbox.reply(replyContext(channel(), credentials(), p1.items[0] as never, 'Thanks!')),
    );
    expect(err.category).toBe('user_content');
    expect(err.retryable).toBe(false);
  });
});

describe('instagram inbox: messages', () => {
  it('reads the Instagram conversations of the Page and answers within the window', async () => {
    fake.inbox({ kind: 'message', text: 'Open today?', author: { handle: 'ada', id: '7001' } });

    const { items } = await poll({ kinds: ['comment', 'mention', 'message'] });
    const msg = items.find((i) => i.kind === 'message');

    expect(msg).toMatchObject({
      text: 'Open today?',
      author: { handle: 'ada', platform_id: '7001' },
      conversationId: 't_7001',
      ref: { recipient: '7001' },
    });
    expect(requests('GET', /\/me\/conversations$/)[0]?.query.get('platform')).toBe('instagram');
    const ctx = replyContext(channel(), credentials(), msg as never, 'Until 6pm');
    const sent = await inbox.reply(ctx);
    expect(requests('POST', /\/me\/messages$/)).toHaveLength(1);
    expect(await inbox.findReply(ctx)).toEqual({ externalId: sent.externalId, url: null });
  });

  it('refuses a reply after the 24-hour window as non-retryable', async () => {
    fake.inbox({ kind: 'message', text: 'Hello', created_at: ago(3 * DAY), author: { id: '7002' } });
    const [msg] = (await poll({ kinds: ['message'] })).items;

    const err = await failure(inbox.reply(replyContext(channel(), credentials(), msg as never, 'Hi!')));

    expect(err.category).toBe('platform_rejected');
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/24 hours/);
  });
});

describe('instagram inbox: Graph errors', () => {
  it.each([
    ['revokedToken', 'auth_expired'],
    ['throttled', 'rate_limited'],
    ['throttledUser', 'rate_limited'],
    ['throttledCustom', 'rate_limited'],
    ['throttledBusinessUseCase', 'rate_limited'],
  ])('%s → %s', async (kind, category) => {
    platforms.failDocumented('instagram', kind);
    const err = await failure(poll({ kinds: ['comment'] }));
    expect(err.category).toBe(category);
  });

  it('a 5xx is a retryable system error', async () => {
    platforms.failNext('instagram', {
      status: 503,
      body: { error: { message: 'Service unavailable', code: 2 } },
    });
    const err = await failure(poll({ kinds: ['mention'] }));
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(true);
  });
});

describe('instagram inbox: grants', () => {
  it('new connections ask for every permission the inbox reads with, and such a channel reads every kind', () => {
    const needs = Object.values(INBOX.instagram.kinds).filter((k): k is string => !!k);
    expect(connect.scopes).toEqual(expect.arrayContaining(needs));
    const state = channelInbox({
      platform: 'instagram',
      grantedScopes: [...connect.scopes],
      accountId: '1',
      poll: null,
    });
    expect(state).toMatchObject({ available: true, kinds: ['comment', 'mention', 'message'], error: null });
  });
});

describe('instagram inbox: cost', () => {
  it('a quiet poll of comments, mentions and messages costs 3 requests', async () => {
    fake.inbox({ kind: 'comment', text: 'c' });
    fake.inbox({ kind: 'mention', text: 't' });
    fake.inbox({ kind: 'message', text: 'm' });
    const first = await poll({ kinds: ['comment', 'mention', 'message'] });
    const before = platforms.requests('instagram').length;

    const quiet = await poll({ kinds: ['comment', 'mention', 'message'], cursor: first.cursor });

    expect(quiet.items).toEqual([]);
    expect(platforms.requests('instagram').length - before).toBe(3);
  });
});

describe('instagram fake: the inbox seed control', () => {
  it('POST /__fakes/instagram/inbox seeds an item the read endpoints serve at the seed’s time', async () => {
    const at = new Date(Math.floor((Date.now() - 2 * DAY) / 1000) * 1000).toISOString();
    const res = await fetch(`${platforms.origin}/__fakes/instagram/inbox`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'mention', text: 'seeded over HTTP', created_at: at }),
    });
    expect(res.status).toBe(201);
    const { platform_id } = (await res.json()) as { platform_id: string };

    const { items } = await poll({ kinds: ['mention'] });

    expect(items).toEqual([
      expect.objectContaining({ platformId: platform_id, text: 'seeded over HTTP', createdAt: at }),
    ]);
  });
});
