import { countAppRefusal } from '#adapters/app-refusals';
import { openPending } from '#adapters/channel-connection-secrets';
import { endExpiredSelection, getConnection } from '#adapters/channel-connections';
import { credentialRedactor, getChannelWithSealedCredentials } from '#adapters/channel-credentials';
import { moveSyncEntry } from '#adapters/channel-sync-index';
import { updateChannelHealth } from '#adapters/channels';
import { keys } from '#adapters/keys';
import { connectFor } from '#adapters/platforms/connect-registry';
import { PlatformError } from '#adapters/platforms/types';
import type { Remedy } from '#core/channel-health';
import { isId } from '#core/ids';
import type { ChannelSyncMessage } from '#core/messages';
import type { Platform } from '#core/platforms';
import { logger } from '#shared/logger';
import { nextSyncAt } from '#usecases/support/channel-connect';
import { recordChannelFailure } from '#usecases/support/channel-health';
import { revokeUnkept } from '#usecases/support/channel-revoke';
import { channelTokens } from '#usecases/support/channel-tokens';

// The channel sync's worker (the finder: usecases/channel-sync.ts): one message per due channel,
// whose access token it renews ahead of expiry and whose profile it reads again (handle, avatar,
// followers). A refusal is handled by who has to act (core/channel-health.ts): the person
// (reauth_required, one channel.reauth_required event, looked at again hourly so a grant that was
// fine after all comes back), the operator (live, last_error, counted here and reported by the
// finder as one alarm line per platform), or time (live, last_error, a growing backoff). A message
// for a channel that is no longer due (a duplicate, an overlap of two finders) changes nothing; two
// workers on one channel spend its refresh token once (the credentials' lease,
// usecases/support/channel-tokens.ts).

/** Renew when the token has this long left (syncs are scheduled for that moment, see nextSyncAt). */
const RENEW_WITHIN_MS = 30 * 60_000;

export type SyncResult =
  | 'synced'
  | 'refreshed'
  | 'retrying'
  | 'reauth_required'
  | 'operator'
  | 'selection_expired'
  | 'skipped';

/**
 * The worker, for one message: a channel that is still due is looked at (a duplicate, or a message
 * for a channel a reconnect, disconnect or earlier sync moved on, changes nothing); a session whose
 * account choice expired is ended. A refusal of the operator's app is counted for the finder's
 * alarm line.
 */
export async function syncDueEntry(msg: ChannelSyncMessage, now: Date): Promise<SyncResult> {
  if (isId('connection', msg.id)) return endSelection(msg.org_id, msg.id, now);
  const outcome = await syncOne(msg.org_id, msg.id, now, msg.at);
  if (outcome.result === 'operator' && outcome.platform)
    await countAppRefusal(outcome.platform, outcome.error ?? '');
  return outcome.result;
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

/**
 * One channel now, due or not (`herald channel sync`): renew its token if it expires soon, read its
 * profile, record its health.
 */
export async function syncChannel(orgId: string, channelId: string, now: Date): Promise<SyncResult> {
  return (await syncOne(orgId, channelId, now, null)).result;
}

/**
 * `dueAt`: the index time a message found the channel at; it is looked at only if due by then or by
 * `now` (null: whatever its time).
 */
async function syncOne(
  orgId: string,
  channelId: string,
  now: Date,
  dueAt: string | null,
): Promise<{ result: SyncResult; platform?: Platform; error?: string }> {
  const stored = await getChannelWithSealedCredentials(orgId, channelId);
  const { channel, version } = stored;
  if (!channel || channel.status === 'disconnected') return { result: 'skipped' };
  if (dueAt !== null) {
    // A sync since the message was sent moved next_sync_at past both: nothing to do (no KMS call).
    const due = Date.parse(String(channel.next_sync_at ?? ''));
    const dueBy = Date.parse(dueAt);
    const by = Number.isFinite(dueBy) ? Math.max(now.getTime(), dueBy) : now.getTime();
    if (!(due <= by)) {
      // Its entry should be at next_sync_at; one still where this message found it (written from
      // an older read, or resent) would come back again and again: put it there.
      if (channel.next_sync_at && dueAt)
        await moveSyncEntry(
          {
            ...keys.channel(orgId, channelId),
            orgId,
            id: channelId,
            at: dueAt,
            position: keys.channelSync(dueAt, orgId, channelId).gsi2sk,
          },
          channel.next_sync_at,
        );
      return { result: 'skipped' };
    }
  }
  const credentials = await stored.open();
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
