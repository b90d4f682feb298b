import { getChannelWithSealedCredentials } from '#adapters/channel-credentials';
import { disconnectChannel as disconnect } from '#adapters/channels';
import { toChannel } from '#core/accounts';
import { notFound } from '#core/errors';
import { isId } from '#core/ids';
import { revokeGrant } from '#usecases/support/channel-revoke';

/**
 * disconnectChannel. Primary course: revoke the channel's grant at the platform where the platform
 * offers that (best effort: a platform that is down does not keep the tokens alive here), then
 * erase the tokens and mark the channel `disconnected` in one write — conditioned on the tokens
 * being the ones revoked: if a refresh rotated them meanwhile, the new ones are revoked and the
 * write tried again. Its scheduled posts keep their schedule; their deliveries fail until the
 * channel is connected again (same id). Repeating the call answers the disconnected channel.
 */
export async function disconnectChannel(
  orgId: string,
  id: string,
  now: Date,
  admitted: () => Promise<unknown>,
) {
  if (!isId('channel', id)) throw notFound('channel');
  let stored = await getChannelWithSealedCredentials(orgId, id);
  let channel = stored.channel;
  if (!channel) throw notFound('channel');
  if (channel.status === 'disconnected') return toChannel(channel);
  // The tokens are opened (KMS) and revoked only for an admitted request; the gate started before the read.
  await admitted();
  for (let attempt = 0; ; attempt++) {
    await revokeGrant(channel.platform, await stored.open(), channel.id);
    if (await disconnect(channel, now.toISOString(), stored.version)) break;
    // Rotated by a refresh meanwhile (or disconnected by another request): look again.
    stored = await getChannelWithSealedCredentials(orgId, id);
    channel = stored.channel;
    if (!channel) throw notFound('channel');
    if (channel.status === 'disconnected') return toChannel(channel);
    if (attempt >= 3) throw new Error(`channel ${id}: its credentials kept changing while disconnecting`);
  }
  return toChannel({ ...channel, status: 'disconnected', last_error: null });
}
