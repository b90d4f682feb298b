import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connect } from '#adapters/platforms/bluesky/connect';
import { connector } from '#adapters/platforms/bluesky/index';
import type {
  InboxConnector,
  InboxFetched,
  InboxPollContext,
  InboxReplyContext,
} from '#adapters/platforms/types';
import { type InboxKind, inboxKinds } from '#core/inbox';
import { createFake, type FakeBluesky } from '../../../fakes/bluesky.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { failure, memoryTokens, publishContext } from './context.ts';

// The Bluesky inbox (replies, mentions, quotes; direct messages through the chat proxy) against the
// contract fake of a PDS (test/fakes/bluesky.ts).

let fakes: FakePlatforms;
let fake: FakeBluesky;
const inbox = connector.inbox as InboxConnector;
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

const DAY = 86_400_000;
const ago = (ms: number) => new Date(Date.now() - ms);
/** A fresh account per test (the connector keeps sessions per identifier). */
const identifier = () => `acme${n}.bsky.social`;
const credentials = (password = 'app-password') => ({
  service: fakes.url('bluesky'),
  identifier: identifier(),
  app_password: password,
});
const did = () => fake.didFor(identifier());
const channel = () => ({ id: 'ch_1', handle: identifier(), platform: 'bluesky' as const, accountId: did() });

function pollContext(over: Partial<InboxPollContext> = {}): InboxPollContext {
  const creds = over.credentials ?? credentials();
  return {
    channel: channel(),
    credentials: creds,
    tokens: memoryTokens('bluesky', creds, []),
    kinds: ['comment', 'mention', 'message'] as InboxKind[],
    cursor: null,
    since: ago(7 * DAY),
    recentPosts: [],
    billedReads: () => {},
    ...over,
  };
}

