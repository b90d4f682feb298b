import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connect } from '#adapters/platforms/facebook/connect';
import { connector } from '#adapters/platforms/facebook/index';
import type { InboxConnector } from '#adapters/platforms/types';
import { channelInbox, INBOX } from '#core/inbox';
import { createFake, type FacebookFake } from '../../../fakes/facebook.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { failure } from './context.ts';
import { pollAll, pollContext, replyContext } from './meta-inbox-context.ts';

// The Facebook Page inbox against the contract fake: comments on the Page's posts (read from the feed
// with their comments embedded, paging on per post), Messenger conversations, replies through the
// comments edge and the Send API (24-hour window), findReply after a lost answer, Graph errors.

const platforms = new FakePlatforms([createFake()]);
let fake: FacebookFake;
const inbox = connector.inbox as InboxConnector;

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

const channel = () => ({
  id: 'ch_fb',
  handle: 'Acme',
  platform: 'facebook' as const,
  accountId: fake.pageId,
});
const credentials = () => ({ access_token: 'token', account_id: fake.pageId });
const poll = (o: Parameters<typeof pollContext>[2]) =>
  pollAll(inbox, pollContext(channel(), credentials(), o));
const ago = (ms: number) => new Date(Date.now() - ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const HOUR = 3600_000;
const DAY = 24 * HOUR;
const requests = (method: string, path: RegExp) =>
  platforms.requests('facebook').filter((r) => r.method === method && path.test(r.path));

describe('facebook inbox: comments', () => {
  it('backfills the comments since `since` with their own time, and maps them', async () => {
    const first = fake.inbox({ kind: 'comment', text: 'Open on Sunday?', created_at: ago(3 * DAY) });
    const postId = fake.comments[0]?.objectId as string;
    fake.inbox({ kind: 'comment', text: 'Too old', parent: postId, created_at: ago(8 * DAY) });

    const { items } = await poll({ kinds: ['comment'] });

    expect(items).toHaveLength(1);
    const c = fake.comments.find((x) => x.id === first.platform_id);
    expect(items[0]).toEqual({
      kind: 'comment',
      platformId: first.platform_id,
      text: 'Open on Sunday?',
      url: c?.permalink,
      author: { handle: 'Grace Hopper', name: 'Grace Hopper', avatar_url: null, platform_id: c?.from.id },
      inReplyTo: postId,
      conversationId: postId,
      rootId: postId,
      createdAt: new Date(c?.createdAt as number).toISOString(),
      ref: { thread: first.platform_id, post: postId },
    });
    expect(Date.parse(items[0]?.createdAt as string)).toBeLessThan(Date.now() - 2 * DAY);
  });

  it('maps a reply to a comment as answering that comment, in the post’s conversation', async () => {
    const top = fake.inbox({ kind: 'comment', text: 'Open on Sunday?' });
    const reply = fake.inbox({
      kind: 'comment',
      text: 'Me too',
      parent: top.platform_id,
      author: { name: 'Linus' },
    });
    const postId = fake.comments[0]?.objectId;

    const { items } = await poll({ kinds: ['comment'] });

    const r = items.find((i) => i.platformId === reply.platform_id);
    expect(r).toMatchObject({ inReplyTo: top.platform_id, conversationId: postId, rootId: postId });
    expect(r?.ref).toEqual({ thread: top.platform_id, post: postId });
    expect(r?.author.name).toBe('Linus');
  });

  it('returns nothing twice across polls, even a comment made in the second already seen', async () => {
    const at = ago(HOUR);
    fake.inbox({ kind: 'comment', text: 'one', created_at: at });
    const p1 = await poll({ kinds: ['comment'] });
    expect(p1.items.map((i) => i.text)).toEqual(['one']);

    fake.inbox({ kind: 'comment', text: 'two', parent: fake.comments[0]?.objectId, created_at: at });
    const p2 = await poll({ kinds: ['comment'], cursor: p1.cursor });
    const p3 = await poll({ kinds: ['comment'], cursor: p2.cursor });

    expect(p2.items.map((i) => i.text)).toEqual(['two']);
    expect(p3.items).toEqual([]);
  });

  it('pages on past the embedded comments when all of them are new, and reads the feed once', async () => {
    fake.inbox({ kind: 'comment', text: 'c0', created_at: ago(2 * HOUR) });
    const postId = fake.comments[0]?.objectId as string;
    for (let i = 1; i < 70; i++)
      fake.inbox({ kind: 'comment', text: `c${i}`, parent: postId, created_at: ago(HOUR - i * 1000) });

    const { items, cursor } = await poll({ kinds: ['comment'] });

    expect(new Set(items.map((i) => i.text)).size).toBe(70);
    expect(requests('GET', /\/feed$/)).toHaveLength(1);
    expect(requests('GET', new RegExp(`/${postId}/comments$`))).toHaveLength(1);
    expect((await poll({ kinds: ['comment'], cursor })).items).toEqual([]);
  });

  it('still reads a comment the platform shows after a newer one', async () => {
    fake.inbox({ kind: 'comment', text: 'newer', created_at: ago(60_000) });
    const p1 = await poll({ kinds: ['comment'] });
    fake.inbox({
      kind: 'comment',
      text: 'late',
      parent: fake.comments[0]?.objectId,
      created_at: ago(5 * 60_000),
    });

    const p2 = await poll({ kinds: ['comment'], cursor: p1.cursor });

    expect(p2.items.map((i) => i.text)).toEqual(['late']);
  });

  it('leaves out the Page’s own comments and reads Herald posts the feed page does not hold, skipping gone ones', async () => {
    fake.inbox({ kind: 'comment', text: 'theirs' });
    fake.comments.push({
      ...(fake.comments[0] as (typeof fake.comments)[0]),
      id: 'x_1',
      message: 'ours',
      from: { id: fake.pageId, name: 'Acme' },
    });

    const gone = `${fake.pageId}_999`;
    const { items } = await poll({
      kinds: ['comment'],
      recentPosts: [fake.comments[0]?.objectId as string, gone],
    });

    expect(items.map((i) => i.text)).toEqual(['theirs']);
    // A Herald post deleted on Facebook (100/33) is skipped, not a failed poll.
    expect(requests('GET', new RegExp(`/${gone}/comments$`))).toHaveLength(1);
  });

  it('a poll killed before its cursor was saved reads the same items again, under the same ids', async () => {
    fake.inbox({ kind: 'comment', text: 'a' });
    const p1 = await poll({ kinds: ['comment', 'message'] });
    fake.inbox({ kind: 'comment', text: 'b', parent: fake.comments[0]?.objectId });
    fake.inbox({ kind: 'message', text: 'm' });

    const ctx = pollContext(channel(), credentials(), { kinds: ['comment', 'message'], cursor: p1.cursor });
    const page = await inbox.poll(ctx); // its items written, then the worker dies: the cursor is lost
    const again = await inbox.poll(ctx);

    expect(page.more).toBe(true);
    expect(again.items.map((i) => i.platformId)).toEqual(page.items.map((i) => i.platformId));
    expect(page.items.map((i) => i.text)).toEqual(['b']);
    const rest = await inbox.poll({ ...ctx, cursor: again.cursor });
    expect(rest.items.map((i) => i.text)).toEqual(['m']);
    expect(rest.more).toBe(false);
  });

  it('reads only the kinds the channel may read', async () => {
    fake.inbox({ kind: 'message', text: 'hi' });
    await poll({ kinds: ['comment'] });
    expect(requests('GET', /\/conversations$/)).toHaveLength(0);
  });
});

describe('facebook inbox: messages', () => {
  it('reads Messenger conversations, newest messages of each, and not the Page’s own', async () => {
    const m = fake.inbox({
      kind: 'message',
      text: 'Do you ship to Lyon?',
      created_at: ago(HOUR),
      author: { id: '2001', name: 'Ada' },
    });

    const { items, cursor } = await poll({ kinds: ['comment', 'message'] });

    expect(items).toEqual([
      {
        kind: 'message',
        platformId: m.platform_id,
        text: 'Do you ship to Lyon?',
        url: null,
        author: { handle: 'Ada', name: 'Ada', avatar_url: null, platform_id: '2001' },
        inReplyTo: null,
        conversationId: 't_2001',
        rootId: null,
        createdAt: expect.any(String),
        ref: { recipient: '2001' },
      },
    ]);
    expect(requests('GET', /\/conversations$/)[0]?.query.get('platform')).toBe('messenger');
    const again = await poll({ kinds: ['comment', 'message'], cursor });
    expect(again.items).toEqual([]);
  });

  it('reads no conversation older than `since`', async () => {
    fake.inbox({ kind: 'message', text: 'old', created_at: ago(8 * DAY), author: { id: '2009' } });
    fake.inbox({ kind: 'message', text: 'new', created_at: ago(DAY), author: { id: '2010' } });
    expect((await poll({ kinds: ['message'] })).items.map((i) => i.text)).toEqual(['new']);
  });

  it('pages through the conversations while they have news, and stops at the first page without', async () => {
    for (let i = 0; i < 30; i++)
      fake.inbox({
        kind: 'message',
        text: `m${i}`,
        created_at: ago(HOUR - i * 1000),
        author: { id: `30${i}` },
      });

    const p1 = await poll({ kinds: ['message'] });
    expect(p1.items).toHaveLength(30);
    expect(requests('GET', /\/conversations$/)).toHaveLength(2);

    fake.inbox({ kind: 'message', text: 'news', author: { id: '3005' } });
    const p2 = await poll({ kinds: ['message'], cursor: p1.cursor });

    expect(p2.items.map((i) => i.text)).toEqual(['news']);
    expect(requests('GET', /\/conversations$/)).toHaveLength(3);
  });

  it('answers with the Send API (messaging_type RESPONSE) and finds the message after a lost answer', async () => {
    fake.inbox({ kind: 'message', text: 'Hello?', author: { id: '2002', name: 'Bob' } });
    const [item] = (await poll({ kinds: ['message'] })).items;
    const ctx = replyContext(channel(), credentials(), item as never, 'Yes, we do.');

    expect(await inbox.findReply(ctx)).toBeNull();
    const sent = await inbox.reply(ctx);

    const post = requests('POST', /\/messages$/)[0];
    const form = new URLSearchParams(post?.body.toString('utf8'));
    expect(JSON.parse(form.get('recipient') ?? '')).toEqual({ id: '2002' });
    expect(form.get('messaging_type')).toBe('RESPONSE');
    expect(JSON.parse(form.get('message') ?? '')).toEqual({ text: 'Yes, we do.' });
    expect(await inbox.findReply(ctx)).toEqual({ externalId: sent.externalId, url: null });
  });

  it('refuses a reply outside the 24-hour window as a non-retryable rejection that says why', async () => {
    fake.inbox({ kind: 'message', text: 'Still there?', created_at: ago(2 * DAY), author: { id: '2003' } });
    const [item] = (await poll({ kinds: ['message'] })).items;

    const err = await failure(inbox.reply(replyContext(channel(), credentials(), item as never, 'Sorry!')));

    expect(err.category).toBe('platform_rejected');
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/24 hours/);
  });
});

