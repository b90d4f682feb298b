import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { expect, inject } from 'vitest';
import { keys } from '#adapters/keys';
import { type InboxItemRecord, type InboxReply, inboxItemId } from '#core/inbox';
import type { LocalStackInfo } from '../../bin/local/stack-file.ts';
import { fakeState } from './helpers.ts';

// Inbox items written into a local stack's table as the poller writes them (one per comment on the
// platform's fake), their replies read back, and what Mastodon's fake was asked: shared by the
// inbox reply tests and the crash tests.

/** The table of a stack (its data directory's stack.json). */
export function table(dataDir: string) {
  const info = JSON.parse(readFileSync(join(dataDir, 'stack.json'), 'utf8')) as LocalStackInfo;
  const client = new DynamoDBClient({
    endpoint: info.dynamodbEndpoint,
    region: 'us-east-1',
    credentials: info.dynamodbCredentials,
  });
  return { doc: DynamoDBDocumentClient.from(client), name: info.tableName, close: () => client.destroy() };
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
