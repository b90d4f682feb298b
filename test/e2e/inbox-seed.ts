import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import type { LocalStackInfo } from '../../bin/local/stack-file.ts';
import { type InboxItemRecord, inboxItemId } from '../../functions/core/inbox.ts';
import type { Platform } from '../../functions/core/platforms.ts';

// Inbox items written straight into the e2e stack's table, in the very shape the poller's
// putNewInboxItems writes (adapters/inbox.ts inboxItemOf): the tests of the read and mark
// operations need items without waiting for a poll.

type Json = Record<string, unknown>;

function info(): LocalStackInfo {
  return JSON.parse(readFileSync(join(inject('dataDir'), 'stack.json'), 'utf8')) as LocalStackInfo;
}

/** The adapter reads TABLE_NAME at load: it is set (to the stack's table) before the first import. */
async function itemShape() {
  process.env.TABLE_NAME ??= info().tableName;
  return (await import('../../functions/adapters/inbox.ts')).inboxItemOf;
}

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

/** Writes the items (as the poller would: keys, status entry, expiry 90 days after receipt). */
export async function seedInbox(records: InboxItemRecord[]): Promise<void> {
  const inboxItemOf = await itemShape();
  const i = info();
  const client = new DynamoDBClient({
    endpoint: i.dynamodbEndpoint,
    region: 'us-east-1',
    credentials: i.dynamodbCredentials,
  });
  const doc = DynamoDBDocumentClient.from(client);
  try {
    for (let k = 0; k < records.length; k += 25) {
      const chunk = records.slice(k, k + 25);
      let pending: Json[] = chunk.map((r) => ({
        PutRequest: { Item: inboxItemOf(r, Math.floor(Date.parse(r.received_at) / 1000) + 90 * 86_400) },
      }));
      while (pending.length) {
        const res = await doc.send(
          new BatchWriteCommand({ RequestItems: { [i.tableName]: pending as never } }),
        );
        pending = (res.UnprocessedItems?.[i.tableName] as Json[] | undefined) ?? [];
      }
    }
  } finally {
    client.destroy();
  }
}
