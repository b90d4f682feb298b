import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LINKEDIN_VERSION } from '#adapters/platforms/linkedin/client';
import { connector } from '#adapters/platforms/linkedin/index';
import type { InboxFetched, InboxPollContext, InboxReplyContext } from '#adapters/platforms/types';
import { createFake, type FakeLinkedIn } from '../../../fakes/linkedin.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { failure, memoryTokens } from './context.ts';

// The LinkedIn inbox against the contract fake: an organization page's recent posts, their comment
// counts in one batch call, then the comments of the posts whose count moved (nested replies
// included), from `since` and nothing twice; replies nested under the comment; findReply after a
// lost answer; a member account refused; and the errors' categories.

let fakes: FakePlatforms;
let fake: FakeLinkedIn;
const ORG = 'urn:li:organization:2414183';
const CREDS = { access_token: 'token', account_id: ORG };
const channel = { id: 'ch_li', handle: 'acme-corp', platform: 'linkedin' as const, accountId: ORG };
const DAY = 86_400_000;
const inbox = () => {
  if (!connector.inbox) throw new Error('the linkedin connector has no inbox');
  return connector.inbox;
};

beforeAll(async () => {
  fakes = await new FakePlatforms([createFake()]).start();
  fake = fakes.fake<FakeLinkedIn>('linkedin');
  process.env.HERALD_PLATFORM_LINKEDIN_URL = fakes.url('linkedin');
});
afterAll(async () => {
  delete process.env.HERALD_PLATFORM_LINKEDIN_URL;
  await fakes.stop();
});
beforeEach(() => fakes.reset());

function pollContext(over: Partial<InboxPollContext> = {}): InboxPollContext {
  const credentials = over.credentials ?? CREDS;
  return {
    channel,
    credentials,
    tokens: memoryTokens('linkedin', credentials, []),
    kinds: ['comment'],
    cursor: null,
    since: new Date(Date.now() - 7 * DAY),
    recentPosts: [],
    billedReads: () => {},
    ...over,
  };
}

async function drain(cursor: Record<string, unknown> | null = null, over: Partial<InboxPollContext> = {}) {
  const items: InboxFetched[] = [];
  for (let pages = 1; ; pages++) {
    const page = await inbox().poll(pollContext({ cursor, ...over }));
    items.push(...page.items);
    cursor = page.cursor;
    if (!page.more) return { items, cursor, pages };
    if (pages > 100) throw new Error('the poll never ends');
  }
}

const seed = (text: string, over: Record<string, unknown> = {}) =>
  fake.inbox({ kind: 'comment', text, ...over }).platform_id;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const postOf = (comment: string) => fake.comments.find((c) => c.urn === comment)?.post ?? '';

function replyContext(
  item: InboxReplyContext['item'],
  over: Partial<InboxReplyContext> = {},
): InboxReplyContext {
  const credentials = over.credentials ?? CREDS;
  return {
    channel,
    credentials,
    tokens: memoryTokens('linkedin', credentials, []),
    item,
    text: 'Thank you — we will follow up.',
    idempotencyKey: 'rpl_1',
    attemptStartedAt: new Date(),
    ...over,
  };
}

const itemOf = (comment: string, over: Partial<InboxReplyContext['item']> = {}) => {
  const post = postOf(comment);
  return {
    kind: 'comment' as const,
    platformId: comment,
    inReplyTo: post,
    conversationId: post,
    rootId: post,
    ref: { post },
    author: { handle: 'urn:li:person:x', platform_id: 'urn:li:person:x' },
    ...over,
  };
};

