import { beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import { type InboxItem, type InboxItemRecord, inboxItemId } from '#core/inbox';
import { handler as getChannel } from '#handlers/get-channel';
import { handler as getItem } from '#handlers/get-inbox-item';
import { handler as listChannels } from '#handlers/list-channels';
import { handler as listInbox } from '#handlers/list-inbox';
import { handler as updateItem } from '#handlers/update-inbox-item';
import { INBOX_DISABLED_ENV } from '#shared/inbox-settings';
import { useWorld } from '../faults/support/world.ts';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  bearer,
  channel,
  channelItem,
  fixedId,
  inboxComment,
  inboxItemItem,
  jsonHeaders,
  jsonOf,
  lambdaContext,
  ORG_ID,
  OTHER_ORG_ID,
  org,
  orgItem,
  problemOf,
} from '../support/fixtures.ts';

// The inbox's read and mark operations through their real handlers (scope, plan feature,
// validation, tenancy) over the in-memory table behind the production client, which evaluates key
// conditions, filters, Limit, conditions and updates as DynamoDB does, and injects faults.

const { table } = useWorld({ platforms: false });
const KEY = apiKey({ scopes: ['inbox:read', 'inbox:write', 'channels:read'] });
const READ_ONLY = apiKey({ scopes: ['inbox:read'], n: 2 });
const NO_INBOX = apiKey({ scopes: ['posts:read', 'posts:write', 'channels:read'], n: 3 });
const FREE_ORG = fixedId('org', 3);
const FREE = apiKey({ scopes: ['inbox:read', 'inbox:write'], n: 4, orgId: FREE_ORG });
const CH1 = fixedId('channel', 1);
const CH2 = fixedId('channel', 2);
const POST = fixedId('post', 1);

type List = { data: InboxItem[]; has_more: boolean; next_cursor: string | null };

/** Items 1..n of the org, created a minute apart (item n newest), with the ids the poller gives them. */
function items(n: number, shape: (i: number) => Partial<InboxItemRecord> = () => ({})): InboxItemRecord[] {
  return Array.from({ length: n }, (_, k) => {
    const i = k + 1;
    const at = new Date(Date.UTC(2030, 0, 1, 0, i)).toISOString();
    const platformId = `at://did:plc:someone/app.bsky.feed.post/${i}`;
    return inboxComment({
      id: inboxItemId(CH1, platformId, at),
      platform_id: platformId,
      created_at: at,
      received_at: at,
      ...shape(i),
    });
  });
}

function seed(records: InboxItemRecord[]) {
  table.seed(
    apiKeyItem(KEY),
    apiKeyItem(READ_ONLY),
    apiKeyItem(NO_INBOX),
    apiKeyItem(FREE),
    orgItem(org()),
    orgItem(org({}, OTHER_ORG_ID)),
    orgItem({ ...org({}, FREE_ORG), plan: 'free' }),
    ...records.map(inboxItemItem),
  );
}

const list = (query: Record<string, string> = {}, key = KEY) =>
  listInbox(apiEvent('listInbox', { headers: bearer(key), query }), lambdaContext('listInbox'));
const get = (id: string, key = KEY) =>
  getItem(
    apiEvent('getInboxItem', { headers: bearer(key), pathParameters: { id } }),
    lambdaContext('getInboxItem'),
  );
const patch = (id: string, body: unknown, key = KEY, headers: Record<string, string> = {}) =>
  updateItem(
    apiEvent('updateInboxItem', {
      headers: { ...jsonHeaders(key), ...headers },
      pathParameters: { id },
      body: JSON.stringify(body),
    }),
    lambdaContext('updateInboxItem'),
  );
const stored = (r: InboxItemRecord) =>
  table.get<InboxItemRecord & Record<string, unknown>>(keys.inboxItem(r.org_id, r.id));

beforeEach(() => vi.unstubAllEnvs());

