import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connect } from '#adapters/platforms/threads/connect';
import { connector } from '#adapters/platforms/threads/index';
import type { InboxConnector } from '#adapters/platforms/types';
import { channelInbox, INBOX } from '#core/inbox';
import { FakePlatforms } from '../../../fakes/server.ts';
import { createFake, type ThreadsFake } from '../../../fakes/threads.ts';
import { failure } from './context.ts';
import { pollAll, pollContext, replyContext } from './meta-inbox-context.ts';

// The Threads inbox against the contract fake: replies to the account's posts (its latest posts from
// /me/threads, each post with replies read through /conversation), its mentions, a reply as a new
// reply post (container, then publish), findReply among the parent's replies, Graph errors.

const platforms = new FakePlatforms([createFake()]);
let fake: ThreadsFake;
const inbox = connector.inbox as InboxConnector;

beforeAll(async () => {
  await platforms.start();
  fake = platforms.fake<ThreadsFake>('threads');
  process.env.HERALD_PLATFORM_THREADS_URL = platforms.url('threads');
});
afterAll(async () => {
  delete process.env.HERALD_PLATFORM_THREADS_URL;
  await platforms.stop();
});
beforeEach(() => platforms.reset());

const channel = () => ({
  id: 'ch_th',
  handle: 'herald_test',
  platform: 'threads' as const,
  accountId: fake.userId,
});
const credentials = () => ({ access_token: 'token', account_id: fake.userId });
const poll = (o: Parameters<typeof pollContext>[2]) =>
  pollAll(inbox, pollContext(channel(), credentials(), o));
