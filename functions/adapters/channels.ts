import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { ChannelRecord } from '#core/accounts';
import { redactCredentials } from '#core/credentials';
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

/**
 * A channel's credentials while a connector uses them: tokens it refreshes are saved, and every
 * version seen can be redacted from error text before it is logged or stored.
 */
export function channelCredentials(orgId: string, channelId: string) {
  const seen: Array<Record<string, unknown>> = [];
  return {
    remember(credentials: Record<string, unknown>): Record<string, unknown> {
      seen.push(credentials);
      return credentials;
    },
    save(next: Record<string, unknown>): Promise<void> {
      seen.push(next);
      return saveChannelCredentials(orgId, channelId, next);
    },
    redact: (text: string): string => redactCredentials(text, ...seen),
  };
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
