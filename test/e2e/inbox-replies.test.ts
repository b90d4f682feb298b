import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { keys } from '#adapters/keys';
import { type InboxItemRecord, type InboxReply, inboxItemId } from '#core/inbox';
import { freePort } from '../../bin/local/services.ts';
import type { LocalStackInfo } from '../../bin/local/stack-file.ts';
import { PLATFORMS } from '../../functions/core/constants.ts';
import { type RunningStack, startLocalStack } from '../support/local-stack.ts';
import {
  ALL_SCOPES,
  api,
  baseUrl,
  CREDENTIALS,
  dangerous,
  failPlatform,
  fakeState,
  mint,
  stackInfo,
  workspace,
} from './helpers.ts';

// replyToInboxItem over HTTP against the local stack and Mastodon's contract fake: the API's
// append, the stream relay's message, the inbox reply worker's one status on the platform; the
// refusals (the limit, the toggle, a platform without replies); and a kill -9 of the stack while
// the platform holds its answer to the reply, after which the reply is found, not sent again.
// Items are written into the table as the poller writes them (one per comment on the platform).

type Json = Record<string, unknown>;
const root = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const INBOX_SCOPES = `${ALL_SCOPES},inbox:read,inbox:write`;

/** The table of a stack (its data directory's stack.json). */
function table(dataDir: string) {
  const info = JSON.parse(readFileSync(join(dataDir, 'stack.json'), 'utf8')) as LocalStackInfo;
  const client = new DynamoDBClient({
    endpoint: info.dynamodbEndpoint,
    region: 'us-east-1',
    credentials: info.dynamodbCredentials,
  });
  return { doc: DynamoDBDocumentClient.from(client), name: info.tableName, close: () => client.destroy() };
}