const ago = (ms: number) => new Date(Date.now() - ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const HOUR = 3600_000;
const DAY = 24 * HOUR;
const requests = (method: string, path: RegExp) =>
  platforms.requests('threads').filter((r) => r.method === method && path.test(r.path));

describe('threads inbox: replies', () => {
  it('backfills the replies to the account’s posts, at any depth, with their own time', async () => {
    const r1 = fake.inbox({
      kind: 'comment',
      text: 'Great post',
      created_at: ago(2 * DAY),
      author: { handle: 'grace_h' },
    });
    const post = fake.posts[0];
    const r2 = fake.inbox({
      kind: 'comment',
      text: 'Agreed',
      parent: r1.platform_id,
      author: { handle: 'linus' },
    });
    fake.inbox({ kind: 'comment', text: 'Too old', parent: post?.id, created_at: ago(8 * DAY) });

    const { items, pages } = await poll({ kinds: ['comment', 'mention'] });

    expect(pages).toBe(2);
    const byId = new Map(items.map((i) => [i.platformId, i]));
    expect([...byId.keys()].sort()).toEqual([r1.platform_id, r2.platform_id].sort());
    expect(byId.get(r1.platform_id)).toEqual({
      kind: 'comment',
      platformId: r1.platform_id,
      text: 'Great post',
      url: fake.posts.find((p) => p.id === r1.platform_id)?.permalink,
      author: { handle: 'grace_h', name: null, avatar_url: null, platform_id: 'grace_h' },
      inReplyTo: post?.id,
      conversationId: post?.id,
      rootId: post?.id,
      createdAt: new Date(fake.posts.find((p) => p.id === r1.platform_id)?.timestamp as number).toISOString(),
    });
    expect(byId.get(r2.platform_id)).toMatchObject({ inReplyTo: r1.platform_id, rootId: post?.id });
  });

  it('returns nothing twice across polls and skips posts without replies', async () => {
    fake.inbox({ kind: 'comment', text: 'one' });
    const p1 = await poll({ kinds: ['comment'] });
    fake.inbox({ kind: 'comment', text: 'two', parent: fake.posts[0]?.id });
    const p2 = await poll({ kinds: ['comment'], cursor: p1.cursor });
    const p3 = await poll({ kinds: ['comment'], cursor: p2.cursor });

    expect(p1.items.map((i) => i.text)).toEqual(['one']);
    expect(p2.items.map((i) => i.text)).toEqual(['two']);
    expect(p3.items).toEqual([]);
    expect(requests('GET', /\/me\/threads$/)[0]?.query.get('fields')).toContain('has_replies');
  });

  it('leaves out the account’s own replies', async () => {
    const theirs = fake.inbox({ kind: 'comment', text: 'Question?' });
    await inbox.reply(
      replyContext(
        channel(),
        credentials(),
        { ...(await poll({ kinds: ['comment'] })).items[0] } as never,
        'Answer.',
      ),
    );
    expect(fake.posts.some((p) => p.text === 'Answer.' && p.repliedTo === theirs.platform_id)).toBe(true);

    const { items } = await poll({ kinds: ['comment'] });

    expect(items.map((i) => i.text)).toEqual(['Question?']);
  });
});

describe('threads inbox: mentions', () => {
  it('reads the mentions since `since`, once', async () => {
    const m = fake.inbox({ kind: 'mention', text: 'cc @herald_test', author: { handle: 'ada' } });
    fake.inbox({ kind: 'mention', text: 'old', created_at: ago(10 * DAY) });

    const p1 = await poll({ kinds: ['mention'] });
    const p2 = await poll({ kinds: ['mention'], cursor: p1.cursor });

    expect(p1.items).toEqual([
      expect.objectContaining({
        kind: 'mention',
        platformId: m.platform_id,
        text: 'cc @herald_test',
        author: { handle: 'ada', name: null, avatar_url: null, platform_id: 'ada' },
        inReplyTo: null,
        rootId: m.platform_id,
      }),
    ]);
    expect(p2.items).toEqual([]);
    expect(Number(requests('GET', /\/mentions$/)[0]?.query.get('since'))).toBeGreaterThanOrEqual(1688540400);
  });
});

describe('threads inbox: answering', () => {
  it('answers with a reply post (container, publish) and findReply finds it after a lost answer', async () => {
    fake.inbox({ kind: 'mention', text: 'hey @herald_test', author: { handle: 'ada' } });
    const [item] = (await poll({ kinds: ['mention'] })).items;
    const ctx = replyContext(channel(), credentials(), item as never, 'Hello Ada!');
    expect(await inbox.findReply(ctx)).toBeNull();

    fake.loseNextPublishResponse = true;
    const err = await failure(inbox.reply(ctx));
    expect(err.maybeCarriedOut).toBe(true);

    const made = fake.posts.find((p) => p.text === 'Hello Ada!');
    expect(made?.repliedTo).toBe(item?.platformId);
    const container = requests('POST', /\/threads$/)[0];
    expect(new URLSearchParams(container?.body.toString('utf8')).get('reply_to_id')).toBe(item?.platformId);
    expect(await inbox.findReply(ctx)).toEqual({ externalId: made?.id, url: made?.permalink });
  });
});

describe('threads inbox: Graph errors', () => {
  it.each([
    ['expiredToken', 'auth_expired'],
    ['throttled', 'rate_limited'],
    ['throttledUser', 'rate_limited'],
    ['throttledPage', 'rate_limited'],
    ['throttledCustom', 'rate_limited'],
  ])('%s → %s', async (kind, category) => {
    platforms.failDocumented('threads', kind, 5);
    const err = await failure(poll({ kinds: ['comment'] }));
    expect(err.category).toBe(category);
  });

  it('a 5xx is a retryable system error', async () => {
    platforms.failNext('threads', { status: 500, body: { error: { message: 'Oops', code: 1 } } });
    const err = await failure(poll({ kinds: ['mention'] }));
    expect(err.category).toBe('system');
    expect(err.retryable).toBe(true);
  });
});

describe('threads inbox: grants', () => {
  it('new connections ask for every permission the inbox reads with, and such a channel reads every kind', () => {
    const needs = Object.values(INBOX.threads.kinds).filter((k): k is string => !!k);
    expect(connect.scopes).toEqual(expect.arrayContaining(needs));
    const state = channelInbox({
      platform: 'threads',
      grantedScopes: [...connect.scopes],
      accountId: '1',
      poll: null,
    });
    expect(state).toMatchObject({ available: true, kinds: ['comment', 'mention'], error: null });
  });
});

describe('threads inbox: cost', () => {
  it('a quiet poll costs 2 requests plus one per recent post that has replies', async () => {
    fake.inbox({ kind: 'comment', text: 'c' });
    fake.inbox({ kind: 'mention', text: 'm' });
    const first = await poll({ kinds: ['comment', 'mention'] });
    const before = platforms.requests('threads').length;

    const quiet = await poll({ kinds: ['comment', 'mention'], cursor: first.cursor });

    expect(quiet.items).toEqual([]);
    expect(platforms.requests('threads').length - before).toBe(3);
  });
});

describe('threads fake: the inbox seed control', () => {
  it('POST /__fakes/threads/inbox seeds an item the read endpoints serve at the seed’s time', async () => {
    const at = new Date(Math.floor((Date.now() - 2 * DAY) / 1000) * 1000).toISOString();
    const res = await fetch(`${platforms.origin}/__fakes/threads/inbox`, {
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