async function drain(ctx: InboxPollContext, max = 20) {
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

const calls = (nsid: string) => fakes.requests('bluesky').filter((r) => r.path === `/xrpc/${nsid}`);

/** One of the account's own posts (through the connector's publish). */
async function ownPost(text = 'Our launch post') {
  const { ctx } = publishContext({
    channel: { id: 'ch_1', handle: identifier(), platform: 'bluesky' },
    credentials: credentials(),
    idempotencyKey: `post_${n}_${text}:ch_1`,
    text,
  });
  return (await connector.publish(ctx)).externalId;
}

const seed = (s: Parameters<NonNullable<FakeBluesky['inbox']>>[0]) =>
  (fake.inbox as NonNullable<FakeBluesky['inbox']>)(s, { base: fakes.url('bluesky') }).platform_id;

function replyContext(item: InboxFetched, text = 'Thanks!', over: Partial<InboxReplyContext> = {}) {
  const creds = credentials();
  return {
    channel: channel(),
    credentials: creds,
    tokens: memoryTokens('bluesky', creds, []),
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
    idempotencyKey: `rpl_${n}`,
    attemptStartedAt: new Date(),
    ...over,
  } satisfies InboxReplyContext;
}

describe('connect: the session’s scope', () => {
  it('records com.atproto.appPassPrivileged for an app password with DM access, appPass for one without', async () => {
    const privileged = await connect.login(credentials('app-password'));
    expect(privileged.scopes).toEqual(['com.atproto.appPassPrivileged']);
    expect(inboxKinds('bluesky', privileged.scopes)).toEqual(['comment', 'mention', 'message']);
    const plain = await connect.login({ ...credentials('token'), identifier: `other${n}.bsky.social` });
    expect(plain.scopes).toEqual(['com.atproto.appPass']);
    expect(inboxKinds('bluesky', plain.scopes)).toEqual(['comment', 'mention']);
  });
});

describe('poll: mapping', () => {
  it('maps a reply as a comment with its root and strong refs, a mention as a mention, a DM as a message', async () => {
    const post = await ownPost();
    const comment = seed({
      kind: 'comment',
      text: 'Great post!',
      parent: post,
      author: { handle: 'bob.example.com', name: 'Bob' },
    });
    const mention = seed({
      kind: 'mention',
      text: `hey @${identifier()}`,
      to: identifier(),
      author: { handle: 'carol.example.com' },
    });
    const message = seed({
      kind: 'message',
      text: 'psst',
      to: identifier(),
      author: { handle: 'dave.example.com' },
    });
    const { items } = await drain(pollContext());
    const byId = new Map(items.map((i) => [i.platformId, i]));
    expect(items).toHaveLength(3);
    const c = byId.get(comment);
    expect(c).toMatchObject({
      kind: 'comment',
      text: 'Great post!',
      url: `https://bsky.app/profile/bob.example.com/post/${comment.split('/').pop()}`,
      author: {
        handle: 'bob.example.com',
        name: 'Bob',
        avatar_url: expect.any(String),
        platform_id: expect.stringMatching(/^did:plc:/),
      },
      inReplyTo: post,
      conversationId: post,
      rootId: post,
      ref: {
        uri: comment,
        cid: expect.stringMatching(/^bafkrei/),
        root: { uri: post, cid: expect.any(String) },
      },
    });
    expect(byId.get(mention)).toMatchObject({
      kind: 'mention',
      inReplyTo: null,
      rootId: null,
      conversationId: mention,
    });
    expect(byId.get(message)).toMatchObject({
      kind: 'message',
      text: 'psst',
      url: null,
      conversationId: [...fake.convos.keys()][0],
      author: { handle: 'dave.example.com' },
    });
    const [list] = calls('app.bsky.notification.listNotifications');
    expect(list?.query.getAll('reasons')).toEqual(['reply', 'mention', 'quote']);
    // Chat goes through the PDS's proxy to the chat service.
    for (const r of [...calls('chat.bsky.convo.listConvos'), ...calls('chat.bsky.convo.getMessages')])
      expect(r.headers['atproto-proxy']).toBe('did:web:api.bsky.chat#bsky_chat');
  });

  it('the fake answers chat as a PDS does: 501 without the proxy header, 400 without a privileged session', async () => {
    const token = async (password: string) => {
      const res = await fetch(`${fakes.url('bluesky')}/xrpc/com.atproto.server.createSession`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ identifier: identifier(), password }),
      });
      return ((await res.json()) as { accessJwt: string }).accessJwt;
    };
    const chat = async (password: string, proxied: boolean) => {
      const res = await fetch(`${fakes.url('bluesky')}/xrpc/chat.bsky.convo.listConvos`, {
        headers: {
          authorization: `Bearer ${await token(password)}`,
          ...(proxied ? { 'atproto-proxy': 'did:web:api.bsky.chat#bsky_chat' } : {}),
        },
      });
      return [res.status, ((await res.json()) as { error?: string }).error];
    };
    expect(await chat('app-password', false)).toEqual([501, 'MethodNotImplemented']);
    expect(await chat('token', true)).toEqual([400, 'InvalidToken']);
    expect((await chat('app-password', true))[0]).toBe(200);
  });

  it('an app password without DM access reads no conversations (the chat service would refuse it)', async () => {
    seed({ kind: 'message', text: 'psst', to: identifier() });
    seed({ kind: 'mention', text: 'hi', to: identifier() });
    const { items } = await drain(pollContext({ credentials: credentials('token') }));
    expect(items.map((i) => i.kind)).toEqual(['mention']);
    expect(calls('chat.bsky.convo.listConvos')).toHaveLength(0);
  });

  it('a reply by DM with a password the chat service refuses is the platform’s refusal, not a dead session', async () => {
    seed({ kind: 'message', text: 'psst' });
    const { items } = await drain(pollContext({ kinds: ['message'] }));
    // Another account (sessions are kept per identifier) whose app password may not chat.
    const plain = { ...credentials('token'), identifier: `plain${n}.bsky.social` };
    const ctx = { ...replyContext(items[0] as InboxFetched), credentials: plain };
    const refreshes = fake.oauth.stats().refreshes;
    const err = await failure(inbox.reply(ctx));
    expect(err.category).toBe('platform_rejected');
    expect(err.message).toMatch(/Bad token method/);
    // The session was not renewed for it (it is fine; the password may not chat).
    expect(fake.oauth.stats().refreshes).toBe(refreshes);
    expect(calls('chat.bsky.convo.sendMessage')).toHaveLength(1);
  });

  it('serves backdated seeds with their time; the backfill reads nothing older than since', async () => {
    const post = await ownPost();
    const old = seed({ kind: 'comment', text: 'old', parent: post, created_at: ago(9 * DAY).toISOString() });
    const at = ago(DAY).toISOString();
    const recent = seed({ kind: 'comment', text: 'recent', parent: post, created_at: at });
    seed({ kind: 'message', text: 'old dm', to: identifier(), created_at: ago(8 * DAY).toISOString() });
    const { items } = await drain(pollContext());
    expect(items.map((i) => i.platformId)).toEqual([recent]);
    expect(items[0]?.createdAt).toBe(at);
    expect(items.map((i) => i.platformId)).not.toContain(old);
  });
});

