import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { fromItem, queryAll, TABLE_NAME } from '#adapters/table';
import type { InboxPollRecord } from '#core/inbox';
import { ddb } from '#shared/clients';

// What the inbox poller keeps per channel (entity `inbox_poll`, core/inbox.ts InboxPollRecord):
// the connector's cursor, the last poll and its error, the backoff; and the channel's entry in the
// poll index (gsi2 `INBOXSLOT#<slot>`). The channel's `inbox` state reads it.

export async function getInboxPoll(orgId: string, channelId: string): Promise<InboxPollRecord | null> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.inboxPoll(orgId, channelId) }),
  );
  return res.Item ? fromItem<InboxPollRecord>(res.Item) : null;
}

/** Every poll state of an organization, by channel id (the channel list's `inbox`: one Query). */
export async function inboxPollsOfOrg(orgId: string): Promise<Map<string, InboxPollRecord>> {
  const k = keys.inboxPollsOfOrg(orgId);
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
    ExpressionAttributeValues: { ':pk': k.pk, ':sk': k.skPrefix },
  });
  return new Map(items.map((i) => fromItem<InboxPollRecord>(i)).map((p) => [p.channel_id, p]));
}
