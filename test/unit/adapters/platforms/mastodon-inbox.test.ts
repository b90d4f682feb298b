import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseLink } from '#adapters/platforms/mastodon/inbox';
import { connector } from '#adapters/platforms/mastodon/index';
import type {
  InboxConnector,
  InboxFetched,
  InboxPollContext,
  InboxReplyContext,
} from '#adapters/platforms/types';
import type { InboxKind } from '#core/inbox';
import { documentedErrors } from '../../../fakes/documented-errors.ts';
import { createFake, type FakeMastodon } from '../../../fakes/mastodon.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { failure, memoryTokens } from './context.ts';

// The Mastodon inbox (mentions, replies, direct messages) against the contract fake of an instance.

let fakes: FakePlatforms;
let fake: FakeMastodon;
const inbox = connector.inbox as InboxConnector;

beforeAll(async () => {
  fakes = await new FakePlatforms([createFake()]).start();
  fake = fakes.fake<FakeMastodon>('mastodon');
});
afterAll(() => fakes.stop());
beforeEach(() => fakes.reset());

const ACCOUNT = '109000000000000001';
const channel = () => ({
  id: 'ch_1',
  handle: '@acme@example.social',
  platform: 'mastodon' as const,
  accountId: ACCOUNT,
});
const credentials = () => ({ instance: fakes.url('mastodon'), access_token: 'token' });
const ago = (ms: number) => new Date(Date.now() - ms);
const DAY = 86_400_000;

function pollContext(over: Partial<InboxPollContext> = {}): InboxPollContext & { billed: number[] } {
  const billed: number[] = [];
  const creds = credentials();
  return {
    channel: channel(),
    credentials: creds,
    tokens: memoryTokens('mastodon', creds, []),
    kinds: ['comment', 'mention', 'message'] as InboxKind[],
    cursor: null,
    since: ago(7 * DAY),
    recentPosts: [],
    billedReads: (n) => billed.push(n),
    billed,
    ...over,
  };
}

/** Polls page after page as the poller does (the cursor saved after each), until no more. */
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

const calls = (method: string, path: RegExp) =>
  fakes.requests('mastodon').filter((r) => r.method === method && path.test(r.path));

async function ownStatus(text = 'Our launch post') {
  const res = await fetch(`${fakes.url('mastodon')}/api/v1/statuses`, {
    method: 'POST',
    headers: { authorization: 'Bearer token', 'content-type': 'application/json' },
    body: JSON.stringify({ status: text }),
  });
  return ((await res.json()) as { id: string }).id;
}

const seed = (s: Parameters<NonNullable<FakeMastodon['inbox']>>[0]) =>
  (fake.inbox as NonNullable<FakeMastodon['inbox']>)(s, { base: fakes.url('mastodon') }).platform_id;

function replyContext(item: Partial<InboxReplyContext['item']>, text = 'Thanks!'): InboxReplyContext {
  const creds = credentials();
  return {
    channel: channel(),
    credentials: creds,
    tokens: memoryTokens('mastodon', creds, []),
    item: {
      kind: 'comment',
      platformId: '',
      inReplyTo: null,
      conversationId: null,
      rootId: null,
      ref: null,
      author: { handle: '@bob@other.example', platform_id: '1' },
      ...item,
    },
    text,
    idempotencyKey: 'rpl_1',
    attemptStartedAt: new Date(),
  };
}

