import { openPending } from '#adapters/channel-connection-secrets';
import { advanceConnection, getConnection } from '#adapters/channel-connections';
import { toChannel } from '#core/accounts';
import { type ConnectionRecord, connectionStatus, toConnection } from '#core/connections';
import { ApiError, notFound, ValidationError } from '#core/errors';
import { isId } from '#core/ids';
import type { Platform } from '#core/platforms';
import { ConnectFailure, connectAccount } from '#usecases/support/channel-connect';

/**
 * selectChannelAccount. Primary course: a session waiting in selecting_account connects the
 * account the person picked among those the grant covers, with the credentials kept sealed for it
 * since the callback, and answers the connected session. An account the grant does not cover (or
 * not the one of the channel being reconnected) is a 400 and changes nothing; a full plan ends the
 * session failed (409).
 */
export async function selectChannelAccount(
  orgId: string,
  id: string,
  accountId: string,
  now: Date,
  admitted: () => Promise<unknown>,
) {
  if (!isId('connection', id)) throw notFound('connection');
  const session = await getConnection(orgId, id);
  if (!session) throw notFound('connection');
  const { rec } = session;
  const status = connectionStatus(rec, now.getTime());
  if (status !== 'selecting_account')
    throw new ApiError('resource_conflict', `The connection is ${status}, not selecting an account.`);
  // The grant is opened (KMS) only for an admitted request; the gate started before the read above.
  await admitted();
  const pending = await openPending(rec, session.pending);
  const credentials = pending?.grants?.[accountId];
  const shown = rec.accounts?.find((a) => a.id === accountId);
  if (!credentials || !shown)
    throw new ValidationError([
      { pointer: '/account_id', code: 'unknown_account', message: 'The grant does not cover this account.' },
    ]);
  // The profile as the callback read it from the platform, with the credentials for this account.
  const account = { ...shown, type: shown.type as 'user', credentials };
  try {
    const channel = await connectAccount({
      orgId,
      platform: rec.platform as Platform,
      account,
      connectionId: rec.id,
      reconnect: rec.channel_id,
      session: { rec, from: 'selecting_account' },
      grantedScopes: pending?.scopes ?? null,
      now,
    });
    const done: ConnectionRecord = {
      ...rec,
      status: 'connected',
      channel_id: channel.id,
      updated_at: now.toISOString(),
    };
    return toConnection(done, now.getTime(), toChannel(channel));
  } catch (err) {
    if (!(err instanceof ConnectFailure)) throw err;
    if (err.code === 'account_mismatch')
      throw new ValidationError([{ pointer: '/account_id', code: 'account_mismatch', message: err.message }]);
    await advanceConnection(
      rec,
      'selecting_account',
      { status: 'failed', error: { code: err.code, message: err.message }, updated_at: now.toISOString() },
      null,
    );
    throw new ApiError('resource_conflict', err.message);
  }
}
