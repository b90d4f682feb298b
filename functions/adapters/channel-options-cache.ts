import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { type Item, type Key, TABLE_NAME } from '#adapters/table';
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

/** Where a channel's cached choices are: read with the channel itself (one BatchGetItem). */
export const cacheKey = (orgId: string, channelId: string): Key => keys.channelOptions(orgId, channelId);

/** The cached entry in an item read at cacheKey (null: none, or not one). */
export function cachedChoicesOf(item: Item | null): CachedChoices | null {
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
