import { keys } from '#adapters/keys';
import { batchGet, fromItem, type Key } from '#adapters/table';
import type { ChannelRecord } from '#core/accounts';

// Channels read by their table keys in bulk, for the operator's views (`herald post get`, `herald
// channels failing`): one BatchGetItem per 100, whatever organizations they belong to. Items that
// are not channels (a connection session in the sync index) and missing ones are left out.

export async function channelsAt(at: Key[]): Promise<ChannelRecord[]> {
  const items = await batchGet(at);
  return items.flatMap((item) => (item?.entity === 'channel' ? [fromItem<ChannelRecord>(item)] : []));
}

/** An organization's channels by id. */
export function channelsOf(orgId: string, channelIds: string[]): Promise<ChannelRecord[]> {
  return channelsAt(channelIds.map((id) => keys.channel(orgId, id)));
}