describe('poll: mapping', () => {
  it('maps a reply to the account’s status as a comment, a mention as a mention, a direct status as a message', async () => {
    const post = await ownStatus();
    const comment = seed({
      kind: 'comment',
      text: 'Great post!',
      parent: post,
      author: { handle: 'bob@other.example', name: 'Bob' },
    });
    const mention = seed({
      kind: 'mention',
      text: 'Hey @acme look',
      author: { handle: 'carol@third.example' },
    });
    const message = seed({
      kind: 'message',
      text: 'Psst, a secret',
      author: { handle: 'dave@other.example' },
    });
    const { items } = await drain(pollContext());
    const byId = new Map(items.map((i) => [i.platformId, i]));
    expect(items).toHaveLength(3);
    expect(byId.get(comment)).toMatchObject({
      kind: 'comment',
      text: '@acme Great post!',
      url: `${fakes.url('mastodon')}/@bob@other.example/${comment}`,
      author: {
        handle: '@bob@other.example',
        name: 'Bob',
        avatar_url: expect.stringContaining('/avatars/'),
        platform_id: expect.stringMatching(/^109\d+$/),
      },
      inReplyTo: post,
      conversationId: post,
      rootId: post,
    });
    expect(byId.get(mention)).toMatchObject({
      kind: 'mention',
      text: 'Hey @acme look',
      inReplyTo: null,
      conversationId: mention,
      rootId: null,
    });
    const conv = [...fake.conversations.values()][0];
    expect(byId.get(message)).toMatchObject({
      kind: 'message',
      text: '@acme Psst, a secret',
      conversationId: conv?.id,
      rootId: null,
      author: { handle: '@dave@other.example' },
    });
    for (const i of items) expect(Date.parse(i.createdAt)).toBeGreaterThan(Date.now() - 60_000);
    // The documented reads, with the mention filter; X-style billing does not apply.
    const [n] = calls('GET', /^\/api\/v1\/notifications$/);
    expect(n?.query.getAll('types[]')).toEqual(['mention']);
    expect(n?.headers.authorization).toBe('Bearer token');
    expect(calls('GET', /^\/api\/v1\/conversations$/)).toHaveLength(1);
  });

  it('reads only the kinds granted: no conversations without the message kind, no mentions without comment/mention', async () => {
    seed({ kind: 'mention', text: 'hi @acme' });
    seed({ kind: 'message', text: 'dm' });
    const mentionsOnly = await drain(pollContext({ kinds: ['comment', 'mention'] }));
    expect(mentionsOnly.items.map((i) => i.kind)).toEqual(['mention']);
    expect(calls('GET', /^\/api\/v1\/conversations$/)).toHaveLength(0);
    const messagesOnly = await drain(pollContext({ kinds: ['message'] }));
    expect(messagesOnly.items.map((i) => i.kind)).toEqual(['message']);
    expect(calls('GET', /^\/api\/v1\/notifications$/)).toHaveLength(1);
  });

  it('serves a backdated seed with its created_at, and the backfill reads nothing older than since', async () => {
    const old = seed({ kind: 'mention', text: 'old @acme', created_at: ago(10 * DAY).toISOString() });
    const recent = seed({ kind: 'mention', text: 'recent @acme', created_at: ago(2 * DAY).toISOString() });
    const oldDm = seed({ kind: 'message', text: 'old dm', created_at: ago(9 * DAY).toISOString() });
    const { items } = await drain(pollContext());
    expect(items.map((i) => i.platformId)).toEqual([recent]);
    expect(items[0]?.createdAt).toBe(fake.others.get(recent)?.created_at);
    expect(items.map((i) => i.platformId)).not.toContain(old);
    expect(items.map((i) => i.platformId)).not.toContain(oldDm);
  });

  it('collects every message a conversation received since the last poll, not only its last status', async () => {
    const first = seed({ kind: 'message', text: 'one', author: { handle: 'dave@other.example' } });
    const { cursor } = await drain(pollContext());
    const second = seed({
      kind: 'message',
      text: 'two',
      parent: first,
      author: { handle: 'dave@other.example' },
    });
    const third = seed({
      kind: 'message',
      text: 'three',
      parent: second,
      author: { handle: 'dave@other.example' },
    });
    const { items } = await drain(pollContext({ cursor }));
    expect(items.map((i) => i.platformId).sort()).toEqual([second, third].sort());
    expect(new Set(items.map((i) => i.conversationId)).size).toBe(1);
  });

  it('skips the account’s own statuses (its direct reply moves the conversation on)', async () => {
    const dm = seed({ kind: 'message', text: 'question?', author: { handle: 'dave@other.example' } });
    const first = await drain(pollContext());
    expect(first.items).toHaveLength(1);
    await inbox.reply(
      replyContext(
        { kind: 'message', platformId: dm, author: { handle: '@dave@other.example', platform_id: '2' } },
        'answer',
      ),
    );
    const { items } = await drain(pollContext({ cursor: first.cursor }));
    expect(items).toEqual([]);
  });
});

