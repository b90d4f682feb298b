import { openPending } from '#adapters/channel-connection-secrets';
import { endExpiredSelection, getConnection } from '#adapters/channel-connections';
import { credentialRedactor, getChannelWithCredentials } from '#adapters/channel-credentials';
import { dueChannels, updateChannelHealth } from '#adapters/channels';
import { connectFor } from '#adapters/platforms/connect-registry';
import { PlatformError } from '#adapters/platforms/types';
import type { Remedy } from '#core/channel-health';
import { isId } from '#core/ids';
import type { Platform } from '#core/platforms';
import { platformAppRefused } from '#shared/alarms';
import { logger } from '#shared/logger';
import { nextSyncAt } from '#usecases/support/channel-connect';
import { recordChannelFailure } from '#usecases/support/channel-health';
import { revokeUnkept } from '#usecases/support/channel-revoke';
import { channelTokens } from '#usecases/support/channel-tokens';

// The channel sync (every 5 minutes in AWS; every 2 s in the local stack): keeps every connected
// channel healthy without waiting for a post to find out. For each channel whose time has come it
// renews the access token ahead of expiry and reads the profile again (handle, avatar, followers).
// A refusal is handled by who has to act (core/channel-health.ts): the person (reauth_required, one
// channel.reauth_required event, looked at again hourly so a grant that was fine after all comes
// back), the operator (live, last_error, one alarm line per platform and run), or time (live,
// last_error, a growing backoff).

/** Renew when the token has this long left (syncs are scheduled for that moment, see nextSyncAt). */
const RENEW_WITHIN_MS = 30 * 60_000;
/** Day buckets of the sync index read per run: a channel overdue by up to a week is still found. */
const LOOKBACK_DAYS = 7;
const CONCURRENCY = 8;

export type SyncResult =
  | 'synced'
  | 'refreshed'
  | 'retrying'
  | 'reauth_required'
  | 'operator'
  | 'selection_expired'
  | 'skipped';

export async function syncDueChannels(now: Date): Promise<Record<SyncResult, number>> {
  const due = await dueChannels(now, LOOKBACK_DAYS);
  const counts: Record<SyncResult, number> = {
    synced: 0,
    refreshed: 0,
    retrying: 0,
    reauth_required: 0,
    operator: 0,
    selection_expired: 0,
    skipped: 0,
  };
  const refused = new Map<Platform, { channels: number; error: string }>();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, due.length) }, async () => {
      for (let i = next++; i < due.length; i = next++) {
        const { orgId, id } = due[i] as { orgId: string; id: string };
        const outcome = isId('connection', id)
          ? { result: await endSelection(orgId, id, now) }
          : await syncOne(orgId, id, now);
        counts[outcome.result]++;
        if (outcome.result === 'operator' && outcome.platform) {
          const seen = refused.get(outcome.platform);
          refused.set(outcome.platform, {
            channels: (seen?.channels ?? 0) + 1,
            error: seen?.error ?? outcome.error ?? '',
          });
        }
      }
    }),
  );
  // One alarm line per platform, however many channels the operator's app failed.
  for (const [platform, { channels, error }] of refused) platformAppRefused(platform, channels, error);
  return counts;
}

/**
 * A session whose account choice expired: the grant it kept for the choice is given back where that
 * ends just this grant (usecases/support/channel-revoke.ts), and erased.
 */
async function endSelection(orgId: string, id: string, now: Date): Promise<SyncResult> {
  const session = await getConnection(orgId, id);
  const rec = session?.rec;
  if (!rec || rec.status !== 'selecting_account' || Date.parse(rec.expires_at) > now.getTime())
    return 'skipped';
  const pending = await openPending(rec, session.pending);
  await revokeUnkept(rec.platform, Object.values(pending?.grants ?? {}), rec.id);
  return (await endExpiredSelection(rec, now.toISOString())) ? 'selection_expired' : 'skipped';
}

/** What a recorded failure counts as (null from recordChannelFailure: a reconnect won, skipped). */
const RESULT_OF: Record<Remedy, SyncResult> = {
  reauthorize: 'reauth_required',
  operator: 'operator',
  retry: 'retrying',
};

/** One channel: renew its token if it expires soon, read its profile, record its health. */
export async function syncChannel(orgId: string, channelId: string, now: Date): Promise<SyncResult> {
  return (await syncOne(orgId, channelId, now)).result;
}

async function syncOne(
  orgId: string,
  channelId: string,
  now: Date,
): Promise<{ result: SyncResult; platform?: Platform; error?: string }> {
  const { channel, credentials, version } = await getChannelWithCredentials(orgId, channelId);
  if (!channel || channel.status === 'disconnected') return { result: 'skipped' };
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
    // A channel waiting for re-authorization tries its refresh token again: the refusal may have
    // been the operator's app (since repaired) or a platform's passing mistake.
    if (
      (Number.isFinite(expires) && expires - now.getTime() <= RENEW_WITHIN_MS) ||
      channel.status === 'reauth_required'
    )
      refreshed = await tokens.refresh();
    const connect = await connectFor(channel.platform);
    let account: Awaited<ReturnType<typeof connect.profile>>;
    try {
      account = await connect.profile(tokens.credentials);
    } catch (err) {
      // The token refused: renew it once and look again, as a delivery would.
      if (!(err instanceof PlatformError && err.category === 'auth_expired') || refreshed) throw err;
      if (!(await tokens.refreshAfter401())) throw err;
      refreshed = true;
      account = await connect.profile(tokens.credentials);
    }
    const at = now.toISOString();
    const written = await updateChannelHealth(
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
    // Null: reconnected or disconnected meanwhile; what this look found is about the old grant.
    if (!written) return { result: 'skipped' };
    return { result: refreshed ? 'refreshed' : 'synced' };
  } catch (err) {
    const raw = err instanceof PlatformError ? err : new PlatformError('system', (err as Error).message);
    const failure = new PlatformError(raw.category, redactor.redact(tokens.explain(raw)), raw.opts);
    const remedy = await recordChannelFailure(channel, failure, now, { backoff: true });
    if (remedy === 'retry')
      logger.warn('channel sync failed; retrying later', {
        channel_id: channel.id,
        platform: channel.platform,
        error: failure.message,
      });
    return {
      result: remedy ? RESULT_OF[remedy] : 'skipped',
      platform: channel.platform,
      error: failure.message,
    };
  }
}
