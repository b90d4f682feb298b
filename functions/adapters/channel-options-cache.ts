import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { batchGet, fromItem, type Item, TABLE_NAME } from '#adapters/table';
import type { ChannelRecord } from '#core/accounts';
import type { OptionsNote } from '#core/channel-options';
import { ddb } from '#shared/clients';

// getChannelOptions' short cache (`CHOPTS#<org>#<ch>` / `CHOPTS`): the choices a channel's platform
// answered, when, and for which connection of the channel (a reconnect may be another grant).
// DynamoDB's TTL removes old items eventually, not on time: readers compare `read_at` themselves.

export interface CachedChoices {
  connection_id: string | null;
  read_at: string;
  choices: Record<string, Array<{ value: string; label: string }>>;
  limits: Record<string, number | boolean | string>;
  notes: OptionsNote[];
}

/** The choices part of getChannelOptions' answer: cached, read now, or none (`read_at` null). */
export type ChoicesAnswer = Omit<CachedChoices, 'connection_id' | 'read_at'> & { read_at: string | null };

/** The channel and its cached choices, in one BatchGetItem (no tokens: a cached answer needs none). */
export async function readChannelAndChoices(
  orgId: string,
  channelId: string,
): Promise<{ channel: ChannelRecord | null; cached: CachedChoices | null }> {
  const [channel, item] = await batchGet([
    keys.channel(orgId, channelId),
    keys.channelOptions(orgId, channelId),
  ]);
  return {
    channel: channel ? fromItem<ChannelRecord>(channel) : null,
    cached: cachedChoicesOf(item ?? null),
  };
}

function cachedChoicesOf(item: Item | null): CachedChoices | null {
  if (!item || typeof item.read_at !== 'string') return null;
  return {
    connection_id: typeof item.connection_id === 'string' ? item.connection_id : null,
    read_at: item.read_at,
    choices: (item.choices ?? {}) as CachedChoices['choices'],
    limits: (item.limits ?? {}) as CachedChoices['limits'],
    notes: (item.notes ?? []) as OptionsNote[],
  };
}

/** Keeps the answer until `expiresAt` (TTL, a little later: readers check read_at). */
export async function cacheChoices(
  orgId: string,
  channelId: string,
  entry: CachedChoices,
  expiresAt: Date,
): Promise<void> {
  await ddb.send(
    new PutCommand({
      TableName: TABLE_NAME,
      Item: {
        ...keys.channelOptions(orgId, channelId),
        entity: 'channel_options',
        ...entry,
        ttl: Math.ceil(expiresAt.getTime() / 1000) + 60,
      },
    }),
  );
}
