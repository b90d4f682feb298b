import { openPending, sealPending } from '#adapters/channel-connection-secrets';
import { advanceConnection, getConnection, type Pending, takeState } from '#adapters/channel-connections';
import { getChannel } from '#adapters/channels';
import { callbackCode, exchangeCode, OAuthError, type TokenSet } from '#adapters/oauth';
import { connectFor, type OAuthConnect, type PlatformAccount } from '#adapters/platforms/connect-registry';
import { PlatformError } from '#adapters/platforms/types';
import {
  CONNECTION_FAILURES,
  type ConnectionFailure,
  type ConnectionRecord,
  connectionStatus,
  landing,
} from '#core/connections';
import { PLATFORMS } from '#core/constants';
import { ApiError } from '#core/errors';
import type { Platform } from '#core/platforms';
import { logger } from '#shared/logger';
import {
  ConnectFailure,
  connectAccount,
  missingScopes,
  publicAccount,
  sessionApp,
} from '#usecases/support/channel-connect';

/** Where the callback sends the browser, or the page it shows when the session has no redirect_uri. */
export type CallbackOutcome = { location: string } | { page: { title: string; message: string } };

/**
 * oauthCallback. Primary course: the platform sends the person back with `code` and `state`; the
 * state (single use) names the session, which must be awaiting authorization and unexpired. The
 * code is exchanged (with the PKCE verifier), the grant's scopes checked, the accounts it covers
 * read from the platform; one account (or the channel being reconnected) connects at once, several
 * wait for selectChannelAccount. Every outcome ends the browser's trip at the session's redirect_uri.
 */
export async function oauthCallback(
  platformParam: string,
  query: Record<string, string | undefined>,
  now: Date,
) {
  const state = query.state;
  if (!state) throw new ApiError('invalid_request', 'The callback carries no state.');
  const found = await takeState(state);
  const session = found ? await getConnection(found.orgId, found.connectionId) : null;
  if (!found || !session)
    throw new ApiError(
      'invalid_request',
      'This authorization is unknown, expired or was already used; start a new connection.',
    );
  let rec = session.rec;
  const outcome = (r: ConnectionRecord): CallbackOutcome => {
    const to = landing(r, now.getTime());
    if (to) return { location: to };
    const status = connectionStatus(r, now.getTime());
    return {
      page: {
        title:
          status === 'connected'
            ? 'Connected'
            : status === 'selecting_account'
              ? 'Almost there'
              : 'Not connected',
        message:
          status === 'connected'
            ? 'The account is connected to Herald. You can close this window.'
            : status === 'selecting_account'
              ? 'Choose the account to connect in the application that started this.'
              : (r.error?.message ?? `The connection is ${status}.`),
      },
    };
  };
  if (connectionStatus(rec, now.getTime()) !== 'awaiting_authorization') return outcome(rec);

  const fail = async (code: ConnectionFailure, message: string) => {
    logger.warn('channel connection failed', {
      connection_id: rec.id,
      platform: rec.platform,
      code,
      message,
    });
    const failed: Partial<ConnectionRecord> = {
      status: 'failed',
      error: { code, message: message.slice(0, 500) || CONNECTION_FAILURES[code] },
      updated_at: now.toISOString(),
    };
    await advanceConnection(rec, 'awaiting_authorization', failed, null);
    return outcome({ ...rec, ...failed } as ConnectionRecord);
  };

  const platform = rec.platform as Platform;
  if (!(PLATFORMS as readonly string[]).includes(platformParam) || platformParam !== platform)
    return fail(
      'authorization_failed',
      `The callback came for ${platformParam}, the session is for ${platform}.`,
    );
  const connect = (await connectFor(platform)) as OAuthConnect;
  const app = await sessionApp(platform, rec.instance, rec.callback_uri ?? '');
  if (!app) return fail('authorization_failed', `${platform} is no longer configured on this Herald.`);
  const server = connect.server(rec.instance ?? undefined);

  let code: URLSearchParams;
  try {
    const params = new URLSearchParams(
      Object.entries(query).filter((e): e is [string, string] => typeof e[1] === 'string'),
    );
    code = callbackCode(server, app, params, state);
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err;
    if (/^(access_denied|user_cancelled_\w+|consent_required)$/.test(err.code))
      return fail('consent_denied', err.message);
    return fail('authorization_failed', err.message);
  }
  let tokens: TokenSet;
  try {
    tokens = await exchangeCode(
      server,
      app,
      code,
      (await openPending(rec, session.pending))?.codeVerifier ?? null,
    );
    if (connect.afterExchange) tokens = await connect.afterExchange(tokens, app, server);
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err;
    return fail(err.kind === 'transient' ? 'platform_unavailable' : 'token_exchange_failed', err.message);
  }

  let accounts: PlatformAccount[];
  try {
    const granted = tokens.scope ?? (connect.grantedScopes ? await connect.grantedScopes(tokens) : null);
    const missing = missingScopes(connect, granted);
    if (missing.length)
      return fail('missing_scopes', `The grant lacks ${missing.join(', ')}; connect again and allow them.`);
    accounts = await connect.accounts(tokens, rec.instance ?? undefined);
  } catch (err) {
    if (!(err instanceof PlatformError)) throw err;
    return fail(err.retryable ? 'platform_unavailable' : 'authorization_failed', err.message);
  }
  if (!accounts.length) return fail('no_accounts', CONNECTION_FAILURES.no_accounts);

  // Reconnecting: the channel's own account, if the grant covers it, needs no choosing.
  const current = rec.channel_id ? await getChannel(rec.org_id, rec.channel_id) : null;
  const chosen =
    accounts.length === 1
      ? accounts[0]
      : accounts.find((a) => current?.account_id && a.id === current.account_id);
  if (!chosen) {
    const pending: Pending = { grants: Object.fromEntries(accounts.map((a) => [a.id, a.credentials])) };
    const selecting: Partial<ConnectionRecord> = {
      status: 'selecting_account',
      accounts: accounts.map(publicAccount),
      updated_at: now.toISOString(),
    };
    await advanceConnection(rec, 'awaiting_authorization', selecting, await sealPending(rec, pending));
    rec = { ...rec, ...selecting } as ConnectionRecord;
    return outcome(rec);
  }
  try {
    const channel = await connectAccount({
      orgId: rec.org_id,
      platform,
      account: chosen,
      connectionId: rec.id,
      reconnect: rec.channel_id,
      session: { rec, from: 'awaiting_authorization' },
      now,
    });
    return outcome({ ...rec, status: 'connected', channel_id: channel.id });
  } catch (err) {
    if (err instanceof ConnectFailure) return fail(err.code, err.message);
    throw err;
  }
}
