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
import type { Platform } from '#core/platforms';
import { logger } from '#shared/logger';
import { platformAppRefused } from '#shared/metrics';
import {
  ConnectFailure,
  connectAccount,
  missingScopes,
  publicAccount,
  sessionApp,
} from '#usecases/support/channel-connect';
import { revokeUnkept } from '#usecases/support/channel-revoke';

/** Where the callback sends the browser, or the page it shows (no redirect_uri, or no session). */
export type CallbackOutcome =
  | { location: string }
  | { page: { status: number; title: string; message: string } };

/** The shape of the states Herald issues (oauth4webapi: 32 random bytes, base64url). */
const STATE = /^[A-Za-z0-9_-]{16,128}$/;

const UNKNOWN: CallbackOutcome = {
  page: {
    status: 400,
    title: 'Link expired',
    message:
      'This authorization is unknown, expired or was already used. Nothing was connected; start a new connection from the application you came from.',
  },
};

/**
 * oauthCallback. Primary course: the platform sends the person back with `code` and `state`; the
 * state (single use) names the session, which must be awaiting authorization and unexpired. The
 * code is exchanged (with the PKCE verifier), the grant's scopes checked, the accounts it covers
 * read from the platform; one account (or the channel being reconnected) connects at once, several
 * wait for selectChannelAccount. Every outcome ends the browser's trip at the session's redirect_uri
 * (or on a page). A session whose state was taken is always finished: any failure, expected or not,
 * ends it `failed` with a code, and tokens the platform issued that no channel keeps are given back.
 */
export async function oauthCallback(
  platformParam: string,
  query: Record<string, string | undefined>,
  now: Date,
): Promise<CallbackOutcome> {
  const state = query.state;
  // A state Herald could not have issued costs no read and no write.
  const found = state && STATE.test(state) ? await takeState(state) : null;
  const session = found ? await getConnection(found.orgId, found.connectionId) : null;
  if (!state || !found || !session) return UNKNOWN;
  const rec = session.rec;
  if (connectionStatus(rec, now.getTime()) !== 'awaiting_authorization') return outcome(rec, now);

  const run = { tokens: null as TokenSet | null, accounts: [] as PlatformAccount[], kept: false };
  try {
    return await complete(run, platformParam, query, state, session, now);
  } catch (err) {
    logger.error('channel connection failed unexpectedly', {
      connection_id: rec.id,
      platform: rec.platform,
      error: (err as Error).message,
    });
    return fail(run, rec, now, 'server_error', CONNECTION_FAILURES.server_error);
  }
}

type Run = { tokens: TokenSet | null; accounts: PlatformAccount[]; kept: boolean };

