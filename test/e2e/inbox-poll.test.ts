import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  api,
  baseUrl,
  dangerous,
  stackInfo,
  type Workspace,
  waitForPost,
  webhookReceiver,
  workspace,
} from './helpers.ts';

// The inbox poller end to end, against the local stack and the Mastodon contract fake: the finder
// and the worker on their local schedule, and polls sent straight to the inboxPoll queue (as the
// finder sends them, duplicates included) where a test needs one now. Each test connects its own
// Mastodon account (an OAuth grant with read:notifications) so the fake's shared inbox does not mix
// tests. Items are read from the table: the poller is what is under test here, not the inbox API.

type Json = Record<string, unknown>;
const fakes = () => inject('fakesOrigin');
const LANDING = 'http://127.0.0.1:9/connected';

const info = JSON.parse(readFileSync(join(inject('dataDir'), 'stack.json'), 'utf8')) as {
  dynamodbEndpoint: string;
  dynamodbCredentials: { accessKeyId: string; secretAccessKey: string };
  tableName: string;
  sqsEndpoint: string;
  queues: Record<string, { url: string }>;
};
const doc = DynamoDBDocumentClient.from(
  new DynamoDBClient({
    endpoint: info.dynamodbEndpoint,
    region: 'us-east-1',
    credentials: info.dynamodbCredentials,
  }),
);
const sqs = new SQSClient({
  endpoint: stackInfo().sqsEndpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
  useQueueUrlAsEndpoint: false,
});
afterAll(() => {
  doc.destroy();
  sqs.destroy();
});

let ws: Workspace;
let seq = 0;

beforeAll(async () => {
  ws = await workspace([]);
}, 90_000);

// A test's channels are disconnected after it: the finder polls every connected channel, and a
// failure injected into the shared fake must meet the channel it is meant for.
const connected: string[] = [];
afterEach(async () => {
  for (const id of connected.splice(0)) await api('DELETE', `/v1/channels/${id}`, { key: ws.key });
});

/** Makes the fake answer the next matching request with this failure (path and query string). */
async function failNext(f: {
  status: number;
  path: string;
  query?: string;
  headers?: Record<string, string>;
}) {
  const res = await fetch(`${fakes()}/__fakes/mastodon/fail`, {
    method: 'POST',
    body: JSON.stringify({
      status: f.status,
      body: { error: f.status === 429 ? 'Too many requests' : 'Internal server error' },
      headers: f.headers ?? {},
      pathPattern: f.path,
      ...(f.query ? { queryIncludes: f.query } : {}),
      times: 1,
    }),
  });
  expect(res.status).toBe(204);
}

const newUser = () => `inbox${Date.now().toString(36)}${++seq}`;

/** A Mastodon account of its own, connected through OAuth (so its grant carries the inbox's scopes). */
async function connectMastodon(user = newUser()): Promise<{ channelId: string; user: string }> {
  const created = await api<{ id: string; authorize_url: string }>('POST', '/v1/channel-connections', {
    key: ws.key,
    body: { platform: 'mastodon', redirect_uri: LANDING, instance: `${fakes()}/mastodon` },
  });
  expect(created.status, created.text).toBe(201);
  const authorize = new URL(created.body.authorize_url);
  authorize.searchParams.set('fake_user', user);
  const consent = await fetch(authorize, { redirect: 'manual' });
  expect(consent.status, await consent.text()).toBe(302);
  const back = new URL(String(consent.headers.get('location')));
  expect(back.origin).toBe(baseUrl());
  const landed = await fetch(back, { redirect: 'manual' });
  expect(landed.status, await landed.text()).toBe(303);
  const session = await api<{ status: string; channel_id: string }>(
    'GET',
    `/v1/channel-connections/${created.body.id}`,
    { key: ws.key },
  );
  expect(session.body.status, session.text).toBe('connected');
  connected.push(session.body.channel_id);
  return { channelId: session.body.channel_id, user };
}

async function seed(user: string, s: Json): Promise<string> {
  const res = await fetch(`${fakes()}/__fakes/mastodon/inbox`, {
    method: 'POST',
    body: JSON.stringify({ to: user, ...s }),
  });
  const text = await res.text();
  expect(res.status, text).toBe(201);
  return (JSON.parse(text) as { platform_id: string }).platform_id;
}

/** One poll message, as the finder sends it (twice: a duplicate). */
async function poll(channelId: string, times = 1): Promise<void> {
  await Promise.all(
    Array.from({ length: times }, () =>
      sqs.send(
        new SendMessageCommand({
          QueueUrl: info.queues.inboxPoll?.url,
          MessageBody: JSON.stringify({ org_id: ws.orgId, channel_id: channelId }),
        }),
      ),
    ),
  );
}

