import { getChannel as readChannel } from '#adapters/channels';
import { toChannelView } from '#core/channel-options';
import { notFound } from '#core/errors';
import { isId } from '#core/ids';

/** getChannel: one channel of the organization, as listChannels shows it (another org's: 404). */
export async function getChannel(orgId: string, id: string) {
  if (!isId('channel', id)) throw notFound('channel');
  const channel = await readChannel(orgId, id);
  if (!channel) throw notFound('channel');
  return toChannelView(channel);
}
