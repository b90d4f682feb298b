import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { InboxPollContext, InboxReplyContext } from '#adapters/platforms/types';
import { untilPacificMidnight } from '#adapters/platforms/youtube/errors';
import { connector } from '#adapters/platforms/youtube/index';
import { FAKE_APPS } from '../../../fakes/oauth.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { createFake, type YouTubeFake } from '../../../fakes/youtube.ts';
import { failure, memoryTokens } from './context.ts';

// The YouTube inbox against the contract fake: commentThreads.list over the channel's videos from
// the newest thread down (backfill from `since`, nothing twice across polls, page tokens, the early
// stop that keeps a quiet channel at one quota unit), the mapping of top-level comments and replies,
// comments.insert under the thread, findReply after a lost answer, and the errors' categories.

let fakes: FakePlatforms;
let fake: YouTubeFake;
const CREDS = { access_token: 'token', refresh_token: 'refresh', account_id: 'UCherald' };
const channel = { id: 'ch_yt', handle: '@herald', platform: 'youtube' as const, accountId: 'UCherald' };
const DAY = 86_400_000;
const inbox = () => {
  if (!connector.inbox) throw new Error('the youtube connector has no inbox');
  return connector.inbox;
};

beforeAll(async () => {
  fakes = await new FakePlatforms([createFake()]).start();
  fake = fakes.fake<YouTubeFake>('youtube');
  process.env.HERALD_PLATFORM_YOUTUBE_URL = fakes.url('youtube');
});
afterAll(async () => {
  delete process.env.HERALD_PLATFORM_YOUTUBE_URL;
  await fakes.stop();
});
beforeEach(() => fakes.reset());

function pollContext(over: Partial<InboxPollContext> = {}): InboxPollContext {
  const credentials = over.credentials ?? CREDS;
  return {
    channel,
    credentials,
    tokens: memoryTokens('youtube', credentials, []),
    kinds: ['comment'],
    cursor: null,
    since: new Date(Date.now() - 7 * DAY),
    recentPosts: [],
    billedReads: () => {},
    ...over,
  };
}

/** Polls page after page from `cursor` until the platform has no more; every item and the last cursor. */
async function drain(cursor: Record<string, unknown> | null = null, since?: Date) {
  const items = [];
  let pages = 0;
  for (;;) {
    const page = await inbox().poll(pollContext({ cursor, ...(since ? { since } : {}) }));
    pages++;
    items.push(...page.items);
    cursor = page.cursor;
    if (!page.more) return { items, cursor, pages };
  }
}

const seed = (text: string, over: Record<string, unknown> = {}) =>
  fake.inbox({ kind: 'comment', text, parent: 'vid1', ...over }).platform_id;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

function replyContext(
  item: InboxReplyContext['item'],
  over: Partial<InboxReplyContext> = {},
): InboxReplyContext {
  const credentials = over.credentials ?? CREDS;
  return {
    channel,
    credentials,
    tokens: memoryTokens('youtube', credentials, []),
    item,
    text: 'Thanks for watching!',
    idempotencyKey: 'rpl_1',
    attemptStartedAt: new Date(),
    ...over,
  };
}

const itemOf = (platformId: string, over: Partial<InboxReplyContext['item']> = {}) => ({
  kind: 'comment' as const,
  platformId,
  inReplyTo: 'vid1',
  conversationId: 'vid1',
  rootId: 'vid1',
  ref: null,
  author: { handle: '@viewer', platform_id: 'UCviewer' },
  ...over,
});

