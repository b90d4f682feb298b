import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type {
  InboxConnector,
  InboxFetched,
  InboxPollContext,
  InboxReplyContext,
} from '#adapters/platforms/types';
import { connector } from '#adapters/platforms/x/index';
import type { InboxKind } from '#core/inbox';
import { documentedErrors } from '../../../fakes/documented-errors.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { createFake, type FakeX } from '../../../fakes/x.ts';
import { failure, memoryTokens, publishContext } from './context.ts';

// The X inbox (mentions, replies to the account's posts, direct messages) against the contract fake
// of the X API v2, which checks the requests against X's OpenAPI document.

let fakes: FakePlatforms;
let fake: FakeX;
const inbox = connector.inbox as InboxConnector;
const env = { ...process.env };

beforeAll(async () => {
  fakes = await new FakePlatforms([createFake()]).start();
  fake = fakes.fake<FakeX>('x');
});
afterAll(() => fakes.stop());
beforeEach(() => {
  fakes.reset();
  process.env.HERALD_PLATFORM_X_URL = fakes.url('x');
});
afterEach(() => {
  process.env = { ...env };
});

const ME = '1500000000000000001';
const DAY = 86_400_000;
const ago = (ms: number) => new Date(Date.now() - ms);
const credentials = () => ({ access_token: 'token', account_id: ME });
const channel = () => ({ id: 'ch_1', handle: '@acme', platform: 'x' as const, accountId: ME });

function pollContext(over: Partial<InboxPollContext> = {}) {
  const billed: number[] = [];
  const creds = credentials();
  const ctx: InboxPollContext = {
    channel: channel(),
    credentials: creds,
    tokens: memoryTokens('x', creds, []),
    kinds: ['comment', 'mention', 'message'] as InboxKind[],
    cursor: null,
    since: ago(7 * DAY),
    recentPosts: [],
    billedReads: (n) => billed.push(n),
    ...over,
  };
  return { ctx, billed };
}

async function drain(ctx: InboxPollContext, max = 30) {
  const items: InboxFetched[] = [];
  let cursor = ctx.cursor;
  for (let i = 0; i < max; i++) {
    const page = await inbox.poll({ ...ctx, cursor });
    items.push(...page.items);
    cursor = page.cursor;
    if (!page.more) return { items, cursor };
  }
  throw new Error('the poll never ended');
}

const calls = (method: string, path: RegExp) =>
  fakes.requests('x').filter((r) => r.method === method && path.test(r.path));

async function ownPost(text = 'Our launch post') {
  const { ctx } = publishContext({
    channel: { id: 'ch_1', handle: '@acme', platform: 'x' },
    credentials: credentials(),
    text,
  });
  return (await connector.publish(ctx)).externalId;
}

const seed = (s: Parameters<NonNullable<FakeX['inbox']>>[0]) =>
  (fake.inbox as NonNullable<FakeX['inbox']>)(s, { base: fakes.url('x') }).platform_id;

function replyContext(
  item: InboxFetched,
  text = 'Thanks!',
  over: Partial<InboxReplyContext> = {},
): InboxReplyContext {
  const creds = credentials();
  return {
    channel: channel(),
    credentials: creds,
    tokens: memoryTokens('x', creds, []),
    item: {
      kind: item.kind,
      platformId: item.platformId,
      inReplyTo: item.inReplyTo,
      conversationId: item.conversationId,
      rootId: item.rootId,
      ref: item.ref ?? null,
      author: { handle: item.author.handle, platform_id: item.author.platform_id },
    },
    text,
    idempotencyKey: 'rpl_1',
    attemptStartedAt: new Date(),
    ...over,
  };
}

