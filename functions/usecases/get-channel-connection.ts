import { getConnection } from '#adapters/channel-connections';
import { getChannel } from '#adapters/channels';
import { toChannel } from '#core/accounts';
import { connectionStatus, toConnection } from '#core/connections';
import { notFound } from '#core/errors';
import { isId } from '#core/ids';

/** getChannelConnection: the session, with its channel once connected. */
export async function getChannelConnection(orgId: string, id: string, now: Date) {
  if (!isId('connection', id)) throw notFound('connection');
  const session = await getConnection(orgId, id);
  if (!session) throw notFound('connection');
  const { rec } = session;
  const channel =
    connectionStatus(rec, now.getTime()) === 'connected' && rec.channel_id
      ? await getChannel(orgId, rec.channel_id)
      : null;
  return toConnection(rec, now.getTime(), channel ? toChannel(channel) : null);
}