describe('linkedin inbox: poll', () => {
  it('refuses a member account with a non-retryable error, and asks LinkedIn nothing', async () => {
    const member = { ...channel, accountId: 'urn:li:person:abc' };
    const err = await failure(
      inbox().poll(
        pollContext({
          channel: member,
          credentials: { access_token: 'token', account_id: 'urn:li:person:abc' },
        }),
      ),
    );
    expect(err.category).toBe('platform_rejected');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('organization');
    expect(fakes.requests('linkedin')).toHaveLength(0);
  });

  it("backfills the page's posts from `since` with the documented requests, and maps comments and replies", async () => {
    const old = seed('too old', { created_at: ago(8 * DAY) });
    const post = postOf(old);
    const top = seed('When is the next webinar?', {
      parent: post,
      created_at: ago(2 * DAY),
      author: { id: 'mem001' },
    });
    const nested = seed('Same question', { parent: top, created_at: ago(DAY), author: { id: 'mem002' } });
    const other = seed('Congrats!', { parent: 'urn:li:share:7000000000000000042', created_at: ago(DAY) });

    const { items } = await drain();

    expect(items.map((i) => i.platformId).sort()).toEqual([top, nested, other].sort());
    expect(items.find((i) => i.platformId === top)).toEqual({
      kind: 'comment',
      platformId: top,
      text: 'When is the next webinar?',
      url: `https://www.linkedin.com/feed/update/${post}?commentUrn=${encodeURIComponent(top)}`,
      author: {
        handle: 'urn:li:person:mem001',
        name: null,
        avatar_url: null,
        platform_id: 'urn:li:person:mem001',
      },
      inReplyTo: post,
      conversationId: post,
      rootId: post,
      createdAt: new Date(fake.comments.find((c) => c.urn === top)?.createdAt ?? 0).toISOString(),
      ref: { post },
    });
    expect(items.find((i) => i.platformId === nested)).toMatchObject({
      inReplyTo: top,
      rootId: post,
      conversationId: post,
      ref: { post, parent: top },
    });
    const reqs = fakes.requests('linkedin');
    const posts = reqs.find((r) => r.path === '/rest/posts');
    expect(Object.fromEntries(posts?.query ?? [])).toEqual({
      author: ORG,
      q: 'author',
      count: '20',
      sortBy: 'LAST_MODIFIED',
    });
    expect(reqs.find((r) => r.path === '/rest/socialMetadata')?.query.get('ids')).toMatch(/^List\(.+,.+\)$/);
    for (const r of reqs) {
      expect(r.headers['linkedin-version']).toBe(LINKEDIN_VERSION);
      expect(r.headers['x-restli-protocol-version']).toBe('2.0.0');
    }
  });

  it('returns nothing twice across polls; a quiet poll is three calls; a new comment comes once', async () => {
    const first = seed('one', { created_at: ago(60_000) });
    seed('on another post', { parent: 'urn:li:share:7000000000000000099', created_at: ago(60_000) });
    const a = await drain();
    expect(a.items).toHaveLength(2);

    const before = fakes.requests('linkedin').length;
    const quiet = await drain(a.cursor);
    expect(quiet.items).toEqual([]);
    // The posts, their counts, and the post read longest ago.
    expect(fakes.requests('linkedin').length - before).toBe(3);

    const fresh = seed('two', { parent: postOf(first) });
    const b = await drain(quiet.cursor);
    expect(b.items.map((i) => i.platformId)).toEqual([fresh]);
    expect((await drain(b.cursor)).items).toEqual([]);
  });

  it("leaves out the organization's own comments, and reads Herald's recent posts beyond the page's 20", async () => {
    const heraldPost = seed('on the oldest post', { created_at: ago(DAY) });
    const herald = postOf(heraldPost);
    for (let i = 0; i < 22; i++) seed(`post ${i}`, { parent: `urn:li:share:71000000000000000${10 + i}` });
    fake.posts.sort((x, y) => x.createdAt - y.createdAt);
    const top = fake.comments.find((c) => c.urn === heraldPost);
    fake.comments.push({
      urn: `urn:li:comment:(${herald},999)`,
      id: '999',
      post: herald,
      actor: ORG,
      text: 'our own answer',
      createdAt: Date.now(),
      parent: top?.urn ?? '',
    });

    const without = await drain();
    expect(without.items.map((i) => i.platformId)).not.toContain(heraldPost);
    const { items } = await drain(null, { recentPosts: [herald] });
    expect(items.map((i) => i.platformId)).toContain(heraldPost);
    expect(items.some((i) => i.author.platform_id === ORG)).toBe(false);
  });

  it('a new reply under an older comment comes in a later poll, once', async () => {
    const top = seed('An older question', { created_at: ago(2 * DAY) });
    const { cursor } = await drain();
    const reply = seed('An answer to it', { parent: top });

    const next = await drain(cursor);

    expect(next.items.map((i) => i.platformId)).toEqual([reply]);
    expect(next.items[0]).toMatchObject({ inReplyTo: top, rootId: postOf(top) });
    expect((await drain(next.cursor)).items).toEqual([]);
  });

  it('a post deleted since the last round is left out, not retried', async () => {
    const a = seed('on a post that goes', { created_at: ago(60_000) });
    const b = seed('on a post that stays', {
      parent: 'urn:li:share:7000000000000000077',
      created_at: ago(60_000),
    });
    const { cursor } = await drain();
    fake.posts = fake.posts.filter((p) => p.urn !== postOf(a));
    const fresh = seed('new', { parent: postOf(b) });

    const next = await drain(cursor);

    expect(next.items.map((i) => i.platformId)).toEqual([fresh]);
    expect(Object.keys((next.cursor as { posts: object }).posts)).toEqual([postOf(b)]);
  });
});