describe('facebook inbox: replies to comments', () => {
  it('replies under the top-level comment as the Page, and findReply finds it after a lost answer', async () => {
    const top = fake.inbox({ kind: 'comment', text: 'Open on Sunday?' });
    fake.inbox({ kind: 'comment', text: 'Me too', parent: top.platform_id });
    const item = (await poll({ kinds: ['comment'] })).items.find((i) => i.text === 'Me too');
    const ctx = replyContext(channel(), credentials(), item as never, 'Yes, 10 to 4.');
    expect(await inbox.findReply(ctx)).toBeNull();

    fake.loseNextResponse = true;
    const err = await failure(inbox.reply(ctx));
    expect(err.maybeCarriedOut).toBe(true);

    const made = fake.comments.find((c) => c.message === 'Yes, 10 to 4.');
    expect(made).toMatchObject({ parentId: top.platform_id, from: { id: fake.pageId } });
    expect(requests('POST', new RegExp(`/${top.platform_id}/comments$`))).toHaveLength(1);
    expect(await inbox.findReply(ctx)).toEqual({ externalId: made?.id, url: made?.permalink });
  });

  it('returns the reply and its permalink', async () => {
    fake.inbox({ kind: 'comment', text: 'Nice' });
    const [item] = (await poll({ kinds: ['comment'] })).items;

    const sent = await inbox.reply(replyContext(channel(), credentials(), item as never, 'Thanks!'));

    const made = fake.comments.find((c) => c.message === 'Thanks!');
    expect(sent).toEqual({ externalId: made?.id, url: made?.permalink });
  });
});

