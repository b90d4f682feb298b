import { getChannel as readChannel } from '#adapters/channels';
import { getInboxPoll } from '#adapters/inbox-polls';
import { toChannelView } from '#core/channel-options';
import { notFound } from '#core/errors';
import { isId } from '#core/ids';
import { inboxDisabledPlatforms } from '#shared/inbox-settings';

/**
 * getChannel: one channel of the organization, as listChannels shows it (another org's: 404). Its
 * inbox poll state is read alongside (both keys are the org's), so the answer costs one round trip.
 */
export async function getChannel(orgId: string, id: string) {
  if (!isId('channel', id)) throw notFound('channel');
  const [channel, poll] = await Promise.all([readChannel(orgId, id), getInboxPoll(orgId, id)]);
  if (!channel) throw notFound('channel');
  return toChannelView(channel, { poll, off: inboxDisabledPlatforms().has(channel.platform) });
}