describe('linkedin inbox: reply and findReply', () => {
  it('answers a comment with a nested comment (parentComment) as the organization', async () => {
    const top = seed('Question');
    const made = await inbox().reply(replyContext(itemOf(top)));
    const call = fakes.requests('linkedin').find((r) => r.method === 'POST');
    expect(call?.path).toBe(`/rest/socialActions/${encodeURIComponent(top)}/comments`);
    expect(call?.json).toEqual({
      actor: ORG,
      object: postOf(top),
      message: { text: 'Thank you — we will follow up.' },
      parentComment: top,
    });
    const stored = fake.comments.find((c) => c.urn === made.externalId);
    expect(stored).toMatchObject({ parent: top, actor: ORG });
    expect(made.url).toBe(
      `https://www.linkedin.com/feed/update/${postOf(top)}?commentUrn=${encodeURIComponent(made.externalId)}`,
    );
  });

  it('answers a nested comment under the same top-level comment', async () => {
    const top = seed('Question');
    const nested = seed('Me too', { parent: top });
    const made = await inbox().reply(
      replyContext(itemOf(nested, { inReplyTo: top, ref: { post: postOf(top), parent: top } })),
    );
    expect(fake.comments.find((c) => c.urn === made.externalId)?.parent).toBe(top);
  });

  it('findReply finds the reply whose answer was lost, once; null when there is none', async () => {
    const top = seed('Question');
    const ctx = replyContext(itemOf(top));
    expect(await inbox().findReply(ctx)).toBeNull();

    fake.loseNextCommentResponse = true;
    const err = await failure(inbox().reply(ctx));
    expect(err.maybeCarriedOut).toBe(true);

    const found = await inbox().findReply(ctx);
    const made = fake.comments.filter((c) => c.parent === top);
    expect(made).toHaveLength(1);
    expect(found?.externalId).toBe(made[0]?.urn);
    expect(await inbox().findReply({ ...ctx, text: 'something else' })).toBeNull();
  });

  it('refuses to answer for a member account, sending nothing', async () => {
    const top = seed('Question');
    const member = { ...channel, accountId: 'urn:li:person:abc' };
    const err = await failure(inbox().reply(replyContext(itemOf(top), { channel: member })));
    expect(err.category).toBe('platform_rejected');
    expect(fakes.requests('linkedin').filter((r) => r.method === 'POST')).toHaveLength(0);
  });
});

describe('linkedin inbox: errors', () => {
  it('429 is rate_limited and retryable', async () => {
    fakes.failDocumented('linkedin', 'throttled');
    const err = await failure(inbox().poll(pollContext()));
    expect(err.category).toBe('rate_limited');
    expect(err.retryable).toBe(true);
  });

  it('a revoked grant is auth_expired', async () => {
    fakes.failDocumented('linkedin', 'revokedToken', 2);
    const err = await failure(inbox().poll(pollContext()));
    expect(err.category).toBe('auth_expired');
  });

  it('an app without r_organization_social (403 ACCESS_DENIED) is platform_rejected', async () => {
    fake.canReadPosts = false;
    const err = await failure(inbox().poll(pollContext()));
    expect(err.category).toBe('platform_rejected');
    expect(err.retryable).toBe(false);
  });
});
