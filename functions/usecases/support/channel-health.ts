import { updateChannelHealth } from '#adapters/channels';
import type { PlatformError } from '#adapters/platforms/types';
import type { ChannelRecord } from '#core/accounts';
import { REAUTH_RECHECK_MS, type Remedy, remedyOf, syncBackoffMs } from '#core/channel-health';
import { logger } from '#shared/logger';

// What the sync and the delivery worker do with a channel after a platform refused a call, by who
// has to act (core/channel-health.ts). Every write is conditioned on the connection the channel was
// read with (adapters/channels.ts updateChannelHealth): work that started on an old grant never
// undoes a reconnect.

/**
 * Records `failure` on the channel: reauth_required (looked at again hourly), or live with
 * last_error and the next look after a backoff. `backoff: false` (a delivery) leaves the sync's
 * schedule alone. The remedy, for the caller's counts; null when a reconnect or disconnect won.
 */
export async function recordChannelFailure(
  channel: ChannelRecord,
  failure: PlatformError,
  now: Date,
  opts: { backoff: boolean },
): Promise<Remedy | null> {
  const remedy = remedyOf({ category: failure.category, operator: failure.opts.operator });
  const at = now.toISOString();
  const message = failure.message.slice(0, 1000);
  if (remedy === 'reauthorize') {
    const written = await updateChannelHealth(
      channel,
      {
        status: 'reauth_required',
        last_error: message,
        last_sync_at: at,
        sync_failures: 0,
        next_sync_at: new Date(now.getTime() + REAUTH_RECHECK_MS).toISOString(),
      },
      at,
    );
    if (written && channel.status !== 'reauth_required')
      logger.warn('channel needs re-authorization', {
        channel_id: channel.id,
        platform: channel.platform,
        error: message,
      });
    return written ? remedy : null;
  }
  const failures = (channel.sync_failures ?? 0) + 1;
  const written = await updateChannelHealth(
    channel,
    opts.backoff
      ? {
          last_error: message,
          sync_failures: failures,
          next_sync_at: new Date(now.getTime() + syncBackoffMs(failures, remedy)).toISOString(),
        }
      : { last_error: message },
    at,
  );
  return written ? remedy : null;
}