describe('youtube inbox: poll', () => {
  it('backfills from `since` with the documented request, and maps top-level comments and replies', async () => {
    seed('too old', { created_at: ago(8 * DAY) });
    const top = seed('Great video!', {
      created_at: ago(2 * DAY),
      author: { id: 'UCfan0001', name: '@fan' },
    });
    const reply = seed('Agreed', {
      parent: top,
      created_at: ago(DAY),
      author: { id: 'UCfan0002', name: '@two' },
    });

    const page = await inbox().poll(pollContext());

    expect(page.more).toBe(false);
    expect(page.items.map((i) => i.text).sort()).toEqual(['Agreed', 'Great video!']);
    const t = page.items.find((i) => i.platformId === top);
    expect(t).toEqual({
      kind: 'comment',
      platformId: top,
      text: 'Great video!',
      url: `https://www.youtube.com/watch?v=vid1&lc=${top}`,
      author: {
        handle: '@fan',
        name: '@fan',
        avatar_url: 'https://yt3.ggpht.example/UCfan0001=s88',
        platform_id: 'UCfan0001',
      },
      inReplyTo: 'vid1',
      conversationId: 'vid1',
      rootId: 'vid1',
      createdAt: new Date(fake.comments.find((c) => c.id === top)?.publishedAt ?? 0).toISOString(),
      ref: { thread: top, videoId: 'vid1' },
    });
    const r = page.items.find((i) => i.platformId === reply);
    expect(r).toMatchObject({ inReplyTo: top, rootId: 'vid1', conversationId: 'vid1', ref: { thread: top } });
    expect(Date.parse(r?.createdAt ?? '')).toBeLessThan(Date.now() - DAY + 5000);
    const call = fakes.requests('youtube').find((q) => q.path === '/youtube/v3/commentThreads');
    expect(Object.fromEntries(call?.query ?? [])).toEqual({
      part: 'snippet,replies',
      allThreadsRelatedToChannelId: 'UCherald',
      order: 'time',
      maxResults: '100',
      textFormat: 'plainText',
    });
  });

  it('returns nothing twice across polls, and a new comment once — also one made in the same second', async () => {
    const first = seed('one', { created_at: ago(60_000) });
    const a = await drain();
    expect(a.items.map((i) => i.platformId)).toEqual([first]);

    const again = await drain(a.cursor);
    expect(again.items).toEqual([]);

    // Same publishedAt as the cursor's newest: new by its id, not by its time.
    const sameSecond = fake.comments.find((c) => c.id === first)?.publishedAt ?? 0;
    const twin = seed('twin', { created_at: new Date(sameSecond).toISOString() });
    const later = seed('later');
    const b = await drain(again.cursor);
    expect(b.items.map((i) => i.platformId).sort()).toEqual([later, twin].sort());
    expect((await drain(b.cursor)).items).toEqual([]);
  });

  it('pages with YouTube page tokens; quiet with recent threads, a poll costs two quota units', async () => {
    for (let i = 0; i < 150; i++) seed(`comment ${i}`, { created_at: ago(DAY + i * 1000) });

    const first = await inbox().poll(pollContext());
    expect(first.items).toHaveLength(100);
    expect(first.more).toBe(true);
    const second = await inbox().poll(pollContext({ cursor: first.cursor }));
    expect(second.items).toHaveLength(50);
    expect(second.more).toBe(false);
    const tokens = fakes
      .requests('youtube')
      .filter((q) => q.path === '/youtube/v3/commentThreads')
      .map((q) => q.query.get('pageToken'));
    expect(tokens).toEqual([null, expect.any(String)]);
    const ids = new Set([...first.items, ...second.items].map((i) => i.platformId));
    expect(ids.size).toBe(150);

    // Quiet now: the watched threads (the 50 most recently active, by id) and the first page.
    const before = fake.quotaUsed;
    const quiet = await drain(second.cursor);
    expect(quiet.items).toEqual([]);
    expect(fake.quotaUsed - before).toBe(2);
    const byId = fakes.requests('youtube').at(-2);
    expect(byId?.query.get('id')?.split(',')).toHaveLength(50);
  });

  it('a channel with nothing in the backfill window costs one quota unit a poll', async () => {
    seed('long ago', { created_at: ago(30 * DAY) });
    const first = await drain();
    expect(first.items).toEqual([]);
    const before = fake.quotaUsed;
    expect((await drain(first.cursor)).items).toEqual([]);
    expect(fake.quotaUsed - before).toBe(1);
  });

  it('a reply YouTube listed late, older than the cursor, still comes once from its watched thread', async () => {
    const old = seed('An older question', { created_at: ago(3 * DAY) });
    const { cursor: c1 } = await drain();
    // Made before a newer comment elsewhere, but not listed until after the poll that saw that one.
    const lateAt = ago(30_000);
    seed('Elsewhere', { created_at: ago(10_000) });
    const c2 = (await drain(c1)).cursor;
    const late = seed('A late reply', { parent: old, created_at: lateAt });

    const page = await drain(c2);

    expect(page.items.map((i) => i.platformId)).toEqual([late]);
    expect((await drain(page.cursor)).items).toEqual([]);
  });

  it('a new reply under an older thread is found through the watched threads', async () => {
    const old = seed('An older question', { created_at: ago(3 * DAY) });
    for (let i = 0; i < 10; i++) seed(`newer ${i}`, { created_at: ago(2 * DAY - i * 1000) });
    const { cursor } = await drain();
    // YouTube lists threads by their top-level comment: the reply does not bring the thread up.
    const reply = seed('An answer to it', { parent: old });

    const page = await inbox().poll(pollContext({ cursor }));

    expect(page.items.map((i) => i.platformId)).toEqual([reply]);
    expect(page.items[0]).toMatchObject({ inReplyTo: old, rootId: 'vid1' });
    expect((await drain(page.cursor)).items).toEqual([]);
  });

  it('stops at the first thread older than the cursor: one new comment over 250 old ones reads one page', async () => {
    for (let i = 0; i < 250; i++) seed(`old ${i}`, { created_at: ago(2 * DAY + i * 1000) });
    const { cursor } = await drain();
    const fresh = seed('new one');
    const calls = fakes.requests('youtube').length;

    const page = await inbox().poll(pollContext({ cursor }));

    expect(page.items.map((i) => i.platformId)).toEqual([fresh]);
    expect(page.more).toBe(false);
    // The watched threads by id, then one page of the newest threads.
    const made = fakes.requests('youtube').slice(calls);
    expect(
      made.map((q) => (q.query.has('id') ? 'id' : q.query.get('pageToken') ? 'page 2+' : 'page 1')),
    ).toEqual(['id', 'page 1']);
  });

  it("leaves out the channel's own comments and reads every reply of a thread that lists only some", async () => {
    const top = seed('Question?', { created_at: ago(DAY) });
    seed('our answer', {
      parent: top,
      author: { id: 'UCherald', name: '@herald' },
      created_at: ago(DAY - 1000),
    });
    const replies = [];
    for (let i = 0; i < 7; i++)
      replies.push(seed(`reply ${i}`, { parent: top, created_at: ago(DAY - 2000 - i * 1000) }));

    const { items } = await drain();

    expect(items.map((i) => i.platformId).sort()).toEqual([top, ...replies].sort());
    expect(items.some((i) => i.author.platform_id === 'UCherald')).toBe(false);
    const list = fakes.requests('youtube').find((q) => q.path === '/youtube/v3/comments');
    expect(list?.query.get('parentId')).toBe(top);
  });
});