describe('poll: paging and cursors', () => {
  it('walks the backfill with max_id, then reads forward with min_id; nothing twice, nothing missed', async () => {
    const seeded: string[] = [];
    for (let i = 0; i < 95; i++)
      seeded.push(
        seed({ kind: 'mention', text: `m${i} @acme`, created_at: ago((95 - i) * 60_000).toISOString() }),
      );
    const ctx = pollContext({ kinds: ['comment', 'mention'] });
    const first = await inbox.poll(ctx);
    expect(first.items).toHaveLength(40);
    expect(first.more).toBe(true);
    const { items, cursor } = await drain({ ...ctx, cursor: first.cursor });
    const all = [...first.items, ...items].map((i) => i.platformId);
    expect(all).toHaveLength(95);
    expect(new Set(all).size).toBe(95);
    expect(new Set(all)).toEqual(new Set(seeded));
    const pages = calls('GET', /^\/api\/v1\/notifications$/);
    expect(pages[0]?.query.get('max_id')).toBeNull();
    expect(pages[1]?.query.get('max_id')).toBeTruthy();
    // Done: the cursor is the newest id; the next poll asks what is newer.
    expect(cursor).toMatchObject({ mentions: { min: expect.any(String) } });
    const later: string[] = [];
    for (let i = 0; i < 45; i++) later.push(seed({ kind: 'mention', text: `n${i} @acme` }));
    const next = await drain({ ...ctx, cursor });
    expect(next.items.map((i) => i.platformId).sort()).toEqual([...later].sort());
    const forward = calls('GET', /^\/api\/v1\/notifications$/).slice(pages.length);
    expect(forward.every((r) => r.query.get('min_id'))).toBe(true);
    expect(forward).toHaveLength(2); // 40, then 5
    // And a poll with nothing new reads one empty page and keeps its cursor.
    const idle = await inbox.poll({ ...ctx, cursor: next.cursor });
    expect(idle).toEqual({ items: [], cursor: next.cursor, more: false });
  });

  it('a page read again (a poll killed before its cursor was saved) returns the same items, never new ones twice', async () => {
    for (let i = 0; i < 3; i++) seed({ kind: 'mention', text: `x${i} @acme` });
    const ctx = pollContext();
    const { cursor } = await drain(ctx);
    seed({ kind: 'mention', text: 'new @acme' });
    const a = await inbox.poll({ ...ctx, cursor });
    const b = await inbox.poll({ ...ctx, cursor }); // the same cursor again
    expect(a.items.map((i) => i.platformId)).toEqual(b.items.map((i) => i.platformId));
    const c = await inbox.poll({ ...ctx, cursor: a.cursor });
    expect(c.items).toEqual([]);
  });

  it('parses the Link header as Mastodon sends it', () => {
    const links = parseLink(
      '<https://m.example/api/v1/notifications?max_id=7>; rel="next", <https://m.example/api/v1/notifications?min_id=9>; rel="prev"',
    );
    expect(links.next?.get('max_id')).toBe('7');
    expect(links.prev?.get('min_id')).toBe('9');
    expect(parseLink(null)).toEqual({});
  });
});

describe('poll: errors', () => {
  it('429 is rate_limited with the reset as retry-after; 5xx is a retryable system error; 401 is auth_expired', async () => {
    fakes.failNext('mastodon', { ...documentedErrors.mastodon.throttled, times: 1 });
    const limited = await failure(inbox.poll(pollContext()));
    expect(limited.category).toBe('rate_limited');
    expect(limited.opts.retryAfterSeconds).toBeGreaterThanOrEqual(0);
    expect(limited.retryable).toBe(true);

    fakes.failNext('mastodon', { status: 503, body: 'Service Unavailable', path: /notifications/ });
    const down = await failure(inbox.poll(pollContext()));
    expect(down.category).toBe('system');
    expect(down.retryable).toBe(true);

    fakes.failDocumented('mastodon', 'revokedToken');
    const revoked = await failure(inbox.poll(pollContext()));
    expect(revoked.category).toBe('auth_expired');
    expect(revoked.retryable).toBe(false);
  });
});

