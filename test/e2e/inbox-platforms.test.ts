import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { INBOX, type InboxItem, type InboxKind } from '../../functions/core/inbox.ts';
import type { Platform } from '../../functions/core/platforms.ts';
import { FAKE_APPS } from '../fakes/oauth.ts';
import { makeSamples, type SampleName, type Samples } from '../support/media-samples.ts';
import {
  ALL_SCOPES,
  api,
  baseUrl,
  CREDENTIALS,
  cliOk,
  dangerous,
  fakeState,
  mint,
  stackInfo,
  uploadMedia,
  type Workspace,
  waitForPost,
  workspace,
} from './helpers.ts';
import { inboxItem, seedInbox } from './inbox-table.ts';

// The inbox end to end per platform, against the local stack and each platform's contract fake:
// a channel connected the way people connect it (consent where the platform has OAuth, so the
// grant carries the inbox's scopes), a post published through Herald, then someone comments on it,
// mentions the account and writes to it on the platform (each kind the platform offers); a poll
// sent straight to the inboxPoll queue (as the finder sends it) brings them into GET /v1/inbox with
// the platform's author, text, parent, conversation and permalink, the comment carrying the Herald
// post's id; a second pair of polls writes nothing new; a reply goes out once and shows `sent` with
// the platform's id. TikTok and Pinterest say they have no inbox, and a reply there is refused.

