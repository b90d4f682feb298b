import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { ChannelRecord } from '#core/accounts';
import { ddb } from '#shared/clients';
import { keys } from './keys.ts';
import { batchGet, fromItem, TABLE_NAME } from './table.ts';

// What the delivery worker needs of a channel: the channel, its credentials, and updates to both.

export async function getChannelWithCredentials(
  orgId: string,
  channelId: string,
): Promise<{ channel: ChannelRecord | null; credentials: Record<string, unknown> }> {
  const [channel, creds] = await batchGet([
    keys.channel(orgId, channelId),
    keys.channelCredentials(orgId, channelId),
  ]);
  return {
    channel: channel ? fromItem<ChannelRecord>(channel) : null,
    credentials: (creds?.credentials as Record<string, unknown> | undefined) ?? {},
  };
}

export async function saveChannelCredentials(
  orgId: string,
  channelId: string,
  credentials: Record<string, unknown>,
): Promise<void> {
  await ddb.send(
    new UpdateCommand({
      TableName: TABLE_NAME,
      Key: keys.channelCredentials(orgId, channelId),
      UpdateExpression: 'SET credentials = :c',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':c': credentials },
    }),
  );
}

/** The platform refused the channel's tokens: it needs re-authorization (emits channel.reauth_required). */
export async function markChannelReauthRequired(
  orgId: string,
  channelId: string,
  error: string,
  now: string,
): Promise<void> {
  await ddb.send(
    new UpdateCommand({
      TableName: TABLE_NAME,
      Key: keys.channel(orgId, channelId),
      UpdateExpression: 'SET #s = :s, last_error = :e, last_sync_at = :now',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: { '#s': 'status' },
      ExpressionAttributeValues: { ':s': 'reauth_required', ':e': error.slice(0, 1000), ':now': now },
    }),
  );
}