describe('listInbox', () => {
  it('lists every status newest first, as the API item (no internal fields), in pages that join up', async () => {
    const all = items(5);
    seed(all);
    const first = await list({ limit: '2' });
    expect(first.statusCode).toBe(200);
    const p1 = jsonOf<List>(first);
    expect(p1.data.map((i) => i.id)).toEqual([all[4]?.id, all[3]?.id]);
    expect(p1.has_more).toBe(true);
    expect(p1.data[0]).not.toHaveProperty('org_id');
    expect(p1.data[0]).not.toHaveProperty('ref');
    const p2 = jsonOf<List>(await list({ limit: '2', after: p1.next_cursor as string }));
    const p3 = jsonOf<List>(await list({ limit: '2', after: p2.next_cursor as string }));
    expect([...p1.data, ...p2.data, ...p3.data].map((i) => i.id)).toEqual(all.map((i) => i.id).reverse());
    expect(p3).toMatchObject({ has_more: false, next_cursor: null });
  });

  it('filters by status, kind, channel and post, alone and together', async () => {
    const all = items(8, (i) => ({
      status: i % 2 ? 'unread' : 'read',
      kind: i <= 4 ? 'comment' : 'message',
      channel_id: i % 3 ? CH1 : CH2,
      post_id: i === 2 ? POST : null,
    }));
    seed([...all, inboxComment({ id: fixedId('inbox', 99), org_id: OTHER_ORG_ID })]);
    const ids = async (q: Record<string, string>) => jsonOf<List>(await list(q)).data.map((i) => i.id);
    const expected = (pick: (r: InboxItemRecord) => boolean) =>
      all
        .filter(pick)
        .map((r) => r.id)
        .reverse();
    expect(await ids({})).toEqual(expected(() => true));
    expect(await ids({ status: 'unread' })).toEqual(expected((r) => r.status === 'unread'));
    expect(await ids({ kind: 'message' })).toEqual(expected((r) => r.kind === 'message'));
    expect(await ids({ channel_id: CH2 })).toEqual(expected((r) => r.channel_id === CH2));
    expect(await ids({ post_id: POST })).toEqual(expected((r) => r.post_id === POST));
    expect(await ids({ status: 'read', kind: 'comment', channel_id: CH1 })).toEqual(
      expected((r) => r.status === 'read' && r.kind === 'comment' && r.channel_id === CH1),
    );
    expect(await ids({ status: 'archived' })).toEqual([]);
  });

  it('pages a filtered list without losing or repeating an item', async () => {
    const all = items(9, (i) => ({ kind: i % 3 === 0 ? 'mention' : 'comment' }));
    seed(all);
    const seen: string[] = [];
    let after: string | undefined;
    for (let n = 0; n < 5; n++) {
      const page = jsonOf<List>(await list({ kind: 'comment', limit: '2', ...(after ? { after } : {}) }));
      seen.push(...page.data.map((i) => i.id));
      if (!page.has_more) break;
      after = page.next_cursor as string;
    }
    expect(seen).toEqual(
      all
        .filter((r) => r.kind === 'comment')
        .map((r) => r.id)
        .reverse(),
    );
  });

  it('refuses a cursor of another filter, and bad filters at their pointers, reading no item', async () => {
    seed(items(3));
    const cursor = jsonOf<List>(await list({ limit: '1' })).next_cursor as string;
    const other = await list({ limit: '1', status: 'unread', after: cursor });
    expect(other.statusCode).toBe(400);
    expect(problemOf(other).code).toBe('invalid_request');
    table.calls.length = 0;
    for (const [query, pointer] of [
      [{ status: 'deleted' }, '/query/status'],
      [{ kind: 'dm' }, '/query/kind'],
      [{ channel_id: 'ch_nope' }, '/query/channel_id'],
      [{ post_id: fixedId('channel', 1) }, '/query/post_id'],
      [{ limit: '0' }, '/query/limit'],
      [{ author: 'x' }, '/query/author'],
    ] as const) {
      const res = await list(query);
      expect(res.statusCode, JSON.stringify(query)).toBe(400);
      expect(problemOf(res)).toMatchObject({
        code: 'validation_failed',
        errors: [expect.objectContaining({ pointer })],
      });
    }
    expect(table.callsOf('Query')).toEqual([]);
  });

  it('needs inbox:read (403 insufficient_scope) and a plan with the inbox (403 feature_not_enabled)', async () => {
    seed(items(1));
    const scope = await list({}, NO_INBOX);
    expect(scope.statusCode).toBe(403);
    expect(problemOf(scope).code).toBe('insufficient_scope');
    const free = await list({}, FREE);
    expect(free.statusCode).toBe(403);
    expect(problemOf(free).code).toBe('feature_not_enabled');
  });
});

describe('getInboxItem', () => {
  it('answers the item and its ETag ("1" until something writes it)', async () => {
    const [item] = items(1) as [InboxItemRecord];
    seed([item]);
    const res = await get(item.id);
    expect(res.statusCode).toBe(200);
    expect(res.headers?.etag).toBe('"1"');
    expect(jsonOf<InboxItem>(res)).toMatchObject({ id: item.id, status: 'unread', replies: [] });
  });

  it("answers 404 for another organization's item and for malformed ids (those before any read)", async () => {
    const theirs = inboxComment({ id: fixedId('inbox', 7), org_id: OTHER_ORG_ID });
    seed([theirs]);
    const foreign = await get(theirs.id);
    expect(foreign.statusCode).toBe(404);
    expect(problemOf(foreign).code).toBe('resource_not_found');
    table.calls.length = 0;
    for (const bad of ['inb_nope', fixedId('post', 1), `${theirs.id} `, 'inb_01JD00000000000000000000I0']) {
      const res = await get(bad);
      expect(res.statusCode, bad).toBe(404);
    }
    expect(table.callsOf('GetItem').filter((c) => String(c.view.keys[0]?.sk).startsWith('INBOX#'))).toEqual(
      [],
    );
  });
});