type Json = Record<string, unknown>;
type Post = {
  id: string;
  status: string;
  deliveries: Array<{ channel_id: string; external_id: string | null }>;
};
const fakes = () => inject('fakesOrigin');
const LANDING = 'http://127.0.0.1:9/connected';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const info = JSON.parse(readFileSync(join(inject('dataDir'), 'stack.json'), 'utf8')) as {
  dynamodbEndpoint: string;
  dynamodbCredentials: { accessKeyId: string; secretAccessKey: string };
  tableName: string;
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

let ws: Workspace;
let key: string;
/** A key per platform: the API limits each key to 120 requests a minute, and the cases run at once. */
const keys = new Map<Platform, string>();
const keyOf = (p: Platform) => keys.get(p) as string;
const INBOX_KEY_SCOPES = `${ALL_SCOPES},inbox:read,inbox:write`;
let samples: Samples;
const run = Date.now().toString(36);

/** LinkedIn's organization pages need the Community Management scopes, and the inbox r_organization_social. */
const LINKEDIN_ORG_SCOPES = [
  'openid',
  'profile',
  'w_member_social',
  'w_organization_social',
  'r_organization_admin',
  'r_organization_social',
];

async function platformApp(platform: string, scopes?: string[]) {
  const app = FAKE_APPS[platform as Platform];
  await cliOk(
    'platform-app',
    'set',
    '--platform',
    platform,
    '--client-id',
    app.clientId,
    '--client-secret',
    app.clientSecret,
    ...(scopes ? ['--scopes', scopes.join(',')] : []),
  );
}

/** Session → consent (as `fake_user`, when given) → callback → the account picked: the channel's id. */
async function consented(
  platform: Platform,
  opts: { user?: string; pick?: (a: { id: string }) => boolean } = {},
): Promise<string> {
  const key = keyOf(platform);
  const created = await api<{ id: string; authorize_url: string }>('POST', '/v1/channel-connections', {
    key,
    body: {
      platform,
      redirect_uri: LANDING,
      ...(platform === 'mastodon' ? { instance: `${fakes()}/mastodon` } : {}),
    },
  });
  expect(created.status, created.text).toBe(201);
  const authorize = new URL(created.body.authorize_url);
  if (opts.user) authorize.searchParams.set('fake_user', opts.user);
  const atPlatform = await fetch(authorize, { redirect: 'manual' });
  expect(atPlatform.status, await atPlatform.text()).toBe(302);
  const back = new URL(String(atPlatform.headers.get('location')));
  expect(back.origin).toBe(baseUrl());
  const landed = await fetch(back, { redirect: 'manual' });
  expect(landed.status, await landed.text()).toBe(303);
  type Session = {
    id: string;
    status: string;
    channel: { id: string } | null;
    accounts?: Array<{ id: string }> | null;
  };
  let now = (await api<Session>('GET', `/v1/channel-connections/${created.body.id}`, { key })).body;
  if (now.status === 'selecting_account') {
    const account = (now.accounts ?? []).find(opts.pick ?? (() => true));
    expect(account, JSON.stringify(now.accounts)).toBeDefined();
    const picked = await api<Session>('POST', `/v1/channel-connections/${now.id}/select`, {
      key,
      body: { account_id: account?.id },
    });
    expect(picked.status, picked.text).toBe(200);
    now = picked.body;
  }
  expect(now.status, JSON.stringify(now)).toBe('connected');
  return String(now.channel?.id);
}

async function upload(key: string, name: SampleName): Promise<string> {
  const sample = samples.files[name];
  const ext = sample.path.split('.').pop();
  return (await uploadMedia(key, readFileSync(sample.path), `s.${ext}`, sample.contentType)).url;
}

/** Publishes a post on the channel now: the Herald post and the platform's id of it. */
async function publish(platform: Platform, channelId: string, marker: string) {
  const key = keyOf(platform);
  const media =
    platform === 'instagram'
      ? [{ url: await upload(key, 'jpeg'), type: 'image' }]
      : platform === 'youtube'
        ? [{ url: await upload(key, 'mp4'), type: 'video' }]
        : [];
  const res = await api<{ id: string }>('POST', '/v1/posts', {
    key,
    body: {
      title: platform === 'youtube' ? `A video ${marker}` : null,
      publish_now: true,
      variants: [{ channel_id: channelId, body: `The post ${marker}`, media }],
    },
  });
  expect(res.status, res.text).toBe(201);
  const post = await waitForPost<Post>(
    key,
    res.body.id,
    (p) => p.status === 'published' || p.status === 'failed',
    60_000,
  );
  expect(post.status, JSON.stringify(post)).toBe('published');
  const external = post.deliveries.find((d) => d.channel_id === channelId)?.external_id;
  expect(external).toBeTruthy();
  // The poller knows Herald's posts by the refs the stream relay writes once the delivery has its
  // platform id, a moment after the post is published: a comment polled before that has no post_id.
  await until('the post ref', async () => {
    const ref = await doc.send(
      new GetCommand({
        TableName: info.tableName,
        Key: { pk: `ORG#${ws.orgId}`, sk: `POSTREF#${channelId}#${external}` },
        ConsistentRead: true,
      }),
    );
    return ref.Item?.post_id === post.id ? true : undefined;
  });
  return { postId: post.id, external: String(external) };
}

async function seed(platform: Platform, s: Json): Promise<string> {
  const res = await fetch(`${fakes()}/__fakes/${platform}/inbox`, {
    method: 'POST',
    body: JSON.stringify(s),
  });
  const text = await res.text();
  expect(res.status, text).toBe(201);
  return (JSON.parse(text) as { platform_id: string }).platform_id;
}

/** One poll message per call, as the finder sends it (several at once: duplicates). */
async function poll(channelId: string, times = 1) {
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

/** The channel's items through the API, every page. */
async function listed(key: string, channelId: string): Promise<InboxItem[]> {
  const out: InboxItem[] = [];
  let cursor: string | null = null;
  do {
    const q = new URLSearchParams({ channel_id: channelId, limit: '100', ...(cursor ? { cursor } : {}) });
    const res = await api<{ data: InboxItem[]; next_cursor: string | null }>('GET', `/v1/inbox?${q}`, {
      key,
    });
    expect(res.status, res.text).toBe(200);
    out.push(...res.body.data);
    cursor = res.body.next_cursor;
  } while (cursor);
  return out;
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
    await sleep(400);
  }
}

/** How many of the fake's posts and comments carry this text (a reply is one of them). */
async function onFake(platform: Platform, marker: string): Promise<number> {
  const state = await fakeState(platform);
  return [...(state.posts ?? []), ...(state.comments ?? [])].filter((p) => JSON.stringify(p).includes(marker))
    .length;
}

/**
 * The requests that asked the fake to send this message: JSON bodies carry its text; Meta's Graph
 * API takes forms, which the fakes' log keeps no body of, so there the Send API calls since `since`
 * count (no other file sends Meta messages).
 */
async function sendsAsked(platform: Platform, text: string, since: number): Promise<number> {
  const { requests } = await fakeState(platform);
  return requests.filter(
    (r) =>
      r.method === 'POST' &&
      (r.json == null
        ? /\/messages$/.test(r.path) &&
          (r as { at?: number }).at !== undefined &&
          Number((r as { at?: number }).at) >= since
        : JSON.stringify(r.json).includes(text)),
  ).length;
}

interface Case {
  platform: Platform;
  connect: () => Promise<string>;
  /** The seed's recipient (`to`), where the fake needs one beyond the default account. */
  to?: string;
  /** Who comments, mentions and writes (the fake's own shape of a person). */
  author: { handle: string; name: string; id?: string };
  /** What the item's author must show of it. */
  expectAuthor: Partial<InboxItem['author']>;
  /** Comments form a tree under the post (a reply to the comment is a comment on the post too). */
  nested?: boolean;
}

const mastodonUser = `inboxp${run}`;
const blueskyHandle = `inboxp${run}.bsky.social`;

const CASES: Case[] = [
  {
    platform: 'mastodon',
    to: mastodonUser,
    connect: () => consented('mastodon', { user: mastodonUser }),
    author: { handle: 'ada@other.example', name: 'Ada' },
    expectAuthor: { handle: '@ada@other.example', name: 'Ada' },
  },
  {
    platform: 'bluesky',
    nested: true,
    to: blueskyHandle,
    // App passwords, no OAuth: one with direct-message access (the fake's privileged password).
    connect: async () =>
      String(
        (
          await cliOk(
            'channel',
            'connect',
            '--org',
            ws.orgId,
            '--platform',
            'bluesky',
            '--credentials',
            JSON.stringify({ ...CREDENTIALS.bluesky, identifier: blueskyHandle }),
          )
        ).id,
      ),
    author: { handle: 'ada.bsky.social', name: 'Ada' },
    expectAuthor: { handle: 'ada.bsky.social', name: 'Ada', platform_id: expect.stringMatching(/^did:plc:/) },
  },
  {
    platform: 'x',
    connect: () => consented('x'),
    author: { handle: 'ada_x', name: 'Ada X', id: '1600000000000000042' },
    expectAuthor: { handle: 'ada_x', name: 'Ada X', platform_id: '1600000000000000042' },
  },
  {
    platform: 'facebook',
    nested: true,
    connect: () => consented('facebook'),
    author: { handle: 'ada.fb', name: 'Ada Facebook', id: '2000000000000042' },
    // A Page sees a person's name and page-scoped id, no username: the name is the handle.
    expectAuthor: { handle: 'Ada Facebook', name: 'Ada Facebook', platform_id: '2000000000000042' },
  },
  {
    platform: 'instagram',
    nested: true,
    connect: () => consented('instagram'),
    author: { handle: 'ada.ig', name: 'Ada Instagram', id: '17840000000000042' },
    // Comments and messages name the person's id; a tag (mention) names the username only.
    expectAuthor: { handle: 'ada.ig' },
  },
  {
    platform: 'threads',
    nested: true,
    connect: () => consented('threads'),
    author: { handle: 'ada_threads', name: 'Ada Threads' },
    // Threads names the author of a reply or mention by username only.
    expectAuthor: { handle: 'ada_threads', platform_id: 'ada_threads' },
  },
  {
    platform: 'youtube',
    nested: true,
    connect: () => consented('youtube'),
    author: { handle: '@ada', name: 'Ada YouTube', id: 'UCadaviewer00000000000042' },
    // YouTube gives the commenter's display name and channel id.
    expectAuthor: { handle: 'Ada YouTube', name: 'Ada YouTube', platform_id: 'UCadaviewer00000000000042' },
  },
  {
    platform: 'linkedin',
    nested: true,
    // The organization page, with the inbox's scope added to the app only while this grant is made
    // (other files connect member accounts with the app's default scopes).
    connect: async () => {
      await platformApp('linkedin', LINKEDIN_ORG_SCOPES);
      try {
        return await consented('linkedin', { pick: (a) => a.id.startsWith('urn:li:organization:') });
      } finally {
        await platformApp('linkedin');
      }
    },
    author: { handle: 'ada-lovelace', name: 'Ada LinkedIn', id: 'ada0000042' },
    // A comment names its actor by URN only.
    expectAuthor: { handle: 'urn:li:person:ada0000042', platform_id: 'urn:li:person:ada0000042' },
  },
];

beforeAll(async () => {
  samples = await makeSamples(mkdtempSync(join(tmpdir(), 'herald-inbox-platforms-')));
  ws = await workspace(['tiktok', 'pinterest']);
  key = await mint(ws, INBOX_KEY_SCOPES);
  await Promise.all(CASES.map(async (c) => keys.set(c.platform, await mint(ws, INBOX_KEY_SCOPES))));
  for (const p of ['x', 'facebook', 'instagram', 'threads', 'youtube', 'linkedin']) await platformApp(p);
  await dangerous(ws, true);
}, 120_000);
afterAll(() => {
  sqs.destroy();
  doc.destroy();
  rmSync(samples.dir, { recursive: true, force: true });
});

describe.concurrent('the inbox per platform, through its contract fake', () => {
  it.each(CASES)(
    '$platform: each kind comes in once with its context, and a reply goes out once',
    async (c) => {
      const { platform } = c;
      const key = keyOf(platform);
      const channelId = await c.connect();
      const kinds = Object.keys(INBOX[platform].kinds) as InboxKind[];
      const channel = await api<{ inbox: Json }>('GET', `/v1/channels/${channelId}`, { key });
      expect(channel.body.inbox, JSON.stringify(channel.body)).toMatchObject({
        available: true,
        kinds: expect.arrayContaining(kinds),
        error: null,
      });

      const marker = `inb-${platform}-${run}`;
      const { postId, external } = await publish(platform, channelId, marker);
      const author = c.author;
      const to = c.to ? { to: c.to } : {};
      const seeded: Partial<Record<InboxKind, string>> = {};
      seeded.comment = await seed(platform, {
        kind: 'comment',
        text: `${marker} a comment`,
        parent: external,
        author,
        ...to,
      });
      if (kinds.includes('mention'))
        seeded.mention = await seed(platform, {
          kind: 'mention',
          text: `${marker} a mention`,
          author,
          ...to,
        });
      if (kinds.includes('message'))
        seeded.message = await seed(platform, {
          kind: 'message',
          text: `${marker} a message`,
          author,
          ...to,
        });
      // A reply to that comment: still a comment on the post (its conversation), answering the comment.
      const nested = c.nested
        ? await seed(platform, {
            kind: 'comment',
            text: `${marker} a reply`,
            parent: seeded.comment,
            author: { handle: 'lin_b', name: 'Lin B', id: '1600000000000000077' },
            ...to,
          })
        : undefined;
      const want = [...Object.values(seeded), ...(nested ? [nested] : [])];

      await poll(channelId, 2);
      const got = await until(`${platform}'s items`, async () => {
        const list = (await listed(key, channelId)).filter((i) => want.includes(i.platform_id));
        return list.length === want.length ? list : undefined;
      });
      const by = (k: InboxKind) => got.find((i) => i.platform_id === seeded[k]) as InboxItem;
      for (const k of Object.keys(seeded) as InboxKind[]) {
        const item = by(k);
        expect(item, `${platform} ${k}: ${JSON.stringify(got)}`).toMatchObject({
          channel_id: channelId,
          platform,
          kind: k,
          status: 'unread',
          replies: [],
        });
        expect(item.text).toContain(`${marker} a ${k}`);
        expect(item.author, JSON.stringify(item)).toMatchObject(c.expectAuthor);
        expect(item.author.handle).toBeTruthy();
        expect(item.author.platform_id).toBeTruthy();
        // A comment or mention links to it on the platform; a direct message has no page, except on
        // Mastodon, where it is a status (its page shown to the conversation's members only).
        if (k === 'message' && platform !== 'mastodon') expect(item.url).toBeNull();
        else expect(item.url, JSON.stringify(item)).toMatch(/^https?:\/\//);
      }
      const comment = by('comment');
      expect(comment, JSON.stringify(comment)).toMatchObject({
        post_id: postId,
        in_reply_to: external,
        conversation_id: external,
      });
      if (nested) {
        const answer = got.find((i) => i.platform_id === nested) as InboxItem;
        expect(answer, JSON.stringify(answer)).toMatchObject({
          kind: 'comment',
          post_id: postId,
          in_reply_to: seeded.comment,
          conversation_id: external,
        });
        expect(answer.text).toContain(`${marker} a reply`);
      }
      if (seeded.mention) expect(by('mention').post_id).toBeNull();
      if (seeded.message) {
        const message = by('message');
        expect(message, JSON.stringify(message)).toMatchObject({ post_id: null, in_reply_to: null });
        expect(message.conversation_id).toBeTruthy();
      }

      // Overlapping polls read the same items again and write none of them twice (waited for: the
      // channel's last sync moves past them).
      const synced = async () =>
        (await api<{ inbox: { last_synced_at: string | null } }>('GET', `/v1/channels/${channelId}`, { key }))
          .body.inbox.last_synced_at;
      const before = Date.now();
      await poll(channelId, 2);
      await until(`${platform}'s next poll`, async () => {
        const at = await synced();
        return at && Date.parse(at) > before ? true : undefined;
      });
      await sleep(2_000);
      const again = (await listed(key, channelId)).filter((i) => JSON.stringify(i).includes(marker));
      expect(again.map((i) => i.platform_id).sort()).toEqual([...want].sort());

      // The replies: accepted, sent once, with the platform's id: to the comment (a reply comment
      // on the platform) and, where the platform answers messages, to the message in its conversation.
      const since = Date.now();
      const answer = async (item: InboxItem, text: string) => {
        const replied = await api<{ id: string; stage: string }>('POST', `/v1/inbox/${item.id}/replies`, {
          key,
          body: { body: text },
        });
        expect(replied.status, replied.text).toBe(202);
        expect(replied.body.stage).toBe('queued');
        const sent = await until(`${platform}'s reply to the ${item.kind}`, async () => {
          const now = await api<InboxItem>('GET', `/v1/inbox/${item.id}`, { key });
          const r = now.body.replies.find((x) => x.id === replied.body.id);
          return r && (r.stage === 'sent' || r.stage === 'failed') ? r : undefined;
        });
        expect(sent, `${platform} ${item.kind}: ${JSON.stringify(sent)}`).toMatchObject({
          stage: 'sent',
          error: null,
          text,
        });
        expect(sent.external_id).toBeTruthy();
        return sent;
      };
      const toComment = `${marker} thanks`;
      const toMessage = `${marker} hello back`;
      const answersMessage = !!seeded.message && INBOX[platform].replies.includes('message');
      await Promise.all([
        answer(comment, toComment),
        ...(answersMessage ? [answer(by('message'), toMessage)] : []),
      ]);
      await sleep(2_000);
      expect(await onFake(platform, toComment)).toBe(1);
      if (answersMessage) expect(await sendsAsked(platform, toMessage, since)).toBe(1);
    },
    90_000,
  );
});

describe('platforms without an inbox', () => {
  it.each(['tiktok', 'pinterest'] as const)('%s says so on the channel', async (platform) => {
    const channel = await api<{ inbox: Json }>('GET', `/v1/channels/${ws.channels[platform]}`, { key });
    expect(channel.status, channel.text).toBe(200);
    expect(channel.body.inbox).toMatchObject({ available: false, kinds: [], error: INBOX[platform].none });
  });

  it('a reply to a TikTok item is refused with reply_unsupported, and nothing is sent', async () => {
    const channelId = String(ws.channels.tiktok);
    const item = inboxItem(ws.orgId, channelId, {
      platform: 'tiktok',
      platform_id: `7300000000000${Date.now()}`,
      author: { handle: 'fan', name: 'A Fan', avatar_url: null, platform_id: 'open-id-fan' },
    });
    await seedInbox([item]);
    const text = `Thanks from ${run}`;
    const res = await api<Json>('POST', `/v1/inbox/${item.id}/replies`, { key, body: { body: text } });
    expect(res.status, res.text).toBe(409);
    expect(res.body.code).toBe('reply_unsupported');
    await sleep(1_500);
    const after = await api<InboxItem>('GET', `/v1/inbox/${item.id}`, { key });
    expect(after.body.replies).toEqual([]);
    const asked = (await fakeState('tiktok')).requests.filter((r) => JSON.stringify(r).includes(text));
    expect(asked).toEqual([]);
  });
});