/** A comment on the channel's account, on the fake (its platform id) and in the table as the poller keeps it. */
async function seedItem(
  dataDir: string,
  a: {
    orgId: string;
    channelId: string;
    platform: InboxItemRecord['platform'];
    text: string;
    platformId?: string;
  },
): Promise<InboxItemRecord> {
  let platformId = a.platformId;
  if (!platformId) {
    const res = await fetch(`${inject('fakesOrigin')}/__fakes/${a.platform}/inbox`, {
      method: 'POST',
      body: JSON.stringify({ kind: 'comment', text: a.text }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    platformId = ((await res.json()) as { platform_id: string }).platform_id;
  }
  const now = new Date().toISOString();
  const item: InboxItemRecord = {
    id: inboxItemId(a.channelId, platformId, now),
    org_id: a.orgId,
    channel_id: a.channelId,
    platform: a.platform,
    kind: 'comment',
    status: 'unread',
    text: a.text,
    url: null,
    author: { handle: 'fan@mastodon.example', name: 'A Fan', avatar_url: null, platform_id: '9001' },
    post_id: null,
    in_reply_to: null,
    conversation_id: platformId,
    platform_id: platformId,
    created_at: now,
    received_at: now,
    replies: [],
    ref: null,
    root_id: platformId,
    version: 1,
  };
  const t = table(dataDir);
  try {
    await t.doc.send(
      new PutCommand({
        TableName: t.name,
        Item: {
          ...keys.inboxItem(a.orgId, item.id),
          ...keys.inboxByStatus(a.orgId, item.status, item.id),
          entity: 'inbox_item',
          ...item,
          ttl: Math.floor(Date.now() / 1000) + 86_400,
        },
      }),
    );
  } finally {
    t.close();
  }
  return item;
}

async function replyOf(dataDir: string, orgId: string, itemId: string, replyId: string) {
  const t = table(dataDir);
  try {
    const got = await t.doc.send(
      new GetCommand({ TableName: t.name, Key: keys.inboxItem(orgId, itemId), ConsistentRead: true }),
    );
    return ((got.Item?.replies ?? []) as InboxReply[]).find((r) => r.id === replyId);
  } finally {
    t.close();
  }
}

async function until<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs: number,
  log = () => '',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${log().slice(-3000)}`);
    await sleep(200);
  }
}

/** The requests that asked the fake to post a status carrying `marker` (a second send would be one more). */
const postsAsked = async (marker: string) =>
  (await fakeState('mastodon')).requests.filter(
    (r) =>
      r.method === 'POST' && r.path.endsWith('/api/v1/statuses') && JSON.stringify(r.json).includes(marker),
  ).length;

/** The fake's statuses whose text carries `marker`. */
const statusesWith = async (marker: string) =>
  ((await fakeState('mastodon')).posts ?? []).filter((p) =>
    String(p.text ?? p.status ?? '').includes(marker),
  );

/** A Mastodon account of its own, connected through OAuth (its grant carries the inbox's scopes). */
async function connectMastodon(key: string, user: string): Promise<string> {
  const created = await api<{ id: string; authorize_url: string }>('POST', '/v1/channel-connections', {
    key,
    body: {
      platform: 'mastodon',
      redirect_uri: 'http://127.0.0.1:9/connected',
      instance: `${inject('fakesOrigin')}/mastodon`,
    },
  });
  expect(created.status, created.text).toBe(201);
  const authorize = new URL(created.body.authorize_url);
  authorize.searchParams.set('fake_user', user);
  const consent = await fetch(authorize, { redirect: 'manual' });
  expect(consent.status, await consent.text()).toBe(302);
  const back = new URL(String(consent.headers.get('location')));
  expect(back.origin).toBe(baseUrl());
  expect((await fetch(back, { redirect: 'manual' })).status).toBe(303);
  const session = await api<{ status: string; channel_id: string }>(
    'GET',
    `/v1/channel-connections/${created.body.id}`,
    { key },
  );
  expect(session.body.status, session.text).toBe('connected');
  return session.body.channel_id;
}

describe('replyToInboxItem (Mastodon)', () => {
  it('answers 202 queued, then the reply is sent once: one status on the platform, in reply to the comment', async () => {
    const ws = await workspace(['mastodon']);
    const key = await mint(ws, INBOX_SCOPES);
    await dangerous(ws, true);
    const dataDir = inject('dataDir');
    const item = await seedItem(dataDir, {
      orgId: ws.orgId,
      channelId: ws.channels.mastodon as string,
      platform: 'mastodon',
      text: `When is the next release? ${Date.now()}`,
    });
    const marker = `reply ${Date.now()}`;

    const res = await api<InboxReply>('POST', `/v1/inbox/${item.id}/replies`, {
      key,
      body: { body: `Next week! ${marker}` },
    });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ text: `Next week! ${marker}`, stage: 'queued', external_id: null });

    const sent = await until(
      'the reply to be sent',
      async () => {
        const r = await replyOf(dataDir, ws.orgId, item.id, res.body.id);
        return r?.stage === 'sent' || r?.stage === 'failed' ? r : undefined;
      },
      30_000,
    );
    const statuses = await statusesWith(marker);
    expect(sent.stage, JSON.stringify(sent.error)).toBe('sent');
    expect(statuses).toHaveLength(1);
    expect(sent.external_id).toBe(statuses[0]?.id);
    expect(statuses[0]?.in_reply_to_id).toBe(item.platform_id);
    expect(await postsAsked(marker)).toBe(1);
    // Settled: nothing more is sent later (a duplicate message would find the reply sent).
    await sleep(1500);
    expect(await statusesWith(marker)).toHaveLength(1);
  });

  it('answers an item the poller read: the comment polled from the platform, the reply under it', async () => {
    const ws = await workspace([]);
    const key = await mint(ws, INBOX_SCOPES);
    await dangerous(ws, true);
    const user = `reply${Date.now().toString(36)}`;
    const channelId = await connectMastodon(key, user);
    const seeded = await fetch(`${inject('fakesOrigin')}/__fakes/mastodon/inbox`, {
      method: 'POST',
      body: JSON.stringify({
        to: user,
        kind: 'mention',
        text: `@${user} do you ship to Canada? ${Date.now()}`,
      }),
    });
    expect(seeded.status).toBe(201);
    const platformId = ((await seeded.json()) as { platform_id: string }).platform_id;
    const info = JSON.parse(readFileSync(join(inject('dataDir'), 'stack.json'), 'utf8')) as {
      queues: Record<string, { url: string }>;
    };
    const sqs = new SQSClient({
      endpoint: stackInfo().sqsEndpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
      useQueueUrlAsEndpoint: false,
    });
    const t = table(inject('dataDir'));
    try {
      // One poll now, as the finder sends it (the finder's own turn may come first: one item all the same).
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: info.queues.inboxPoll?.url,
          MessageBody: JSON.stringify({ org_id: ws.orgId, channel_id: channelId }),
        }),
      );
      const item = await until(
        'the poller to store the mention',
        async () => {
          const res = await t.doc.send(
            new QueryCommand({
              TableName: t.name,
              KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
              ExpressionAttributeValues: { ':pk': `ORG#${ws.orgId}`, ':sk': 'INBOX#' },
              ConsistentRead: true,
            }),
          );
          return (res.Items ?? []).find((i) => i.platform_id === platformId) as InboxItemRecord | undefined;
        },
        45_000,
      );
      const marker = `polled ${Date.now()}`;
      const res = await api<InboxReply>('POST', `/v1/inbox/${item.id}/replies`, {
        key,
        body: { body: `Yes! ${marker}` },
      });
      expect(res.status, res.text).toBe(202);
      const done = await until(
        'the reply to be sent',
        async () => {
          const r = await replyOf(inject('dataDir'), ws.orgId, item.id, res.body.id);
          return r?.stage === 'sent' || r?.stage === 'failed' ? r : undefined;
        },
        30_000,
      );
      expect(done.stage, JSON.stringify(done.error)).toBe('sent');
      const statuses = await statusesWith(marker);
      expect(statuses).toHaveLength(1);
      expect(statuses[0]?.in_reply_to_id).toBe(platformId);
      expect(done.external_id).toBe(statuses[0]?.id);
    } finally {
      t.close();
      sqs.destroy();
      await api('DELETE', `/v1/channels/${channelId}`, { key });
    }
  });

  it('replays a repeated Idempotency-Key: one reply', async () => {
    const ws = await workspace(['mastodon']);
    const key = await mint(ws, INBOX_SCOPES);
    await dangerous(ws, true);
    const item = await seedItem(inject('dataDir'), {
      orgId: ws.orgId,
      channelId: ws.channels.mastodon as string,
      platform: 'mastodon',
      text: `Nice! ${Date.now()}`,
    });
    const marker = `once ${Date.now()}`;
    const send = () =>
      api<InboxReply>('POST', `/v1/inbox/${item.id}/replies`, {
        key,
        body: { body: marker },
        headers: { 'idempotency-key': `k-${marker}` },
      });
    const first = await send();
    const again = await send();
    expect(first.status, first.text).toBe(202);
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    await until(
      'the reply on the platform',
      async () => ((await statusesWith(marker)).length ? true : undefined),
      30_000,
    );
    await sleep(1000);
    expect(await statusesWith(marker)).toHaveLength(1);
  });

  it('refuses a text over Mastodon’s 500 characters with 400 at /body, sending nothing', async () => {
    const ws = await workspace(['mastodon']);
    const key = await mint(ws, INBOX_SCOPES);
    await dangerous(ws, true);
    const item = await seedItem(inject('dataDir'), {
      orgId: ws.orgId,
      channelId: ws.channels.mastodon as string,
      platform: 'mastodon',
      text: `Long? ${Date.now()}`,
    });
    const marker = `long ${Date.now()} `;
    const res = await api<{ code: string; errors: Array<{ pointer: string; code: string }> }>(
      'POST',
      `/v1/inbox/${item.id}/replies`,
      { key, body: { body: marker + 'x'.repeat(501 - marker.length) } },
    );
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors).toEqual([expect.objectContaining({ pointer: '/body', code: 'text_too_long' })]);
    expect(await statusesWith(marker)).toHaveLength(0);
  });

  it('with Dangerous AI operations off answers 403 dangerous_ops_disabled, as publishPost does', async () => {
    const ws = await workspace(['mastodon']);
    const key = await mint(ws, INBOX_SCOPES);
    await dangerous(ws, false);
    const item = await seedItem(inject('dataDir'), {
      orgId: ws.orgId,
      channelId: ws.channels.mastodon as string,
      platform: 'mastodon',
      text: `Toggle ${Date.now()}`,
    });
    const draft = await api<{ id: string }>('POST', '/v1/posts', {
      key,
      body: { variants: [{ channel_id: ws.channels.mastodon, body: 'draft' }], draft: true },
    });
    const publish = await api<{ code: string }>('POST', `/v1/posts/${draft.body.id}/publish`, { key });
    const res = await api<{ code: string }>('POST', `/v1/inbox/${item.id}/replies`, {
      key,
      body: { body: 'Hi' },
    });
    expect(publish.status).toBe(403);
    expect(res.status, res.text).toBe(403);
    expect(res.body.code).toBe(publish.body.code);
    expect(res.body.code).toBe('dangerous_ops_disabled');
  });

  it('refuses a reply to a TikTok item with 409 reply_unsupported, sending nothing', async () => {
    const ws = await workspace(['tiktok']);
    const key = await mint(ws, INBOX_SCOPES);
    await dangerous(ws, true);
    const dataDir = inject('dataDir');
    const item = await seedItem(dataDir, {
      orgId: ws.orgId,
      channelId: ws.channels.tiktok as string,
      platform: 'tiktok',
      text: 'A TikTok comment',
      platformId: `tt-${Date.now()}`,
    });
    const before = (await fakeState('tiktok')).requests.length;
    const res = await api<{ code: string; detail: string }>('POST', `/v1/inbox/${item.id}/replies`, {
      key,
      body: { body: 'Thanks!' },
    });
    expect(res.status, res.text).toBe(409);
    expect(res.body.code).toBe('reply_unsupported');
    const t = table(dataDir);
    try {
      const got = await t.doc.send(
        new GetCommand({ TableName: t.name, Key: keys.inboxItem(ws.orgId, item.id) }),
      );
      expect(got.Item?.replies).toEqual([]);
    } finally {
      t.close();
    }
    expect((await fakeState('tiktok')).requests.length).toBe(before);
  });

  it('answers 404 for another organization’s item', async () => {
    const [mine, theirs] = [await workspace(['mastodon']), await workspace(['mastodon'])];
    const key = await mint(mine, INBOX_SCOPES);
    await dangerous(mine, true);
    const item = await seedItem(inject('dataDir'), {
      orgId: theirs.orgId,
      channelId: theirs.channels.mastodon as string,
      platform: 'mastodon',
      text: `Theirs ${Date.now()}`,
    });
    const res = await api<{ code: string }>('POST', `/v1/inbox/${item.id}/replies`, {
      key,
      body: { body: 'Hi' },
    });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('resource_not_found');
  });
});

