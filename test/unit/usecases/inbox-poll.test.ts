import {
  BatchGetCommand,
  DeleteCommand,
  type DeleteCommandInput,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  type PutCommandInput,
  QueryCommand,
  type QueryCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import { clearPacingCache } from '#adapters/pacing';
import type { Connector, InboxFetched, InboxPage, InboxPollContext } from '#adapters/platforms/types';
import { PlatformError } from '#adapters/platforms/types';
import type { ChannelRecord } from '#core/accounts';
import { BACKFILL_DAYS, type InboxPollRecord, POLL_SLOTS, pollSlotOf } from '#core/inbox';
import type { InboxPollMessage } from '#core/messages';
import type { PostRecord } from '#core/posts';
import { INBOX_DISABLED_ENV, INBOX_RETENTION_ENV } from '#shared/inbox-settings';
import { findInboxPolls, slotAt, spreadDelay } from '#usecases/inbox-poll';
import { MAX_PAGES_PER_POLL, pollChannelInbox } from '#usecases/inbox-poll-worker';
import { inboxEvents, newPostRefs, relayChannelInbox } from '#usecases/support/relay-inbox';
import { channel, channelItem, fixedId, type Item, ORG_ID, OTHER_ORG_ID, post } from '../support/fixtures.ts';

// The inbox poller: the finder sends one slot of the poll index a minute, spread over it; the
// worker reads a channel's pages into items (written once whatever the overlap, then the cursor);
// the relay keeps the poll states, the post refs and the inbox.received event.

const sent = vi.hoisted(() => [] as Array<{ body: InboxPollMessage; delaySeconds: number }>);
vi.mock('#adapters/queues', () => ({
  sendInboxPolls: async (messages: Array<{ body: InboxPollMessage; delaySeconds: number }>) => {
    sent.push(...messages);
  },
}));

const connectors = vi.hoisted(() => new Map<string, Connector>());
vi.mock('#adapters/platforms/index', () => ({
  connectorFor: async (platform: string) => connectors.get(platform) ?? { publish: async () => ({}) },
}));

const ddb = mockClient(DynamoDBDocumentClient);
const NOW = new Date('2030-06-10T09:30:00.000Z');

// ---- a small table: items by key; conditional puts of new items; SET updates applied -------------

const table = new Map<string, Item>();
const keyOf = (k: Record<string, unknown>) => `${String(k.pk)}\u0000${String(k.sk)}`;
let order: string[] = [];

function conditionFailed(): Error {
  return Object.assign(new Error('The conditional request failed'), {
    name: 'ConditionalCheckFailedException',
  });
}

function applySet(item: Item, input: UpdateCommandInput): void {
  const set = /SET (.*)$/.exec(input.UpdateExpression ?? '')?.[1] ?? '';
  for (const part of set.split(', ')) {
    const [lhs, rhs] = part.split(' = ').map((s) => s.trim()) as [string, string];
    const name = lhs.startsWith('#') ? (input.ExpressionAttributeNames?.[lhs] ?? lhs) : lhs;
    item[name] = input.ExpressionAttributeValues?.[rhs];
  }
}

function serveTable() {
  ddb.on(GetCommand).callsFake((input) => ({ Item: table.get(keyOf(input.Key)) }));
  ddb.on(BatchGetCommand).callsFake((input) => {
    const out: Record<string, Item[]> = {};
    for (const [name, req] of Object.entries(input.RequestItems ?? {}) as Array<[string, { Keys: Item[] }]>)
      out[name] = req.Keys.flatMap((k) => (table.has(keyOf(k)) ? [table.get(keyOf(k)) as Item] : []));
    return { Responses: out, UnprocessedKeys: {} };
  });
  ddb.on(PutCommand).callsFake((input: PutCommandInput) => {
    const item = input.Item as Item;
    if (input.ConditionExpression === 'attribute_not_exists(pk)' && table.has(keyOf(item)))
      throw conditionFailed();
    table.set(keyOf(item), { ...item });
    order.push(`put ${String(item.sk)}`);
    return {};
  });
  ddb.on(UpdateCommand).callsFake((input: UpdateCommandInput) => {
    const item = table.get(keyOf(input.Key ?? {}));
    if (!item && input.ConditionExpression?.includes('attribute_exists(pk)')) throw conditionFailed();
    if (item && String(item.sk).startsWith('INBOXPOLL#')) applySet(item, input);
    order.push(`update ${String(input.Key?.sk)}`);
    return {};
  });
  ddb.on(DeleteCommand).callsFake((input: DeleteCommandInput) => {
    table.delete(keyOf(input.Key ?? {}));
    return {};
  });
  ddb.on(QueryCommand).callsFake((input: QueryCommandInput) => ({
    Items: [...table.values()]
      .filter((i) => i.gsi2pk === input.ExpressionAttributeValues?.[':b'])
      .map((i) => ({ pk: i.pk, sk: i.sk, gsi2pk: i.gsi2pk, gsi2sk: i.gsi2sk })),
  }));
}

const ACCOUNT = '109000000000000001';
const CH: ChannelRecord = {
  ...channel(1, 'mastodon'),
  account_id: ACCOUNT,
  granted_scopes: ['read:notifications', 'read:statuses', 'write'],
};

function given(ch: ChannelRecord = CH, poll: Partial<InboxPollRecord> = {}) {
  table.set(keyOf(keys.channel(ch.org_id, ch.id)), channelItem(ch));
  table.set(keyOf(keys.channelCredentials(ch.org_id, ch.id)), {
    ...keys.channelCredentials(ch.org_id, ch.id),
    credentials: { access_token: 'tok', instance: 'https://mastodon.example' },
    version: 1,
  });
  table.set(keyOf(keys.inboxPoll(ch.org_id, ch.id)), {
    ...keys.inboxPoll(ch.org_id, ch.id),
    ...keys.inboxSlot(pollSlotOf(ch.id), ch.org_id, ch.id),
    entity: 'inbox_poll',
    org_id: ch.org_id,
    channel_id: ch.id,
    platform: ch.platform,
    cursor: null,
    last_synced_at: null,
    error: null,
    failures: 0,
    next_poll_at: null,
    created_at: NOW.toISOString(),
    updated_at: NOW.toISOString(),
    ...poll,
  });
}

const pollState = (ch = CH) => table.get(keyOf(keys.inboxPoll(ch.org_id, ch.id))) as Item & InboxPollRecord;
const itemsWritten = () => [...table.values()].filter((i) => i.entity === 'inbox_item');

function fetched(n: number, extra: Partial<InboxFetched> = {}): InboxFetched {
  return {
    kind: 'comment',
    platformId: `1100${n}`,
    text: `comment ${n}`,
    url: `https://mastodon.example/@bob/1100${n}`,
    author: { handle: 'bob@other.example', name: 'Bob', avatar_url: null, platform_id: '2000' },
    inReplyTo: 'root-1',
    conversationId: 'root-1',
    rootId: 'root-1',
    createdAt: '2030-06-10T09:00:00.000Z',
    ...extra,
  };
}

/** A connector whose polls answer `pages` in turn (an Error is thrown), recording each context. */
function inboxConnector(pages: Array<InboxPage | Error>, asked: InboxPollContext[] = []): Connector {
  let i = 0;
  return {
    publish: async () => {
      throw new Error('not used');
    },
    reconcile: async () => null,
    inbox: {
      poll: async (ctx) => {
        asked.push({ ...ctx });
        const page = pages[Math.min(i++, pages.length - 1)] as InboxPage | Error;
        if (page instanceof Error) throw page;
        ctx.billedReads(page.items.length);
        return page;
      },
      reply: async () => {
        throw new Error('not used');
      },
      findReply: async () => null,
    },
  } as Connector;
}

const msg: InboxPollMessage = { org_id: ORG_ID, channel_id: CH.id };

beforeEach(() => {
  ddb.reset();
  table.clear();
  order = [];
  sent.length = 0;
  connectors.clear();
  clearPacingCache();
  delete process.env[INBOX_DISABLED_ENV];
  delete process.env[INBOX_RETENTION_ENV];
  serveTable();
});

describe('the finder', () => {
  it('takes each slot in turn, one per period, and comes back to a slot after POLL_SLOTS periods', () => {
    expect(POLL_SLOTS).toBe(5);
    const base = Date.parse('2030-06-10T09:00:00.000Z');
    const slots = Array.from({ length: 10 }, (_, m) => slotAt(new Date(base + m * 60_000), 60));
    expect(new Set(slots.slice(0, 5)).size).toBe(5);
    expect(slots.slice(5)).toEqual(slots.slice(0, 5));
    // The local stack's faster period rotates through the same slots.
    expect(slotAt(new Date(base + 2_000), 2)).toBe((slotAt(new Date(base), 2) + 1) % 5);
  });

  it('spreads a slot over the period: delays from 0 up to the period, evenly', () => {
    const delays = Array.from({ length: 2000 }, (_, i) => spreadDelay(i, 2000, 60));
    expect(delays[0]).toBe(0);
    expect(Math.max(...delays)).toBe(59);
    expect(delays.filter((d) => d === 30).length).toBeGreaterThanOrEqual(33);
    expect(spreadDelay(0, 1, 60)).toBe(0);
  });

  it('sends one message per channel of the slot whose turn it is, and none of the other slots', async () => {
    const chans = Array.from({ length: 40 }, (_, i) => ({
      ...channel(i + 10, 'mastodon'),
      org_id: i % 2 ? ORG_ID : OTHER_ORG_ID,
    }));
    for (const c of chans) given(c);
    const result = await findInboxPolls(NOW, 60);
    const slot = slotAt(NOW, 60);
    const expected = chans.filter((c) => pollSlotOf(c.id) === slot);
    expect(expected.length).toBeGreaterThan(0);
    expect(result).toEqual({ slot, sent: expected.length });
    expect(sent.map((m) => m.body).sort((a, b) => a.channel_id.localeCompare(b.channel_id))).toEqual(
      expected
        .map((c) => ({ org_id: c.org_id, channel_id: c.id }))
        .sort((a, b) => a.channel_id.localeCompare(b.channel_id)),
    );
    expect(sent.every((m) => m.delaySeconds >= 0 && m.delaySeconds < 60)).toBe(true);
    // Five runs, one per minute, send every channel exactly once.
    sent.length = 0;
    for (let m = 0; m < 5; m++) await findInboxPolls(new Date(NOW.getTime() + m * 60_000), 60);
    expect(sent.map((s) => s.body.channel_id).sort()).toEqual(chans.map((c) => c.id).sort());
  });
});

describe('the worker', () => {
  it('writes a page’s new items (unread, its own dropped, post_id by the refs), then saves the cursor', async () => {
    given();
    const postId = fixedId('post', 7);
    table.set(keyOf(keys.postRef(ORG_ID, CH.id, 'root-1')), {
      ...keys.postRef(ORG_ID, CH.id, 'root-1'),
      post_id: postId,
    });
    const asked: InboxPollContext[] = [];
    const own = fetched(3, {
      author: { handle: 'acme-1', name: null, avatar_url: null, platform_id: ACCOUNT },
    });
    connectors.set(
      'mastodon',
      inboxConnector(
        [
          {
            items: [fetched(1), fetched(2, { rootId: null, inReplyTo: null }), own],
            cursor: { since_id: '11002' },
            more: false,
          },
        ],
        asked,
      ),
    );
    process.env[INBOX_RETENTION_ENV] = '30';

    const out = await pollChannelInbox(msg, NOW);

    expect(out).toMatchObject({ result: 'polled', pages: 1, received: 2, fetched: 3, billedReads: 3 });
    expect(asked[0]?.cursor).toBeNull();
    expect(asked[0]?.since.toISOString()).toBe(
      new Date(NOW.getTime() - BACKFILL_DAYS * 86_400_000).toISOString(),
    );
    expect(asked[0]?.kinds).toEqual(['comment', 'mention', 'message']);
    const items = itemsWritten();
    expect(items.map((i) => i.platform_id).sort()).toEqual(['11001', '11002']);
    const first = items.find((i) => i.platform_id === '11001') as Item;
    expect(first).toMatchObject({
      status: 'unread',
      post_id: postId,
      org_id: ORG_ID,
      channel_id: CH.id,
      replies: [],
    });
    expect(items.find((i) => i.platform_id === '11002')?.post_id).toBeNull();
    expect(first.ttl).toBe(Math.ceil(NOW.getTime() / 1000) + 30 * 86_400);
    expect(pollState()).toMatchObject({
      cursor: { since_id: '11002' },
      last_synced_at: NOW.toISOString(),
      failures: 0,
      error: null,
    });
    // Items first, the cursor after them.
    const cursorAt = order.indexOf(`update ${keys.inboxPoll(ORG_ID, CH.id).sk}`);
    expect(
      order
        .filter((o) => o.startsWith('put ORG') || o.includes('INBOX#'))
        .every((o) => order.indexOf(o) < cursorAt),
    ).toBe(true);
  });

  it('writes an item once whatever the overlap: a second poll of the same page, a duplicated message', async () => {
    given();
    const page: InboxPage = { items: [fetched(1), fetched(2)], cursor: { since_id: '11002' }, more: false };
    connectors.set('mastodon', inboxConnector([page]));
    const a = await Promise.all([pollChannelInbox(msg, NOW), pollChannelInbox(msg, NOW)]);
    const b = await pollChannelInbox(msg, new Date(NOW.getTime() + 300_000));
    expect(itemsWritten()).toHaveLength(2);
    expect(a.reduce((n, r) => n + r.received, 0) + b.received).toBe(2);
  });

  it('reads on while the platform says more, at most MAX_PAGES_PER_POLL pages, then leaves the rest to the next turn', async () => {
    given();
    const pages = Array.from({ length: 8 }, (_, p) => ({
      items: [fetched(p)],
      cursor: { page: p },
      more: true,
    }));
    const asked: InboxPollContext[] = [];
    connectors.set('mastodon', inboxConnector(pages, asked));
    const out = await pollChannelInbox(msg, NOW);
    expect(out.pages).toBe(MAX_PAGES_PER_POLL);
    expect(asked.map((c) => c.cursor)).toEqual([null, { page: 0 }, { page: 1 }, { page: 2 }, { page: 3 }]);
    expect(pollState().cursor).toEqual({ page: MAX_PAGES_PER_POLL - 1 });
  });

  it('a poll that fails mid-page keeps the cursor of the last page written: the next poll loses and doubles nothing', async () => {
    given();
    const p1: InboxPage = { items: [fetched(1)], cursor: { page: 1 }, more: true };
    const p2: InboxPage = { items: [fetched(2)], cursor: { page: 2 }, more: false };
    connectors.set(
      'mastodon',
      inboxConnector([p1, new PlatformError('system', 'mastodon: 500 Internal Server Error')]),
    );
    const failed = await pollChannelInbox(msg, NOW);
    expect(failed).toMatchObject({ result: 'retrying', pages: 1, received: 1 });
    expect(pollState()).toMatchObject({
      cursor: { page: 1 },
      failures: 1,
      error: 'mastodon: 500 Internal Server Error',
    });

    // After the backoff, the next poll starts from page 1's cursor.
    const asked: InboxPollContext[] = [];
    connectors.set('mastodon', inboxConnector([p2], asked));
    const later = new Date(Date.parse(String(pollState().next_poll_at)) + 1000);
    const next = await pollChannelInbox(msg, later);
    expect(asked[0]?.cursor).toEqual({ page: 1 });
    expect(next).toMatchObject({ result: 'polled', received: 1 });
    expect(
      itemsWritten()
        .map((i) => i.platform_id)
        .sort(),
    ).toEqual(['11001', '11002']);
    expect(pollState()).toMatchObject({ failures: 0, error: null, next_poll_at: null });
  });

  it('a rate limit backs off (the platform’s retry-after when longer): no poll meanwhile, nothing written', async () => {
    given();
    connectors.set(
      'mastodon',
      inboxConnector([new PlatformError('rate_limited', 'mastodon: 429', { retryAfterSeconds: 3600 })]),
    );
    const out = await pollChannelInbox(msg, NOW);
    expect(out.result).toBe('retrying');
    expect(Date.parse(String(pollState().next_poll_at))).toBe(NOW.getTime() + 3600_000);
    expect(pollState().cursor).toBeNull();

    const asked: InboxPollContext[] = [];
    connectors.set('mastodon', inboxConnector([{ items: [fetched(1)], cursor: {}, more: false }], asked));
    expect((await pollChannelInbox(msg, new Date(NOW.getTime() + 60_000))).result).toBe('waiting');
    expect(asked).toHaveLength(0);
    expect(itemsWritten()).toHaveLength(0);
  });

  it('a refused grant makes the channel reauth_required, as a delivery’s would', async () => {
    given();
    connectors.set(
      'mastodon',
      inboxConnector([new PlatformError('auth_expired', 'mastodon: The access token was revoked')]),
    );
    const out = await pollChannelInbox(msg, NOW);
    expect(out.result).toBe('reauth_required');
    const channelWrite = ddb
      .commandCalls(UpdateCommand)
      .map((c) => c.args[0].input)
      .find((u) => u.Key?.sk === keys.channel(ORG_ID, CH.id).sk);
    expect(Object.values(channelWrite?.ExpressionAttributeValues ?? {})).toContain('reauth_required');
  });

  it('skips what cannot or need not be polled: waiting for re-authorization, turned off, no grant, paced', async () => {
    const asked: InboxPollContext[] = [];
    connectors.set('mastodon', inboxConnector([{ items: [fetched(1)], cursor: {}, more: false }], asked));
    given({ ...CH, status: 'reauth_required' });
    expect((await pollChannelInbox(msg, NOW)).result).toBe('skipped');
    given(CH);
    process.env[INBOX_DISABLED_ENV] = 'x,mastodon';
    expect((await pollChannelInbox(msg, NOW)).result).toBe('skipped');
    delete process.env[INBOX_DISABLED_ENV];
    given({ ...CH, granted_scopes: ['write'] });
    expect((await pollChannelInbox(msg, NOW)).result).toBe('skipped');
    given({ ...CH, pace_until: new Date(NOW.getTime() + 60_000).toISOString(), pace_reason: 'rate limit' });
    expect((await pollChannelInbox(msg, NOW)).result).toBe('waiting');
    expect(asked).toHaveLength(0);
    // A channel disconnected meanwhile loses its poll state.
    given({ ...CH, status: 'disconnected' });
    expect((await pollChannelInbox(msg, NOW)).result).toBe('skipped');
    expect(pollState()).toBeUndefined();
  });

  it('fails the message on anything but a platform refusal (a bug, DynamoDB): it comes back', async () => {
    given();
    connectors.set('mastodon', inboxConnector([new TypeError('boom')]));
    await expect(pollChannelInbox(msg, NOW)).rejects.toThrow('boom');
    expect(pollState()).toMatchObject({ failures: 0 });
  });
});

describe('the relay', () => {
  it('gives a live channel a poll state in its slot (once), and takes it away on disconnect', async () => {
    const change = { eventId: 'e1', timeMs: NOW.getTime(), old: undefined, new: CH };
    await relayChannelInbox(change, NOW);
    const state = pollState();
    expect(state).toMatchObject({
      cursor: null,
      failures: 0,
      ...keys.inboxSlot(pollSlotOf(CH.id), ORG_ID, CH.id),
    });
    (state as Item).cursor = { since_id: '5' };
    await relayChannelInbox({ ...change, old: CH }, NOW);
    expect(pollState().cursor).toEqual({ since_id: '5' });
    await relayChannelInbox({ ...change, old: CH, new: { ...CH, status: 'disconnected' } }, NOW);
    expect(pollState()).toBeUndefined();
    // Platforms without an inbox get none.
    const tiktok = channel(5, 'tiktok');
    await relayChannelInbox({ ...change, new: tiktok }, NOW);
    expect(pollState(tiktok)).toBeUndefined();
  });

  it('refs each part that gained a platform id (root, thread items, first comment), once', () => {
    const before: PostRecord = post({ id: fixedId('post', 1) });
    const d = {
      channel_id: CH.id,
      stage: 'published' as const,
      external_id: 'root-1',
      url: null,
      error: null,
      error_category: null,
      attempts: 1,
      updated_at: NOW.toISOString(),
      round: 1,
      thread: [{ stage: 'published' as const, external_id: 't-1', url: null, error: null }],
      first_comment: { stage: 'published' as const, external_id: 'c-1', url: null, error: null },
    };
    const after: PostRecord = { ...before, deliveries: { [CH.id]: d } };
    expect(newPostRefs(before, after).map((r) => r.externalId)).toEqual(['root-1', 't-1', 'c-1']);
    expect(newPostRefs(after, after)).toEqual([]);
    expect(newPostRefs(after, after)[0]).toBeUndefined();
    expect(newPostRefs(before, after)[0]).toMatchObject({
      orgId: before.org_id,
      channelId: CH.id,
      postId: before.id,
    });
  });

  it('emits inbox.received for an item’s creation only, with an id derived from the change', () => {
    const item = {
      id: 'inb_1',
      org_id: ORG_ID,
      channel_id: CH.id,
      platform: 'mastodon' as const,
      kind: 'comment' as const,
      status: 'unread' as const,
      text: 'hi',
      url: null,
      author: { handle: 'bob', name: null, avatar_url: null, platform_id: '2' },
      post_id: null,
      in_reply_to: null,
      conversation_id: null,
      platform_id: '1',
      created_at: NOW.toISOString(),
      received_at: NOW.toISOString(),
      replies: [],
      ref: { secret: 'internal' },
      version: 1,
    };
    const change = { eventId: 'ev-1', timeMs: NOW.getTime(), old: undefined, new: item };
    const [ev] = inboxEvents(change);
    expect(ev).toMatchObject({
      type: 'inbox.received',
      org_id: ORG_ID,
      data: { item: { id: 'inb_1', status: 'unread' } },
    });
    expect((ev?.data.item as Item).ref).toBeUndefined();
    expect(inboxEvents(change)[0]?.id).toBe(ev?.id);
    expect(inboxEvents({ ...change, old: item, new: { ...item, status: 'read' as const } })).toEqual([]);
  });
});