describe('poll: paging and cursors', () => {
  it('walks the notifications with the cursor down to what was read; nothing twice, nothing missed', async () => {
    const post = await ownPost();
    const seeded: string[] = [];
    for (let i = 0; i < 120; i++)
      seeded.push(
        seed({
          kind: 'comment',
          text: `c${i}`,
          parent: post,
          created_at: ago((120 - i) * 60_000).toISOString(),
        }),
      );
    const ctx = pollContext({ kinds: ['comment', 'mention'] });
    const first = await inbox.poll(ctx);
    expect(first.items).toHaveLength(50);
    expect(first.more).toBe(true);
    const rest = await drain({ ...ctx, cursor: first.cursor });
    const all = [...first.items, ...rest.items].map((i) => i.platformId);
    expect(all).toHaveLength(120);
    expect(new Set(all)).toEqual(new Set(seeded));
    expect(calls('app.bsky.notification.listNotifications')[1]?.query.get('cursor')).toBeTruthy();
    // The next poll: only what came since, even at the very same millisecond as the last one read.
    const last = rest.cursor as { notifications: { stop: { at: string } } };
    const tie = seed({
      kind: 'comment',
      text: 'same ms',
      parent: post,
      created_at: last.notifications.stop.at,
    });
    const later = seed({ kind: 'comment', text: 'later', parent: post });
    const next = await drain({ ...ctx, cursor: rest.cursor });
    expect(next.items.map((i) => i.platformId).sort()).toEqual([tie, later].sort());
    const idle = await drain({ ...ctx, cursor: next.cursor });
    expect(idle.items).toEqual([]);
  });

  it('messages: only those sent since the last poll, several per conversation, never the account’s own', async () => {
    const first = seed({
      kind: 'message',
      text: 'one',
      to: identifier(),
      author: { handle: 'dave.example.com' },
    });
    const a = await drain(pollContext({ kinds: ['message'] }));
    expect(a.items.map((i) => i.platformId)).toEqual([first]);
    await inbox.reply(replyContext(a.items[0] as InboxFetched, 'hello back'));
    const two = seed({
      kind: 'message',
      text: 'two',
      to: identifier(),
      author: { handle: 'dave.example.com' },
    });
    const three = seed({
      kind: 'message',
      text: 'three',
      to: identifier(),
      author: { handle: 'dave.example.com' },
    });
    const b = await drain(pollContext({ kinds: ['message'], cursor: a.cursor }));
    expect(b.items.map((i) => i.platformId).sort()).toEqual([two, three].sort());
    const c = await drain(pollContext({ kinds: ['message'], cursor: b.cursor }));
    expect(c.items).toEqual([]);
  });
});