// ---- kill -9 mid-reply, on a stack of its own ------------------------------------------------------

let crashDir = '';
let stack: RunningStack | undefined;

afterAll(async () => {
  await stack?.kill();
  if (crashDir) rmSync(crashDir, { recursive: true, force: true });
});

async function boot(port: number) {
  const fakes = inject('fakesOrigin');
  stack = await startLocalStack(
    {
      ...Object.fromEntries(
        PLATFORMS.map((p) => [`HERALD_PLATFORM_${p.toUpperCase()}_URL`, `${fakes}/${p}`]),
      ),
      HERALD_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
    },
    Boolean(process.env.HERALD_E2E_VERBOSE),
    { dataDir: crashDir, port, detached: true },
  );
  return stack;
}

async function admin(...args: string[]): Promise<Json> {
  const { stdout } = await run(process.execPath, [join(root, 'bin/herald.js'), ...args, '--json'], {
    env: { ...process.env, HERALD_DATA_DIR: crashDir },
    cwd: root,
  });
  return JSON.parse(stdout) as Json;
}

describe('kill -9 while the platform holds its answer to the reply', () => {
  it('finds the reply it made after the restart: one status on the platform, the reply sent with its id', async () => {
    // Arrange: a stack of its own, a tenant with a Mastodon channel, an item.
    crashDir = mkdtempSync(join(tmpdir(), 'herald-inbox-crash-'));
    const port = await freePort();
    let s = await boot(port);
    const created = await admin(
      'org',
      'create',
      '--name',
      'Inbox crash',
      '--plan',
      'agency',
      '--owner-email',
      `o${Date.now()}@e2e.test`,
    );
    const orgId = (created.org as Json).id as string;
    const ownerId = (created.owner as Json).id as string;
    const key = (await admin('key', 'mint', '--org', orgId, '--by', ownerId, '--scopes', INBOX_SCOPES))
      .key as string;
    await admin('settings', 'set', '--org', orgId, '--by', ownerId, '--dangerous-ops', 'on');
    const channelId = (
      await admin(
        'channel',
        'connect',
        '--org',
        orgId,
        '--platform',
        'mastodon',
        '--credentials',
        JSON.stringify(CREDENTIALS.mastodon),
      )
    ).id as string;
    const item = await seedItem(crashDir, {
      orgId,
      channelId,
      platform: 'mastodon',
      text: `Crash? ${Date.now()}`,
    });
    const marker = `held reply ${Date.now()}`;
    // Mastodon takes the status and never answers: the worker is mid-reply when the stack dies.
    await failPlatform('mastodon', {
      status: 200,
      pathPattern: '^/api/v1/statuses$',
      bodyIncludes: marker,
      holdAnswerMs: 600_000,
    });
    const res = await fetch(`${s.baseUrl}/v1/inbox/${item.id}/replies`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ body: marker }),
    });
    expect(res.status, await res.clone().text()).toBe(202);
    const replyId = ((await res.json()) as InboxReply).id;
    await until(
      'the reply to reach the platform',
      async () => ((await statusesWith(marker)).length === 1 ? true : undefined),
      30_000,
      () => s.output(),
    );

    // Act
    await s.kill();
    s = await boot(port);

    // Assert: after the lease runs out the message comes back, the worker looks first and finds it.
    const done = await until(
      'the reply to be recorded',
      async () => {
        const r = await replyOf(crashDir, orgId, item.id, replyId);
        return r?.stage === 'sent' || r?.stage === 'failed' ? r : undefined;
      },
      240_000,
      () => s.output(),
    );
    const statuses = await statusesWith(marker);
    expect(done.stage, JSON.stringify(done.error)).toBe('sent');
    expect(statuses).toHaveLength(1);
    expect(done.external_id).toBe(statuses[0]?.id);
    expect(done.attempts).toBe(1);
    // Found by the lookup, not sent again (which the platform's Idempotency-Key would also absorb).
    expect(await postsAsked(marker)).toBe(1);
  }, 360_000);
});