describe('facebook inbox: Graph errors', () => {
  it.each([
    ['revokedToken', 'auth_expired', false],
    ['expiredToken', 'auth_expired', false],
    ['throttled', 'rate_limited', true],
    ['throttledUser', 'rate_limited', true],
    ['throttledPage', 'rate_limited', true],
    ['throttledCustom', 'rate_limited', true],
  ])('%s → %s', async (kind, category, retryable) => {
    fake.inbox({ kind: 'comment', text: 'x' });
    platforms.failDocumented('facebook', kind);

    const err = await failure(poll({ kinds: ['comment'] }));

    expect(err.category).toBe(category);
    expect(err.retryable).toBe(retryable);
    if (kind === 'throttled') expect(err.opts.scope).toBe('app');
  });

  it('a 5xx is a retryable system error, and the next poll reads what it missed', async () => {
    fake.inbox({ kind: 'comment', text: 'x' });
    platforms.failNext('facebook', {
      status: 500,
      body: {
        error: {
          message: 'An unexpected error has occurred.',
          type: 'OAuthException',
          code: 2,
          fbtrace_id: 'A',
        },
      },
    });

    const err = await failure(poll({ kinds: ['comment'] }));
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(true);
    expect((await poll({ kinds: ['comment'] })).items.map((i) => i.text)).toEqual(['x']);
  });
});