describe('youtube inbox: reply and findReply', () => {
  it('answers a top-level comment under its thread (comments.insert, snippet.parentId)', async () => {
    const top = seed('Nice');
    const made = await inbox().reply(replyContext(itemOf(top)));
    const call = fakes
      .requests('youtube')
      .find((q) => q.method === 'POST' && q.path === '/youtube/v3/comments');
    expect(call?.query.get('part')).toBe('snippet');
    expect(call?.json).toEqual({ snippet: { parentId: top, textOriginal: 'Thanks for watching!' } });
    const stored = fake.comments.find((c) => c.id === made.externalId);
    expect(stored).toMatchObject({
      parentId: top,
      authorChannelId: 'UCherald',
      text: 'Thanks for watching!',
    });
    expect(made.url).toBe(`https://www.youtube.com/watch?v=vid1&lc=${made.externalId}`);
  });

  it('answers a reply under the same thread (YouTube replies are one level deep)', async () => {
    const top = seed('Nice');
    const reply = seed('Indeed', { parent: top });
    await inbox().reply(
      replyContext(itemOf(reply, { inReplyTo: top, ref: { thread: top, videoId: 'vid1' } })),
    );
    const call = fakes
      .requests('youtube')
      .find((q) => q.method === 'POST' && q.path === '/youtube/v3/comments');
    expect(call?.json).toEqual({ snippet: { parentId: top, textOriginal: 'Thanks for watching!' } });
  });

  it('findReply finds the reply whose answer was lost, once; null when there is none', async () => {
    const top = seed('Nice');
    const ctx = replyContext(itemOf(top));
    expect(await inbox().findReply(ctx)).toBeNull();

    fake.loseNextReplyResponse = true;
    const err = await failure(inbox().reply(ctx));
    expect(err.maybeCarriedOut).toBe(true);

    const found = await inbox().findReply(ctx);
    const made = fake.comments.filter((c) => c.parentId === top);
    expect(made).toHaveLength(1);
    expect(found?.externalId).toBe(made[0]?.id);
    // Someone else's reply with the same text is not ours.
    expect(await inbox().findReply({ ...ctx, text: 'another text' })).toBeNull();
  });

  it('a comment that is gone (404 parentCommentNotFound) is user_content; nothing is made', async () => {
    const err = await failure(inbox().reply(replyContext(itemOf('UgyMissing'))));
    expect(err.category).toBe('user_content');
    expect(err.message).toContain('parentCommentNotFound');
    expect(fake.comments).toHaveLength(0);
  });
});