describe('updateInboxItem', () => {
  it('moves unread → read → archived: the status filter follows, the version and ETag move once per change', async () => {
    const [item] = items(1) as [InboxItemRecord];
    seed([item]);
    const read = await patch(item.id, { status: 'read' });
    expect(read.statusCode).toBe(200);
    expect(read.headers?.etag).toBe('"2"');
    expect(jsonOf<InboxItem>(read).status).toBe('read');
    expect(stored(item)).toMatchObject({ status: 'read', gsi1pk: `ORG#${ORG_ID}#INBOX#read`, version: 2 });
    expect(jsonOf<List>(await list({ status: 'unread' })).data).toEqual([]);
    expect(jsonOf<List>(await list({ status: 'read' })).data.map((i) => i.id)).toEqual([item.id]);

    const archived = await patch(item.id, { status: 'archived' }, KEY, { 'if-match': '"2"' });
    expect(archived.statusCode).toBe(200);
    expect(archived.headers?.etag).toBe('"3"');
    expect(jsonOf<List>(await list({ status: 'archived' })).data.map((i) => i.id)).toEqual([item.id]);
    expect(jsonOf<List>(await list({ status: 'read' })).data).toEqual([]);
  });

  it('the same status again writes nothing and answers the item as it is', async () => {
    const [item] = items(1, () => ({ status: 'read', version: 5 })) as [InboxItemRecord];
    seed([item]);
    table.calls.length = 0;
    const res = await patch(item.id, { status: 'read' });
    expect(res.statusCode).toBe(200);
    expect(res.headers?.etag).toBe('"5"');
    expect(
      table.callsOf('UpdateItem').filter((c) => String(c.view.keys[0]?.sk).startsWith('INBOX#')),
    ).toEqual([]);
  });

  it('refuses a stale If-Match with 412 and its current ETag, changing nothing', async () => {
    const [item] = items(1, () => ({ version: 3 })) as [InboxItemRecord];
    seed([item]);
    const res = await patch(item.id, { status: 'archived' }, KEY, { 'if-match': '"2"' });
    expect(res.statusCode).toBe(412);
    expect(res.headers?.etag).toBe('"3"');
    expect(problemOf(res).code).toBe('precondition_failed');
    expect(stored(item)).toMatchObject({ status: 'unread', version: 3 });
  });

  it('a reply written between its read and its write is kept: the write is refused, read again and made', async () => {
    const [item] = items(1) as [InboxItemRecord];
    seed([item]);
    const reply = {
      id: fixedId('reply', 1),
      text: 'Thanks!',
      stage: 'queued',
      external_id: null,
      url: null,
      error: null,
      created_at: item.created_at,
    };
    table.interpose(
      (req) => req.op === 'UpdateItem' && String(req.keys[0]?.sk).startsWith('INBOX#'),
      () => table.seed({ ...stored(item), replies: [reply], version: 2 }),
      1,
    );
    const res = await patch(item.id, { status: 'read' });
    expect(res.statusCode).toBe(200);
    expect(res.headers?.etag).toBe('"3"');
    expect(stored(item)).toMatchObject({ status: 'read', version: 3, replies: [reply] });
  });

  it('an answer lost after the write applied: the SDK retry finds it done, one version step, 200', async () => {
    const [item] = items(1) as [InboxItemRecord];
    seed([item]);
    table.fail({
      op: 'UpdateItem',
      kind: 'ECONNRESET',
      when: 'after',
      match: (req) => String(req.keys[0]?.sk).startsWith('INBOX#'),
    });
    const res = await patch(item.id, { status: 'archived' });
    expect(res.statusCode).toBe(200);
    expect(jsonOf<InboxItem>(res).status).toBe('archived');
    expect(stored(item)).toMatchObject({ status: 'archived', version: 2 });
  });

  it('refuses bad bodies at their pointers, a key without inbox:write, the free plan, and other orgs, changing nothing', async () => {
    const [item] = items(1) as [InboxItemRecord];
    const theirs = inboxComment({ id: fixedId('inbox', 8), org_id: OTHER_ORG_ID });
    seed([item, theirs]);
    const before = [stored(item), stored(theirs)];
    for (const [body, pointer, code] of [
      [{ status: 'deleted' }, '/status', 'invalid_value'],
      [{}, '/status', 'invalid_value'],
      [{ status: 'read', text: 'x' }, '/text', 'unknown_field'],
      [{ status: 1 }, '/status', 'invalid_value'],
    ] as const) {
      const res = await patch(item.id, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(problemOf(res).errors).toEqual(
        expect.arrayContaining([expect.objectContaining({ pointer, code })]),
      );
    }
    const scope = await patch(item.id, { status: 'read' }, READ_ONLY);
    expect([scope.statusCode, problemOf(scope).code]).toEqual([403, 'insufficient_scope']);
    const free = await patch(item.id, { status: 'read' }, FREE);
    expect([free.statusCode, problemOf(free).code]).toEqual([403, 'feature_not_enabled']);
    const foreign = await patch(theirs.id, { status: 'read' });
    expect([foreign.statusCode, problemOf(foreign).code]).toEqual([404, 'resource_not_found']);
    const malformed = await patch('inb_x', { status: 'read' });
    expect(malformed.statusCode).toBe(404);
    expect([stored(item), stored(theirs)]).toEqual(before);
  });
});

describe("the channel's inbox", () => {
  const seedChannels = () => {
    table.seed(
      apiKeyItem(KEY),
      orgItem(org()),
      channelItem(channel(1, 'bluesky')),
      channelItem({ ...channel(2, 'mastodon'), granted_scopes: ['write:statuses'] }),
      // Mastodon's top-level `read` covers read:notifications and read:statuses.
      channelItem({ ...channel(3, 'mastodon'), granted_scopes: ['read', 'write'] }),
      channelItem(channel(4, 'tiktok')),
      channelItem({ ...channel(5, 'linkedin'), account_id: 'urn:li:person:abc' }),
      {
        ...keys.inboxPoll(ORG_ID, fixedId('channel', 1)),
        entity: 'inbox_poll',
        org_id: ORG_ID,
        channel_id: fixedId('channel', 1),
        platform: 'bluesky',
        cursor: null,
        last_synced_at: '2030-01-01T00:05:00.000Z',
        error: null,
        failures: 0,
        next_poll_at: null,
        created_at: '2030-01-01T00:00:00.000Z',
        updated_at: '2030-01-01T00:05:00.000Z',
      },
    );
  };
  type Channel = { id: string; inbox: Record<string, unknown> };

  it('says on listChannels what each channel reads, when it last did, and how to fix what it cannot', async () => {
    seedChannels();
    const res = await listChannels(
      apiEvent('listChannels', { headers: bearer(KEY) }),
      lambdaContext('listChannels'),
    );
    expect(res.statusCode).toBe(200);
    const byId = new Map(jsonOf<{ data: Channel[] }>(res).data.map((c) => [c.id, c.inbox]));
    expect(byId.get(fixedId('channel', 1))).toEqual({
      available: true,
      kinds: ['comment', 'mention'],
      last_synced_at: '2030-01-01T00:05:00.000Z',
      error: null,
    });
    expect(byId.get(fixedId('channel', 2))).toMatchObject({ available: false, kinds: [] });
    expect(String(byId.get(fixedId('channel', 2))?.error)).toContain('reconnect');
    expect(byId.get(fixedId('channel', 3))).toMatchObject({
      available: true,
      kinds: ['comment', 'mention', 'message'],
      last_synced_at: null,
    });
    expect(byId.get(fixedId('channel', 4))).toMatchObject({ available: false, kinds: [] });
    expect(String(byId.get(fixedId('channel', 4))?.error)).toContain('TikTok');
    expect(String(byId.get(fixedId('channel', 5))?.error)).toContain('organization page');
    // The poll states are one Query of their own, beside the channels'.
    expect(table.callsOf('Query')).toHaveLength(2);
  });

  it('says the same on getChannel, and that the operator turned a platform off', async () => {
    seedChannels();
    const one = async () =>
      jsonOf<Channel>(
        await getChannel(
          apiEvent('getChannel', { headers: bearer(KEY), pathParameters: { id: fixedId('channel', 1) } }),
          lambdaContext('getChannel'),
        ),
      ).inbox;
    expect(await one()).toMatchObject({ available: true, last_synced_at: '2030-01-01T00:05:00.000Z' });
    vi.stubEnv(INBOX_DISABLED_ENV, 'x,bluesky');
    expect(await one()).toMatchObject({
      available: false,
      kinds: [],
      error: expect.stringContaining('turned'),
    });
  });
});