describe('reply', () => {
  it('answers a comment with in_reply_to_id, the author’s mention and the Idempotency-Key; a repeat makes no second status', async () => {
    const post = await ownStatus();
    const comment = seed({
      kind: 'comment',
      text: 'Nice',
      parent: post,
      author: { handle: 'bob@other.example' },
    });
    const ctx = replyContext({ kind: 'comment', platformId: comment });
    const a = await inbox.reply(ctx);
    const b = await inbox.reply(ctx);
    expect(b).toEqual(a);
    const [req] = calls('POST', /^\/api\/v1\/statuses$/).slice(1);
    expect(req?.json).toEqual({ status: '@bob@other.example Thanks!', in_reply_to_id: comment });
    expect(req?.headers['idempotency-key']).toBe('rpl_1');
    expect(fake.posts.filter((p) => p.in_reply_to_id === comment)).toHaveLength(1);
    expect(a.url).toBe(`${fakes.url('mastodon')}/@acme/${a.externalId}`);
  });

  it('answers a message directly (visibility direct), and keeps a mention the text already has', async () => {
    const dm = seed({ kind: 'message', text: 'hello', author: { handle: 'dave@other.example' } });
    await inbox.reply(
      replyContext(
        { kind: 'message', platformId: dm, author: { handle: '@dave@other.example', platform_id: '2' } },
        'Hi @dave@other.example, sure',
      ),
    );
    expect(calls('POST', /^\/api\/v1\/statuses$/)[0]?.json).toEqual({
      status: 'Hi @dave@other.example, sure',
      in_reply_to_id: dm,
      visibility: 'direct',
    });
  });

  it('maps a refusal: 422 over the limit is user_content, 429 rate_limited', async () => {
    const c = seed({ kind: 'mention', text: 'hi @acme' });
    const long = await failure(inbox.reply(replyContext({ platformId: c }, 'x'.repeat(600))));
    expect(long.category).toBe('user_content');
    fakes.failNext('mastodon', { ...documentedErrors.mastodon.throttled, times: 1 });
    expect((await failure(inbox.reply(replyContext({ platformId: c })))).category).toBe('rate_limited');
  });
});

describe('findReply', () => {
  it('finds the reply an attempt made whose answer was lost; null when there is none', async () => {
    const post = await ownStatus();
    const comment = seed({
      kind: 'comment',
      text: 'Q?',
      parent: post,
      author: { handle: 'bob@other.example' },
    });
    const ctx = replyContext({ kind: 'comment', platformId: comment }, 'The answer');
    expect(await inbox.findReply(ctx)).toBeNull();
    // The status is made; its answer is lost (the worker only learns it sent something).
    const made = await inbox.reply(ctx);
    expect(fake.posts.filter((p) => p.in_reply_to_id === comment)).toHaveLength(1);
    const found = await inbox.findReply(ctx);
    expect(found).toEqual(made);
    expect(found?.url).toBe(`${fakes.url('mastodon')}/@acme/${made.externalId}`);
    // Another text, or a reply from before the attempt, is not it.
    expect(await inbox.findReply({ ...ctx, text: 'Something else' })).toBeNull();
    expect(
      await inbox.findReply({ ...ctx, attemptStartedAt: new Date(Date.now() + 10 * 60_000) }),
    ).toBeNull();
    const dm = seed({ kind: 'message', text: 'dm' });
    expect(await inbox.findReply(replyContext({ kind: 'message', platformId: dm }))).toBeNull();
  });

  it('cannot tell when the instance fails: outcome unknown, retryable on a 5xx', async () => {
    const c = seed({ kind: 'mention', text: 'hi @acme' });
    fakes.failNext('mastodon', { status: 502, body: 'Bad Gateway', path: /context$/ });
    const err = await failure(inbox.findReply(replyContext({ platformId: c })));
    expect(err.opts.unknownOutcome).toBe(true);
    expect(err.retryable).toBe(true);
  });
});