describe('poll: mapping', () => {
  it('maps a reply to the account’s post as a comment, another mention as a mention, a DM as a message; counts billed reads', async () => {
    const post = await ownPost();
    const comment = seed({
      kind: 'comment',
      text: 'Great post!',
      parent: post,
      author: { handle: 'bob', name: 'Bob' },
    });
    const mention = seed({ kind: 'mention', text: 'look at @acme', author: { handle: 'carol' } });
    const message = seed({
      kind: 'message',
      text: 'psst',
      author: { handle: 'dave', id: '1600000000000000002' },
    });
    const { ctx, billed } = pollContext();
    const { items } = await drain(ctx);
    const byId = new Map(items.map((i) => [i.platformId, i]));
    expect(items).toHaveLength(3);
    expect(byId.get(comment)).toMatchObject({
      kind: 'comment',
      text: '@acme Great post!',
      url: `https://x.com/bob/status/${comment}`,
      author: {
        handle: 'bob',
        name: 'Bob',
        avatar_url: expect.stringContaining('/profile_images/'),
        platform_id: expect.any(String),
      },
      inReplyTo: post,
      conversationId: post,
      rootId: post,
    });
    expect(byId.get(mention)).toMatchObject({
      kind: 'mention',
      text: 'look at @acme',
      inReplyTo: null,
      rootId: null,
      conversationId: mention,
    });
    expect(byId.get(message)).toMatchObject({
      kind: 'message',
      text: 'psst',
      url: null,
      conversationId: `${ME}-1600000000000000002`,
      author: { handle: 'dave', platform_id: '1600000000000000002' },
    });
    // Two posts and one DM event read: X bills each.
    expect(billed.reduce((a, b) => a + b, 0)).toBe(3);
    const [m] = calls('GET', /\/mentions$/);
    expect(Object.fromEntries(m?.query ?? [])).toMatchObject({
      expansions: 'author_id',
      'post.fields': 'created_at,conversation_id,in_reply_to_user_id,referenced_tweets,author_id',
      start_time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
    });
    const [dm] = calls('GET', /^\/2\/dm_events$/);
    expect(dm?.query.get('event_types')).toBe('MessageCreate');
  });

  it('reads only the granted kinds: no dm_events without the message kind', async () => {
    seed({ kind: 'message', text: 'psst' });
    seed({ kind: 'mention', text: 'hi @acme' });
    const { ctx } = pollContext({ kinds: ['comment', 'mention'] });
    const { items } = await drain(ctx);
    expect(items.map((i) => i.kind)).toEqual(['mention']);
    expect(calls('GET', /dm_events/)).toHaveLength(0);
  });

  it('backfills with start_time: a backdated seed is served with its time, nothing older than since', async () => {
    const at = ago(2 * DAY).toISOString();
    const recent = seed({ kind: 'mention', text: 'recent @acme', created_at: at });
    seed({ kind: 'mention', text: 'old @acme', created_at: ago(9 * DAY).toISOString() });
    seed({ kind: 'message', text: 'old dm', created_at: ago(8 * DAY).toISOString() });
    const { ctx } = pollContext();
    const { items } = await drain(ctx);
    expect(items.map((i) => i.platformId)).toEqual([recent]);
    expect(items[0]?.createdAt).toBe(at);
  });
});

describe('poll: paging and cursors', () => {
  it('mentions: pages with pagination_token, then since_id; nothing twice, nothing missed', async () => {
    const seeded: string[] = [];
    for (let i = 0; i < 230; i++)
      seeded.push(
        seed({ kind: 'mention', text: `m${i} @acme`, created_at: ago((230 - i) * 60_000).toISOString() }),
      );
    const { ctx, billed } = pollContext({ kinds: ['mention'] });
    const first = await drain(ctx);
    expect(first.items).toHaveLength(230);
    expect(new Set(first.items.map((i) => i.platformId))).toEqual(new Set(seeded));
    const pages = calls('GET', /\/mentions$/);
    expect(pages).toHaveLength(3);
    expect(pages[1]?.query.get('pagination_token')).toBeTruthy();
    expect(pages[1]?.query.get('start_time')).toBe(pages[0]?.query.get('start_time'));
    expect(billed).toEqual([100, 100, 30]);
    const later = [
      seed({ kind: 'mention', text: 'new1 @acme' }),
      seed({ kind: 'mention', text: 'new2 @acme' }),
    ];
    const next = await drain({ ...ctx, cursor: first.cursor });
    expect(next.items.map((i) => i.platformId).sort()).toEqual([...later].sort());
    const forward = calls('GET', /\/mentions$/).slice(3);
    expect(forward[0]?.query.get('since_id')).toBe(seeded.at(-1));
    expect(forward[0]?.query.get('start_time')).toBeNull();
    const idle = await drain({ ...ctx, cursor: next.cursor });
    expect(idle.items).toEqual([]);
  });

  it('direct messages: walked newest first down to the newest read before; the account’s own are skipped', async () => {
    const other = { handle: 'dave', id: '1600000000000000002' };
    for (let i = 0; i < 150; i++)
      seed({
        kind: 'message',
        text: `d${i}`,
        author: other,
        created_at: ago((150 - i) * 60_000).toISOString(),
      });
    const { ctx } = pollContext({ kinds: ['message'] });
    const first = await drain(ctx);
    expect(first.items).toHaveLength(150);
    expect(new Set(first.items.map((i) => i.platformId)).size).toBe(150);
    // Our answer, then two new messages.
    await inbox.reply(replyContext(first.items[0] as InboxFetched, 'on it'));
    const fresh = [
      seed({ kind: 'message', text: 'n1', author: other }),
      seed({ kind: 'message', text: 'n2', author: other }),
    ];
    const next = await drain({ ...ctx, cursor: first.cursor });
    expect(next.items.map((i) => i.platformId).sort()).toEqual([...fresh].sort());
    const again = await drain({ ...ctx, cursor: next.cursor });
    expect(again.items).toEqual([]);
  });
});

