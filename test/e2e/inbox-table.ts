import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { expect, inject } from 'vitest';
import { keys } from '#adapters/keys';
import { type InboxItemRecord, type InboxReply, inboxItemId } from '#core/inbox';
import type { Platform } from '#core/platforms';
import type { LocalStackInfo } from '../../bin/local/stack-file.ts';
import { fakeState } from './helpers.ts';

// Inbox items written into a local stack's table in the very shape the poller's putNewInboxItems
// writes (adapters/inbox.ts inboxItemOf), so the read, mark and reply tests need not wait for a
// poll; their replies read back, and what Mastodon's fake was asked. Shared by the inbox, tenancy,
// generation and crash tests (a crash test's stack has its own data directory).

type Json = Record<string, unknown>;

/** The table of a stack (its data directory's stack.json; by default the suite's shared stack). */
export function table(dataDir: string = inject('dataDir')) {
  const info = JSON.parse(readFileSync(join(dataDir, 'stack.json'), 'utf8')) as LocalStackInfo;
  const client = new DynamoDBClient({
    endpoint: info.dynamodbEndpoint,
    region: 'us-east-1',
    credentials: info.dynamodbCredentials,
  });
  return { doc: DynamoDBDocumentClient.from(client), name: info.tableName, close: () => client.destroy() };
}

/** The adapter reads TABLE_NAME at load: it is set (to the shared stack's table) before the first import. */
async function itemShape() {
  if (!process.env.TABLE_NAME) {
    const t = table();
    process.env.TABLE_NAME = t.name;
    t.close();
  }
  return (await import('#adapters/inbox')).inboxItemOf;
}

/** Its expiry as the poller sets it: 90 days after receipt. */
const ttlOf = (r: InboxItemRecord) => Math.floor(Date.parse(r.received_at) / 1000) + 90 * 86_400;

let seq = 0;

/** An unread comment on `channelId` from someone else, written `minutesAgo` before now. */
export function inboxItem(
  orgId: string,
  channelId: string,
  overrides: Partial<InboxItemRecord> & { minutesAgo?: number; platform?: Platform } = {},
): InboxItemRecord {
  seq += 1;
  const { minutesAgo = seq, ...rest } = overrides;
  const createdAt = new Date(Date.now() - minutesAgo * 60_000).toISOString();
  const platformId = rest.platform_id ?? `at://did:plc:someone/app.bsky.feed.post/e2e${seq}${Date.now()}`;
  return {
    id: inboxItemId(channelId, platformId, createdAt),
    org_id: orgId,
    channel_id: channelId,
    platform: 'bluesky',
    kind: 'comment',
    status: 'unread',
    text: `Comment ${seq}`,
    url: null,
    author: {
      handle: 'someone.bsky.social',
      name: 'Someone',
      avatar_url: null,
      platform_id: 'did:plc:someone',
    },
    post_id: null,
    in_reply_to: null,
    conversation_id: null,
    platform_id: platformId,
    created_at: createdAt,
    received_at: new Date().toISOString(),
    replies: [],
    ...rest,
  };
}

/** Writes the items (as the poller would: keys, status entry, expiry) into the stack's table. */
export async function seedInbox(records: InboxItemRecord[], dataDir?: string): Promise<void> {
  const inboxItemOf = await itemShape();
  const t = table(dataDir);
  try {
    for (let k = 0; k < records.length; k += 25) {
      let pending: Json[] = records
        .slice(k, k + 25)
        .map((r) => ({ PutRequest: { Item: inboxItemOf(r, ttlOf(r)) } }));
      while (pending.length) {
        const res = await t.doc.send(new BatchWriteCommand({ RequestItems: { [t.name]: pending as never } }));
        pending = (res.UnprocessedItems?.[t.name] as Json[] | undefined) ?? [];
      }
    }
  } finally {
    t.close();
  }
}

/** A comment on the channel's account, on the fake (its platform id) and in the table as the poller keeps it. */
export async function seedItem(
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
    await t.doc.send(new PutCommand({ TableName: t.name, Item: (await itemShape())(item, ttlOf(item)) }));
  } finally {
    t.close();
  }
  return item;
}

export async function replyOf(dataDir: string, orgId: string, itemId: string, replyId: string) {
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

/** The requests that asked the fake to post a status carrying `marker` (a second send would be one more). */
export const postsAsked = async (marker: string) =>
  (await fakeState('mastodon')).requests.filter(
    (r) =>
      r.method === 'POST' && r.path.endsWith('/api/v1/statuses') && JSON.stringify(r.json).includes(marker),
  ).length;

/** The fake's statuses whose text carries `marker`. */
export const statusesWith = async (marker: string) =>
  ((await fakeState('mastodon')).posts ?? []).filter((p) =>
    String(p.text ?? p.status ?? '').includes(marker),
  );