describe('youtube inbox: errors', () => {
  it('the daily quota (403 quotaExceeded) is rate_limited for the whole app until midnight Pacific', async () => {
    fakes.failDocumented('youtube', 'quotaExceeded');
    const err = await failure(inbox().poll(pollContext()));
    expect(err.category).toBe('rate_limited');
    expect(err.opts.scope).toBe('app');
    const wait = err.opts.retryAfterSeconds ?? 0;
    expect(Math.abs(wait - untilPacificMidnight())).toBeLessThanOrEqual(2);
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(86_400);
  });

  it('the quota resets at midnight on the Pacific calendar, summer time included', () => {
    expect(untilPacificMidnight(new Date('2026-12-02T08:00:00Z'))).toBe(86_400);
    expect(untilPacificMidnight(new Date('2026-12-03T07:00:00Z'))).toBe(3600);
    expect(untilPacificMidnight(new Date('2026-07-01T06:59:59Z'))).toBe(1);
  });

  it('429 rateLimitExceeded is rate_limited and retryable', async () => {
    fakes.failDocumented('youtube', 'throttled');
    const err = await failure(inbox().poll(pollContext()));
    expect(err.category).toBe('rate_limited');
    expect(err.retryable).toBe(true);
  });

  it('a revoked grant is auth_expired (the channel goes reauth_required)', async () => {
    fakes.failDocumented('youtube', 'revokedToken', 2);
    const err = await failure(
      inbox().poll(pollContext({ credentials: { access_token: 'token', account_id: 'UCherald' } })),
    );
    expect(err.category).toBe('auth_expired');
  });

  it('a grant without youtube.force-ssl cannot reply (403 insufficientPermissions → platform_rejected)', async () => {
    const top = seed('Nice');
    const app = FAKE_APPS.youtube;
    const redirect = 'https://api.example.com/oauth/callback/youtube';
    const q = new URLSearchParams({
      response_type: 'code',
      client_id: app.clientId,
      redirect_uri: redirect,
      scope: 'https://www.googleapis.com/auth/youtube.readonly',
      state: 's',
    });
    const consent = await fetch(`${fakes.url('youtube')}/o/oauth2/v2/auth?${q}`, { redirect: 'manual' });
    const code = new URL(consent.headers.get('location') ?? '').searchParams.get('code') ?? '';
    const res = await fetch(`${fakes.url('youtube')}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirect,
        client_id: app.clientId,
        client_secret: app.clientSecret,
      }),
    });
    const token = ((await res.json()) as { access_token: string }).access_token;
    const err = await failure(
      inbox().reply(
        replyContext(itemOf(top), { credentials: { access_token: token, account_id: 'UCherald' } }),
      ),
    );
    expect(err.category).toBe('platform_rejected');
    expect(err.message).toContain('insufficientPermissions');
    expect(fake.comments.filter((c) => c.parentId)).toHaveLength(0);
  });
});