describe('the requests hold to X’s OpenAPI document', () => {
  const get = async (path: string) => {
    const res = await fetch(`${fakes.url('x')}${path}`, { headers: { authorization: 'Bearer token' } });
    return { status: res.status, body: (await res.json()) as { errors?: Array<{ message: string }> } };
  };

  it('refuses what the document does not declare: an unknown parameter, max_results out of range, a short page token, an unknown event type', async () => {
    expect((await get(`/2/users/${ME}/mentions?tweet.fields=created_at`)).body.errors?.[0]?.message).toMatch(
      /\[tweet\.fields\] is not one of \[max_results,pagination_token,start_time,end_time,since_id,until_id,post\.fields/,
    );
    expect((await get(`/2/users/${ME}/mentions?max_results=500`)).status).toBe(400);
    expect((await get(`/2/users/${ME}/mentions?since_id=abc`)).status).toBe(400);
    expect((await get('/2/dm_events?pagination_token=short')).status).toBe(400);
    expect((await get('/2/dm_events?event_types=MessageDelete')).status).toBe(400);
    expect(
      (
        await get(
          '/2/dm_events?dm_event.fields=id,text,created_at,dm_conversation_id,event_type&event_types=MessageCreate',
        )
      ).status,
    ).toBe(200);
    const body = await fetch(`${fakes.url('x')}/2/dm_conversations/1-2/messages`, {
      method: 'POST',
      headers: { authorization: 'Bearer token', 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hi', message: 'no' }),
    });
    expect(body.status).toBe(400);
  });
});

describe('poll: errors', () => {
  it('429 rate_limited until x-rate-limit-reset; 5xx system; a revoked token auth_expired', async () => {
    const { ctx } = pollContext();
    fakes.failDocumented('x', 'throttled');
    const limited = await failure(inbox.poll(ctx));
    expect(limited.category).toBe('rate_limited');
    expect(limited.opts.retryAfterSeconds).toBeGreaterThan(0);
    fakes.failNext('x', { status: 503, body: { title: 'Service Unavailable' }, path: /mentions/ });
    const down = await failure(inbox.poll(ctx));
    expect(down.category).toBe('system');
    expect(down.retryable).toBe(true);
    fakes.failNext('x', { ...documentedErrors.x.revokedToken, times: 2, path: /mentions/ });
    const revoked = await failure(inbox.poll(ctx));
    expect(revoked.category).toBe('auth_expired');
  });
});

describe('reply and findReply', () => {
  it('replies with reply.in_reply_to_tweet_id; findReply finds it after a lost answer and is null before', async () => {
    const post = await ownPost();
    seed({ kind: 'comment', text: 'Q?', parent: post, author: { handle: 'bob' } });
    const { ctx } = pollContext();
    const { items } = await drain(ctx);
    const rctx = replyContext(items[0] as InboxFetched, 'The answer & more https://example.com/x');
    expect(await inbox.findReply(rctx)).toBeNull();
    const sent = await inbox.reply(rctx);
    expect(calls('POST', /^\/2\/tweets$/).at(-1)?.json).toEqual({
      text: 'The answer & more https://example.com/x',
      reply: { in_reply_to_tweet_id: items[0]?.platformId },
    });
    expect(sent.url).toBe(`https://x.com/acme/status/${sent.externalId}`);
    expect(await inbox.findReply(rctx)).toEqual(sent);
    expect(await inbox.findReply({ ...rctx, text: 'Another text' })).toBeNull();
    // Sent again: X refuses the duplicate, and the reply already made is the answer (no second post).
    expect(await inbox.reply(rctx)).toEqual(sent);
    expect(fake.posts.filter((t) => t.in_reply_to === items[0]?.platformId)).toHaveLength(1);
  });

  it('answers a message in its conversation (dm.write); findReply reads the conversation', async () => {
    seed({ kind: 'message', text: 'hello?', author: { handle: 'dave', id: '1600000000000000002' } });
    const { ctx } = pollContext({ kinds: ['message'] });
    const { items } = await drain(ctx);
    const rctx = replyContext(items[0] as InboxFetched, 'Hi Dave');
    expect(await inbox.findReply(rctx)).toBeNull();
    const sent = await inbox.reply(rctx);
    const [req] = calls('POST', /^\/2\/dm_conversations\/[^/]+\/messages$/);
    expect(req?.path).toBe(`/2/dm_conversations/${ME}-1600000000000000002/messages`);
    expect(req?.json).toEqual({ text: 'Hi Dave' });
    expect(sent).toEqual({ externalId: expect.any(String), url: null });
    expect(await inbox.findReply(rctx)).toEqual(sent);
  });

  it('a reply over the limit is refused (user_content); a findReply that cannot tell is outcome unknown', async () => {
    const post = await ownPost();
    seed({ kind: 'comment', text: 'Q?', parent: post });
    const { ctx } = pollContext({ kinds: ['comment'] });
    const { items } = await drain(ctx);
    const long = await failure(inbox.reply(replyContext(items[0] as InboxFetched, 'x'.repeat(300))));
    expect(long.category).toBe('user_content');
    fakes.failNext('x', { status: 500, body: { title: 'Internal Error' }, path: /\/tweets$/ });
    const err = await failure(inbox.findReply(replyContext(items[0] as InboxFetched)));
    expect(err.opts.unknownOutcome).toBe(true);
    expect(err.retryable).toBe(true);
  });
});
