import { revokeToken } from '#adapters/oauth';
import { getPlatformApp } from '#adapters/platform-apps';
import { connectFor } from '#adapters/platforms/connect-registry';
import type { Credentials } from '#adapters/platforms/types';
import { redactCredentials } from '#core/credentials';
import type { Platform } from '#core/platforms';
import { logger } from '#shared/logger';
import { sessionApp } from '#usecases/support/channel-connect';

// Giving tokens back to the platform, best effort: a platform that is down does not keep the
// tokens alive in Herald (they are erased either way), so failures are logged, never thrown.

/** The app the channel's tokens were issued to: the operator's, or Herald's on the Mastodon instance. */
async function appFor(platform: Platform, credentials: Credentials) {
  const instance = typeof credentials.instance === 'string' ? credentials.instance : null;
  if (platform === 'mastodon') return sessionApp(platform, instance, '');
  const a = await getPlatformApp(platform);
  return a ? { clientId: a.client_id, clientSecret: a.client_secret, redirectUri: a.redirect_uri } : null;
}

/** Revokes a channel's grant where the platform offers that (the owner disconnects it). */
export async function revokeGrant(platform: Platform, credentials: Credentials, channelId: string) {
  try {
    const connect = await connectFor(platform);
    if (connect.kind === 'app_password') {
      await connect.revoke?.(credentials);
      return;
    }
    const app = await appFor(platform, credentials);
    if (!app) return;
    const instance = typeof credentials.instance === 'string' ? credentials.instance : undefined;
    const server = connect.server(instance);
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

/**
 * Gives back tokens a connection obtained but no channel keeps (the connection failed after the
 * code exchange, or the person never picked an account). Only where revoking a token ends just
 * that grant: on Google and TikTok it would end the person's every connection to the app, and
 * Meta's needs the person's own token per app; there the tokens are erased and left to expire.
 */
export async function revokeUnkept(platform: Platform, grants: Credentials[], why: string): Promise<void> {
  const connect = await connectFor(platform);
  if (connect.kind !== 'oauth' || connect.revoke || connect.revokesAuthorization) return;
  const seen = new Set<string>();
  for (const credentials of grants) {
    const token = String(credentials.refresh_token ?? credentials.access_token ?? '');
    if (!token || seen.has(token)) continue;
    seen.add(token);
    await revokeGrant(platform, credentials, `(none: ${why})`);
  }
}