describe('poll: errors', () => {
  it('429 rate_limited (after ratelimit-reset), 5xx system, a deleted app password auth_expired', async () => {
    const ctx = pollContext();
    await inbox.poll(ctx); // the session is open
    fakes.failNext('bluesky', {
      status: 429,
      body: { error: 'RateLimitExceeded', message: 'Rate Limit Exceeded' },
      headers: { 'ratelimit-reset': String(Math.floor(Date.now() / 1000) + 60) },
      path: /listNotifications/,
    });
    const limited = await failure(inbox.poll(ctx));
    expect(limited.category).toBe('rate_limited');
    expect(limited.opts.retryAfterSeconds).toBeGreaterThan(50);
    fakes.failNext('bluesky', {
      status: 502,
      body: { error: 'UpstreamFailure', message: 'Upstream Failure' },
      path: /listNotifications/,
    });
    const down = await failure(inbox.poll(ctx));
    expect(down.category).toBe('system');
    expect(down.retryable).toBe(true);
    await fetch(`${fakes.origin}/__fakes/bluesky/revoke`, {
      method: 'POST',
      body: JSON.stringify({ user: identifier() }),
    });
    const revoked = await failure(inbox.poll(ctx));
    expect(revoked.category).toBe('auth_expired');
  });
});

describe('reply and findReply', () => {
  it('replies with root and parent strong refs under one key: a retry makes no second post', async () => {
    const post = await ownPost();
    seed({ kind: 'comment', text: 'Q?', parent: post, author: { handle: 'bob.example.com' } });
    const { items } = await drain(pollContext());
    const item = items[0] as InboxFetched;
    const ctx = replyContext(item, 'The answer https://example.com');
    expect(await inbox.findReply(ctx)).toBeNull();
    const a = await inbox.reply(ctx);
    const b = await inbox.reply(ctx); // the same attempt again (its answer was lost)
    expect(b).toEqual(a);
    const mine = fake.posts.filter(
      (p) => (p.record.reply as { parent?: { uri: string } } | undefined)?.parent?.uri === item.platformId,
    );
    expect(mine).toHaveLength(1);
    expect(mine[0]?.record.reply).toEqual({
      root: { uri: post, cid: expect.any(String) },
      parent: { uri: item.platformId, cid: (item.ref as { cid: string }).cid },
    });
    expect(mine[0]?.record.facets).toEqual([
      expect.objectContaining({ features: [expect.objectContaining({ uri: 'https://example.com' })] }),
    ]);
    expect(a).toMatchObject({
      externalId: expect.stringMatching(/^at:\/\//),
      url: expect.stringMatching(/^https:\/\/bsky\.app\/profile\//),
    });
    expect(await inbox.findReply(ctx)).toEqual(a);
    // Dated otherwise (another key): found in the parent's thread by the same text, not by another.
    const later = { ...ctx, attemptStartedAt: new Date(Date.now() - 30_000) };
    expect(await inbox.findReply(later)).toMatchObject({ externalId: a.externalId });
    expect(await inbox.findReply({ ...later, text: 'Something else' })).toBeNull();
  });

  it('answers a message with sendMessage in its conversation; findReply finds it after a lost answer, null before', async () => {
    seed({ kind: 'message', text: 'hello?', to: identifier(), author: { handle: 'dave.example.com' } });
    const { items } = await drain(pollContext({ kinds: ['message'] }));
    const ctx = replyContext(items[0] as InboxFetched, 'Hi Dave');
    expect(await inbox.findReply(ctx)).toBeNull();
    const sent = await inbox.reply(ctx);
    const [req] = calls('chat.bsky.convo.sendMessage');
    expect(req?.json).toEqual({ convoId: items[0]?.conversationId, message: { text: 'Hi Dave' } });
    expect(req?.headers['atproto-proxy']).toBe('did:web:api.bsky.chat#bsky_chat');
    expect(await inbox.findReply(ctx)).toEqual(sent);
    expect(sent.url).toBeNull();
  });

  it('a refused reply (over the limit) is user_content; findReply that cannot tell is outcome unknown', async () => {
    seed({ kind: 'message', text: 'hello?', to: identifier() });
    const { items } = await drain(pollContext({ kinds: ['message'] }));
    const ctx = replyContext(items[0] as InboxFetched, 'x'.repeat(1001));
    expect((await failure(inbox.reply(ctx))).category).toBe('user_content');
    fakes.failNext('bluesky', { status: 503, body: { error: 'InternalServerError' }, path: /getMessages/ });
    const err = await failure(inbox.findReply(ctx));
    expect(err.opts.unknownOutcome).toBe(true);
    expect(err.retryable).toBe(true);
  });
});