async function complete(
  run: Run,
  platformParam: string,
  query: Record<string, string | undefined>,
  state: string,
  session: NonNullable<Awaited<ReturnType<typeof getConnection>>>,
  now: Date,
): Promise<CallbackOutcome> {
  const { rec } = session;
  const failWith = (code: ConnectionFailure, message: string) => fail(run, rec, now, code, message);
  const platform = rec.platform as Platform;
  if (!(PLATFORMS as readonly string[]).includes(platformParam) || platformParam !== platform)
    return failWith(
      'authorization_failed',
      `The callback came for ${platformParam}, the session is for ${platform}.`,
    );
  const connect = (await connectFor(platform)) as OAuthConnect;
  const app = await sessionApp(platform, rec.instance, rec.callback_uri ?? '');
  if (!app) return failWith('authorization_failed', `${platform} is no longer configured on this Herald.`);
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
      return failWith('consent_denied', err.message);
    return failWith('authorization_failed', err.message);
  }
  try {
    run.tokens = await exchangeCode(
      server,
      app,
      code,
      (await openPending(rec, session.pending))?.codeVerifier ?? null,
    );
    if (connect.afterExchange) run.tokens = await connect.afterExchange(run.tokens, app, server);
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err;
    // The operator's app refused (a rotated secret not yet set in Herald): the operator must act.
    if (err.kind === 'client') platformAppRefused(platform, 1, err.message);
    return failWith(err.kind === 'transient' ? 'platform_unavailable' : 'token_exchange_failed', err.message);
  }
  const tokens = run.tokens;

  let granted: string[] | null;
  try {
    granted = tokens.scope ?? (connect.grantedScopes ? await connect.grantedScopes(tokens, app) : null);
    const missing = missingScopes(connect, granted);
    if (missing.length)
      return failWith(
        'missing_scopes',
        `The grant lacks ${missing.join(', ')}; connect again and allow them.`,
      );
    run.accounts = await connect.accounts(tokens, rec.instance ?? undefined);
  } catch (err) {
    if (!(err instanceof PlatformError)) throw err;
    return failWith(err.retryable ? 'platform_unavailable' : 'authorization_failed', err.message);
  }
  const accounts = run.accounts;
  if (!accounts.length) return failWith('no_accounts', CONNECTION_FAILURES.no_accounts);

  // Reconnecting: the channel's own account, if the grant covers it, needs no choosing.
  const current = rec.channel_id ? await getChannel(rec.org_id, rec.channel_id) : null;
  const chosen =
    accounts.length === 1
      ? accounts[0]
      : accounts.find((a) => current?.account_id && a.id === current.account_id);
  if (!chosen) {
    const pending: Pending = {
      grants: Object.fromEntries(accounts.map((a) => [a.id, a.credentials])),
      scopes: granted,
    };
    const selecting: Partial<ConnectionRecord> = {
      status: 'selecting_account',
      accounts: accounts.map(publicAccount),
      updated_at: now.toISOString(),
    };
    // The grant is kept (sealed) for the choice; if the choice never comes, the channel sync
    // revokes and erases it once the session expires (usecases/channel-sync-worker.ts).
    const sealed = await sealPending(rec, pending);
    if (
      !(await advanceConnection(rec, 'awaiting_authorization', selecting, sealed, {
        cleanupAt: rec.expires_at,
      }))
    )
      throw new Error('the session changed while its callback ran');
    run.kept = true;
    return outcome({ ...rec, ...selecting } as ConnectionRecord, now);
  }
  try {
    const channel = await connectAccount({
      orgId: rec.org_id,
      platform,
      account: chosen,
      connectionId: rec.id,
      reconnect: rec.channel_id,
      session: { rec, from: 'awaiting_authorization' },
      grantedScopes: granted,
      now,
    });
    run.kept = true;
    return outcome({ ...rec, status: 'connected', channel_id: channel.id }, now);
  } catch (err) {
    if (err instanceof ConnectFailure) return failWith(err.code, err.message);
    throw err;
  }
}

/** Ends the session failed (tokens it obtained and no channel keeps are given back) and says so. */
async function fail(
  run: Run,
  rec: ConnectionRecord,
  now: Date,
  code: ConnectionFailure,
  message: string,
): Promise<CallbackOutcome> {
  logger.warn('channel connection failed', { connection_id: rec.id, platform: rec.platform, code, message });
  const failed: Partial<ConnectionRecord> = {
    status: 'failed',
    error: { code, message: message.slice(0, 500) || CONNECTION_FAILURES[code] },
    updated_at: now.toISOString(),
  };
  const after = { ...rec, ...failed } as ConnectionRecord;
  try {
    if (run.tokens && !run.kept) {
      const grants = run.accounts.length ? run.accounts.map((a) => a.credentials) : [run.tokens];
      await revokeUnkept(rec.platform, grants as Array<Record<string, unknown>>, rec.id);
    }
    await advanceConnection(rec, 'awaiting_authorization', failed, null);
  } catch (err) {
    // Not even the failure could be written: the person is told; the session expires on its own.
    logger.error('a failed channel connection could not be recorded', {
      connection_id: rec.id,
      error: (err as Error).message,
    });
    return {
      page: {
        status: 500,
        title: 'Not connected',
        message: `${CONNECTION_FAILURES.server_error} (reference ${rec.id})`,
      },
    };
  }
  return outcome(after, now);
}

function outcome(r: ConnectionRecord, now: Date): CallbackOutcome {
  const to = landing(r, now.getTime());
  if (to) return { location: to };
  const status = connectionStatus(r, now.getTime());
  return {
    page: {
      status: 200,
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
}