describe('facebook inbox: grants', () => {
  it('new connections ask for every permission the inbox reads with, and such a channel reads every kind', () => {
    const needs = Object.values(INBOX.facebook.kinds).filter((k): k is string => !!k);
    expect(connect.scopes).toEqual(expect.arrayContaining(needs));
    const state = channelInbox({
      platform: 'facebook',
      grantedScopes: [...connect.scopes],
      accountId: '1',
      poll: null,
    });
    expect(state).toMatchObject({ available: true, kinds: ['comment', 'message'], error: null });
  });
});

describe('facebook inbox: cost', () => {
  it('a quiet poll of comments and messages costs 2 requests', async () => {
    fake.inbox({ kind: 'comment', text: 'c' });
    fake.inbox({ kind: 'message', text: 'm' });
    const first = await poll({ kinds: ['comment', 'message'] });
    const before = platforms.requests('facebook').length;

    const quiet = await poll({ kinds: ['comment', 'message'], cursor: first.cursor });

    expect(quiet.items).toEqual([]);
    expect(platforms.requests('facebook').length - before).toBe(2);
  });
});

describe('facebook fake: the inbox seed control', () => {
  it('POST /__fakes/facebook/inbox seeds an item the read endpoints serve at the seed’s time', async () => {
    const at = new Date(Math.floor((Date.now() - 2 * DAY) / 1000) * 1000).toISOString();
    const res = await fetch(`${platforms.origin}/__fakes/facebook/inbox`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'comment', text: 'seeded over HTTP', created_at: at }),
    });
    expect(res.status).toBe(201);
    const { platform_id } = (await res.json()) as { platform_id: string };

    const { items } = await poll({ kinds: ['comment'] });

    expect(items).toEqual([
      expect.objectContaining({ platformId: platform_id, text: 'seeded over HTTP', createdAt: at }),
    ]);
  });
});