/** The channel's inbox items as stored. */
async function items(channelId: string): Promise<Json[]> {
  const res = await doc.send(
    new QueryCommand({
      TableName: info.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
      ExpressionAttributeValues: { ':pk': `ORG#${ws.orgId}`, ':sk': 'INBOX#' },
      ConsistentRead: true,
    }),
  );
  return (res.Items ?? []).filter((i) => i.channel_id === channelId);
}

async function pollState(channelId: string): Promise<Json | undefined> {
  const res = await doc.send(
    new GetCommand({
      TableName: info.tableName,
      Key: { pk: `ORG#${ws.orgId}`, sk: `INBOXPOLL#${channelId}` },
      ConsistentRead: true,
    }),
  );
  return res.Item;
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 45_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

const daysAgo = (d: number) => new Date(Date.now() - d * 86_400_000).toISOString();
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('polling a Mastodon channel', () => {
  it('gives a connected channel a poll state, and backfills 7 days: comments, mentions and messages become items, once', async () => {
    const { channelId, user } = await connectMastodon();
    const receiver = await webhookReceiver();
    const ep = await api('POST', '/v1/webhook-endpoints', {
      key: ws.key,
      body: { url: receiver.url, event_types: ['inbox.received'], description: 'inbox' },
    });
    expect(ep.status, ep.text).toBe(201);
    await until('the poll state', async () => ((await pollState(channelId)) ? true : undefined));

    const tag = `bf-${Date.now()}`;
    const old = await seed(user, { kind: 'mention', text: `${tag} eight days`, created_at: daysAgo(8) });
    const recent = await seed(user, { kind: 'mention', text: `${tag} six days`, created_at: daysAgo(6) });
    const dm = await seed(user, { kind: 'message', text: `${tag} a message` });
    const mention = await seed(user, { kind: 'mention', text: `${tag} now` });

    await poll(channelId, 2);
    const got = await until('the items', async () => {
      const list = await items(channelId);
      return list.length >= 3 ? list : undefined;
    });
    expect(got.map((i) => i.platform_id).sort()).toEqual([recent, dm, mention].sort());
    expect(got.map((i) => i.platform_id)).not.toContain(old);
    const byId = Object.fromEntries(got.map((i) => [i.platform_id as string, i]));
    expect(byId[dm]).toMatchObject({ kind: 'message', status: 'unread', post_id: null });
    expect(byId[mention]).toMatchObject({ kind: 'mention', status: 'unread' });
    expect(String(byId[mention]?.text)).toContain(`${tag} now`);
    expect(Number(byId[mention]?.ttl)).toBeGreaterThan(Date.now() / 1000 + 89 * 86_400);

    // Overlapping polls (duplicated messages, the finder's own turn) write no second item and
    // send no second event.
    await poll(channelId, 3);
    await settle(12_000);
    expect(await items(channelId)).toHaveLength(3);
    await until('the events', async () => (receiver.ofType('inbox.received').length >= 3 ? true : undefined));
    await settle(2_000);
    const events = receiver.ofType('inbox.received').map((r) => JSON.parse(r.body) as Json);
    expect(events).toHaveLength(3);
    expect(events.map((e) => ((e.data as Json).item as Json).platform_id).sort()).toEqual(
      [recent, dm, mention].sort(),
    );
    const first = (events[0] as Json).data as Json;
    expect((first.item as Json).id).toMatch(/^inb_/);
    expect(first.item).not.toHaveProperty('org_id');

    // A new one later is one more item and one more event.
    const later = await seed(user, { kind: 'mention', text: `${tag} later` });
    await poll(channelId);
    await until('the new item', async () => ((await items(channelId)).length === 4 ? true : undefined));
    await until('its event', async () => (receiver.ofType('inbox.received').length === 4 ? true : undefined));
    expect((await items(channelId)).map((i) => i.platform_id)).toContain(later);
  });

  it('a comment on a Herald post carries its post_id', async () => {
    const { channelId, user } = await connectMastodon();
    await dangerous(ws, true);
    const created = await api<{ id: string }>('POST', '/v1/posts', {
      key: ws.key,
      body: { variants: [{ channel_id: channelId, body: `inbox root ${Date.now()}` }], publish_now: true },
    });
    expect(created.status, created.text).toBe(201);
    const post = await waitForPost<{
      status: string;
      deliveries: Array<{ channel_id: string; external_id: string }>;
    }>(ws.key, created.body.id, (p) => p.status === 'published' || p.status === 'failed');
    expect(post.status).toBe('published');
    const root = post.deliveries.find((d) => d.channel_id === channelId)?.external_id as string;
    const comment = await seed(user, { kind: 'comment', text: 'nice post', parent: root });
    const stranger = await seed(user, { kind: 'mention', text: 'unrelated' });
    await poll(channelId);
    const got = await until('the comment', async () => {
      const list = await items(channelId);
      return list.length >= 2 ? list : undefined;
    });
    expect(got.find((i) => i.platform_id === comment)).toMatchObject({
      post_id: created.body.id,
      in_reply_to: root,
    });
    expect(got.find((i) => i.platform_id === stranger)?.post_id).toBeNull();
  });

  it('a 429 backs off (nothing polled meanwhile) and a later poll picks up', async () => {
    const { channelId, user } = await connectMastodon();
    const first = await seed(user, { kind: 'mention', text: 'before the limit' });
    await poll(channelId);
    await until('the first item', async () =>
      (await items(channelId)).some((i) => i.platform_id === first) ? true : undefined,
    );
    // The channel's own next request (its cursor is in the query): answered 429, retry in 6 s. The
    // cursor is saved just after the page's items, so it is waited for too.
    type Cursor = { mentions?: { min?: string } } | null;
    const min = await until('the saved cursor', async () => {
      const c = ((await pollState(channelId)) as { cursor?: Cursor } | undefined)?.cursor;
      return c?.mentions?.min ? String(c.mentions.min) : undefined;
    });
    await failNext({
      status: 429,
      path: '^/api/v1/notifications$',
      query: `min_id=${min}`,
      headers: { 'Retry-After': '6' },
    });
    const id = await seed(user, { kind: 'mention', text: 'after the limit' });
    await poll(channelId);
    const failed = await until('the failed poll', async () => {
      const s = await pollState(channelId);
      return Number(s?.failures) >= 1 ? s : undefined;
    });
    expect(Date.parse(String(failed.next_poll_at))).toBeGreaterThan(Date.now() + 1_500);
    expect(String(failed.error)).toMatch(/429|rate|many/i);
    // Polls meanwhile (the finder's, a message) wait: nothing new is written before the time.
    await poll(channelId, 2);
    await settle(1_000);
    expect((await items(channelId)).map((i) => i.platform_id)).not.toContain(id);
    await until(
      'the poll after the backoff',
      async () => ((await items(channelId)).some((i) => i.platform_id === id) ? true : undefined),
      30_000,
    );
    expect(await pollState(channelId)).toMatchObject({ failures: 0, error: null });
    expect(await items(channelId)).toHaveLength(2);
  });

  it('a poll that fails mid-page loses and doubles nothing on the next poll', async () => {
    // More than a page (Mastodon's 40) waiting before the channel is connected: its first poll, the
    // backfill, reads them newest first; the second page's request answers 500.
    const user = newUser();
    const ids: string[] = [];
    for (let i = 0; i < 55; i++) ids.push(await seed(user, { kind: 'mention', text: `bulk ${i}` }));
    await failNext({ status: 500, path: '^/api/v1/notifications$', query: 'max_id=' });
    const { channelId } = await connectMastodon(user);
    await poll(channelId);
    const failed = await until('the failed page', async () => {
      const s = await pollState(channelId);
      return s?.error ? s : undefined;
    });
    const written = await items(channelId);
    expect(written.length).toBeGreaterThanOrEqual(40);
    expect(written.length).toBeLessThan(55);
    expect(failed.cursor).toMatchObject({ mentions: { max: expect.any(String) } });
    await until(
      'every item',
      async () => ((await items(channelId)).length >= ids.length ? true : undefined),
      60_000,
    );
    await poll(channelId, 2);
    await settle(4_000);
    const got = await items(channelId);
    expect(got.map((i) => i.platform_id).sort()).toEqual([...ids].sort());
    expect(await pollState(channelId)).toMatchObject({ failures: 0, error: null });
  });

  it('a revoked grant makes the channel reauth_required', async () => {
    const { channelId, user } = await connectMastodon();
    const res = await fetch(`${fakes()}/__fakes/mastodon/revoke`, {
      method: 'POST',
      body: JSON.stringify({ user }),
    });
    expect(res.status, await res.text()).toBe(200);
    await poll(channelId);
    const channel = await until('reauth_required', async () => {
      const c = await api<Json>('GET', `/v1/channels/${channelId}`, { key: ws.key });
      return c.body.status === 'reauth_required' ? c.body : undefined;
    });
    expect(channel.status).toBe('reauth_required');
  });
});
