import { credentialRedactor, getChannelWithCredentials } from '#adapters/channel-credentials';
import { dueChannels, markChannelReauthRequired, updateChannelHealth } from '#adapters/channels';
import { connectFor } from '#adapters/platforms/connect-registry';
import { PlatformError } from '#adapters/platforms/types';
import type { ChannelRecord } from '#core/accounts';
import { logger } from '#shared/logger';
import { nextSyncAt } from '#usecases/support/channel-connect';
import { channelTokens } from '#usecases/support/channel-tokens';

// The channel sync (every 5 minutes in AWS; every 2 s in the local stack): keeps every connected
// channel healthy without waiting for a post to find out. For each channel whose time has come it
// renews the access token ahead of expiry and reads the profile again (handle, avatar, followers).
// A grant the platform refuses makes the channel reauth_required (channel.reauth_required, once per
// transition); a transient failure (5xx, timeout, 429) sets last_error, keeps it live and tries
// again with a growing backoff.

/** Renew when the token has this long left (syncs are scheduled for that moment, see nextSyncAt). */
const RENEW_WITHIN_MS = 30 * 60_000;
/** Day buckets of the sync index read per run: a channel overdue by up to a week is still found. */
const LOOKBACK_DAYS = 7;
const CONCURRENCY = 8;

export type SyncResult = 'synced' | 'refreshed' | 'retrying' | 'reauth_required' | 'skipped';

export async function syncDueChannels(now: Date): Promise<Record<SyncResult, number>> {
  const due = await dueChannels(now, LOOKBACK_DAYS);
  const counts: Record<SyncResult, number> = {
    synced: 0,
    refreshed: 0,
    retrying: 0,
    reauth_required: 0,
    skipped: 0,
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, due.length) }, async () => {
      for (let i = next++; i < due.length; i = next++) {
        const { orgId, channelId } = due[i] as { orgId: string; channelId: string };
        counts[await syncChannel(orgId, channelId, now)]++;
      }
    }),
  );
  return counts;
}

/** One channel: renew its token if it expires soon, read its profile, record its health. */
export async function syncChannel(orgId: string, channelId: string, now: Date): Promise<SyncResult> {
  const { channel, credentials, version } = await getChannelWithCredentials(orgId, channelId);
  if (!channel || channel.status === 'disconnected' || channel.status === 'reauth_required') return 'skipped';
  const redactor = credentialRedactor();
  redactor.remember(credentials);
  const tokens = channelTokens({
    orgId,
    channelId,
    platform: channel.platform,
    credentials,
    version,
    remember: redactor.remember,
  });
  let refreshed = false;
  try {
    const expires = Date.parse(String(credentials.expires_at ?? ''));
    if (Number.isFinite(expires) && expires - now.getTime() <= RENEW_WITHIN_MS)
      refreshed = await tokens.refresh();
    const connect = await connectFor(channel.platform);
    const account = await connect.profile(tokens.credentials);
    const at = now.toISOString();
    await updateChannelHealth(
      channel,
      {
        handle: account.handle,
        avatar_url: account.avatar_url,
        followers: account.followers,
        status: 'live',
        last_sync_at: at,
        last_error: null,
        sync_failures: 0,
        next_sync_at: nextSyncAt(tokens.credentials, now),
      },
      at,
    );
    return refreshed ? 'refreshed' : 'synced';
  } catch (err) {
    const failure = err instanceof PlatformError ? err : new PlatformError('system', (err as Error).message);
    const message = redactor.redact(failure.message);
    if (failure.category === 'auth_expired') {
      await markChannelReauthRequired(orgId, channelId, message, now.toISOString());
      logger.warn('channel needs re-authorization', {
        channel_id: channelId,
        platform: channel.platform,
        error: message,
      });
      return 'reauth_required';
    }
    await retryLater(channel, message, now);
    return 'retrying';
  }
}

/** A transient failure: stay live, say what happened, look again after 1, 2, 4 … minutes (≤ 6 h). */
async function retryLater(channel: ChannelRecord, message: string, now: Date): Promise<void> {
  const failures = (channel.sync_failures ?? 0) + 1;
  const wait = Math.min(6 * 3600_000, 60_000 * 2 ** (failures - 1));
  logger.warn('channel sync failed; retrying later', {
    channel_id: channel.id,
    platform: channel.platform,
    error: message,
  });
  await updateChannelHealth(
    channel,
    {
      last_error: message.slice(0, 1000),
      sync_failures: failures,
      next_sync_at: new Date(now.getTime() + wait).toISOString(),
    },
    now.toISOString(),
  );
}
