import { getChannelWithCredentials } from '#adapters/channel-credentials';
import { disconnectChannel as disconnect } from '#adapters/channels';
import { revokeToken } from '#adapters/oauth';
import { getPlatformApp } from '#adapters/platform-apps';
import { connectFor } from '#adapters/platforms/connect-registry';
import { toChannel } from '#core/accounts';
import { redactCredentials } from '#core/credentials';
import { notFound } from '#core/errors';
import { isId } from '#core/ids';
import { logger } from '#shared/logger';
import { sessionApp } from '#usecases/support/channel-connect';

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
  let { channel, credentials, version } = await getChannelWithCredentials(orgId, id);
  if (!channel) throw notFound('channel');
  if (channel.status === 'disconnected') return toChannel(channel);
  await admitted();
  for (let attempt = 0; ; attempt++) {
    await revoke(channel.platform, credentials, channel.id);
    if (await disconnect(channel, now.toISOString(), version)) break;
    // Rotated by a refresh meanwhile (or disconnected by another request): look again.
    ({ channel, credentials, version } = await getChannelWithCredentials(orgId, id));
    if (!channel) throw notFound('channel');
    if (channel.status === 'disconnected') return toChannel(channel);
    if (attempt >= 3) throw new Error(`channel ${id}: its credentials kept changing while disconnecting`);
  }
  return toChannel({ ...channel, status: 'disconnected', last_error: null });
}

async function revoke(
  platform: Parameters<typeof connectFor>[0],
  credentials: Record<string, unknown>,
  channelId: string,
) {
  try {
    const connect = await connectFor(platform);
    if (connect.kind === 'app_password') {
      await connect.revoke?.(credentials);
      return;
    }
    const instance = typeof credentials.instance === 'string' ? credentials.instance : null;
    const app =
      platform === 'mastodon'
        ? await sessionApp(platform, instance, '')
        : await getPlatformApp(platform).then((a) =>
            a ? { clientId: a.client_id, clientSecret: a.client_secret, redirectUri: a.redirect_uri } : null,
          );
    if (!app) return;
    const server = connect.server(instance ?? undefined);
    if (connect.revoke) return await connect.revoke(credentials, app, server);
    // The refresh token revokes the whole grant where the platform has one.
    const refresh = typeof credentials.refresh_token === 'string' ? credentials.refresh_token : null;
    const access = typeof credentials.access_token === 'string' ? credentials.access_token : null;
    if (refresh) await revokeToken(server, app, refresh, 'refresh_token');
    else if (access) await revokeToken(server, app, access, 'access_token');
  } catch (err) {
    logger.warn('revocation at the platform failed; the tokens are erased anyway', {
      channel_id: channelId,
      platform,
      error: redactCredentials((err as Error).message, credentials),
    });
  }
}
