import { completeConnectionItem } from '#adapters/channel-connections';
import { ChannelLimitError, ConnectRaceError, saveConnectedChannel } from '#adapters/channel-credentials';
import { channelOfAccount, getChannel } from '#adapters/channels';
import type { OAuthApp } from '#adapters/oauth';
import { getOrg } from '#adapters/orgs';
import {
  getInstanceApp,
  getInstanceAppInfo,
  getPlatformApp,
  getPlatformAppInfo,
  keepInstanceApp,
} from '#adapters/platform-apps';
import { connectFor, type OAuthConnect, type PlatformAccount } from '#adapters/platforms/connect-registry';
import { request } from '#adapters/platforms/http';
import { ForbiddenOriginError, PlatformError } from '#adapters/platforms/types';
import { userOriginFetch } from '#adapters/platforms/user-origin';
import type { ChannelRecord } from '#core/accounts';
import type { ConnectionAccount, ConnectionFailure, ConnectionRecord } from '#core/connections';
import { ApiError } from '#core/errors';
import { newId } from '#core/ids';
import { effectiveLimits } from '#core/plans';
import type { Platform } from '#core/platforms';
import { localSeconds } from '#shared/config';

// What every way of connecting a channel shares (API sessions, the OAuth callback, account
// selection, credentials pasted into the CLI): the app a session authorizes with, the checks of a
// grant, and the one write that makes a channel live — new, reconnected in place, or an account
// connected before (which reconnects its channel rather than making a second one).

/** A session ended for a reason the person or client can act on (the session's `error`). */
export class ConnectFailure extends Error {
  constructor(
    readonly code: ConnectionFailure,
    message: string,
  ) {
    super(message);
    this.name = 'ConnectFailure';
  }
}

/** Profiles are read again daily; tokens are renewed ahead of expiry (below). */
const PROFILE_SYNC_MS = 24 * 3600_000;
const MIN_SYNC_MS = 30_000;

/**
 * When the channel sync should look at a channel next: in a day for its profile, or earlier to
 * renew its access token — half its remaining life before it expires, at most 30 minutes before.
 */
export function nextSyncAt(credentials: Record<string, unknown>, now: Date): string {
  const profile =
    now.getTime() + (localSeconds('HERALD_CHANNEL_SYNC_SECONDS') ?? PROFILE_SYNC_MS / 1000) * 1000;
  const expires = Date.parse(String(credentials.expires_at ?? ''));
  if (!Number.isFinite(expires)) return new Date(profile).toISOString();
  const life = expires - now.getTime();
  const renew = expires - Math.min(30 * 60_000, Math.max(0, life) / 2);
  // Never sooner than 30 s (an expired token does not spin the sync), unless the token lives
  // shorter than a minute: then at half its life.
  const floor = life > 0 ? Math.min(MIN_SYNC_MS, life / 2) : MIN_SYNC_MS;
  return new Date(Math.max(now.getTime() + floor, Math.min(profile, renew))).toISOString();
}

/** The OAuth app a session of `platform` uses: the operator's, or Herald's on the Mastodon instance. */
export async function sessionApp(
  platform: Platform,
  instance: string | null,
  callbackUri: string,
): Promise<OAuthApp | null> {
  if (platform === 'mastodon') {
    const app = instance ? await getInstanceApp(instance) : null;
    return app
      ? { clientId: app.client_id, clientSecret: app.client_secret, redirectUri: app.redirect_uri }
      : null;
  }
  const app = await getPlatformApp(platform);
  return app ? { clientId: app.client_id, clientSecret: app.client_secret, redirectUri: callbackUri } : null;
}

/** The operator's app (its secret left sealed), or the 409 that says the operator has to register one first. */
export async function requirePlatformApp(platform: Platform) {
  const app = await getPlatformAppInfo(platform);
  if (!app)
    throw new ApiError(
      'platform_not_configured',
      `${platform} is not configured on this Herald: the operator registers its app with \`herald platform-app set --platform ${platform}\`.`,
    );
  return app;
}

/**
 * Herald's app on a Mastodon instance, registered there on first use (POST /api/v1/apps). Its
 * `redirect_uri` is the callback sessions use. `callback.configured`: the URI comes from the
 * operator's public URL, not from the request's Host. Raises 502 platform_unavailable when the
 * instance does not answer as a Mastodon instance.
 */
export async function instanceApp(
  instance: string,
  callback: { uri: string; configured: boolean },
  scopes: readonly string[],
  /** The app as the caller already read it (undefined: read it here). */
  knownApp?: Awaited<ReturnType<typeof getInstanceAppInfo>>,
) {
  const callbackUri = callback.uri;
  const known = knownApp === undefined ? await getInstanceAppInfo(instance) : knownApp;
  // Without a configured public URL every host the deployment answers on reaches the callback the
  // app was registered with: keep it, or a deployment reached under two hosts would re-register at
  // each switch. A configured URL that differs means the operator moved the deployment.
  // An app registered before Herald asked for more scopes (the inbox's) cannot grant them: the
  // instance refuses a scope outside its app's, so such an app is registered again.
  const covers = !!known && scopes.every((s) => (known.scopes ?? []).includes(s));
  if (known && covers && (!callback.configured || known.redirect_uri === callbackUri)) return known;
  const res = await request<{ client_id?: string; client_secret?: string }>(
    'mastodon',
    `${instance}/api/v1/apps`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Herald',
        redirect_uris: callbackUri,
        scopes: scopes.join(' '),
      }),
      fetch: userOriginFetch(),
    },
  ).catch((err: Error) => {
    if (err instanceof ForbiddenOriginError) throw err;
    throw new ApiError(
      'platform_unavailable',
      `The instance ${instance} could not be reached: ${err.message}`,
    );
  });
  if (res.status !== 200 || !res.body.client_id || !res.body.client_secret)
    throw new ApiError(
      'platform_unavailable',
      `The instance ${instance} did not register an app (HTTP ${res.status}); is it a Mastodon instance?`,
    );
  return keepInstanceApp(
    {
      instance,
      client_id: res.body.client_id,
      client_secret: res.body.client_secret,
      redirect_uri: callbackUri,
      scopes: [...scopes],
      created_at: new Date().toISOString(),
    },
    callback.configured || (!!known && !covers),
  );
}

/** The scopes to request: the operator's configured ones, else the platform's defaults. */
export function scopesFor(app: { scopes: string[] | null } | null, connect: OAuthConnect): readonly string[] {
  return app?.scopes ?? connect.scopes;
}

/** The required scopes the grant lacks (none when the platform does not say what it granted). */
export function missingScopes(connect: OAuthConnect, granted: string[] | null): string[] {
  if (!granted) return [];
  const have = new Set(granted);
  return connect.required.filter((s) => !have.has(s));
}

export const publicAccount = (a: PlatformAccount): ConnectionAccount => ({
  id: a.id,
  type: a.type,
  handle: a.handle,
  name: a.name,
  avatar_url: a.avatar_url,
  followers: a.followers,
});

/**
 * Makes the channel of `account` live with its credentials, in one transaction with `session`'s
 * completion when a session is being completed: a reconnect in place (`reconnect`), the channel
 * that already posts as this account, or a new channel. `connectionId` is what emits
 * channel.connected: every (re)connection has its own.
 */
export async function connectAccount(args: {
  orgId: string;
  platform: Platform;
  account: PlatformAccount;
  connectionId: string;
  reconnect: string | null;
  session?: { rec: ConnectionRecord; from: ConnectionRecord['status'] };
  /**
   * The scopes the platform reports this grant holds (null: it did not say, or credentials were
   * pasted): recorded on the channel, whose parts that need a grant follow it (core/platforms.ts).
   */
  grantedScopes?: readonly string[] | null;
  now: Date;
}): Promise<ChannelRecord> {
  const org = await getOrg(args.orgId);
  if (!org) throw new ApiError('invalid_api_key', 'The API key is not valid.');
  const limit = effectiveLimits(org.plan, org.limits).channels;
  const at = args.now.toISOString();
  for (let attempt = 0; ; attempt++) {
    const owner = await channelOfAccount(args.orgId, args.platform, args.account.id);
    if (args.reconnect && owner && owner !== args.reconnect)
      throw new ConnectFailure(
        'account_mismatch',
        `This ${args.platform} account is connected as channel ${owner}, not ${args.reconnect}.`,
      );
    const target = args.reconnect ?? owner;
    const previous = target ? await getChannel(args.orgId, target) : null;
    if (args.reconnect && (!previous || previous.platform !== args.platform))
      throw new ConnectFailure(
        'account_mismatch',
        `Channel ${args.reconnect} is not a ${args.platform} channel.`,
      );
    if (previous?.account_id && previous.account_id !== args.account.id)
      throw new ConnectFailure(
        'account_mismatch',
        `Channel ${previous.id} posts as another ${args.platform} account; connect that account to reconnect it.`,
      );
    const channel: ChannelRecord = {
      id: previous?.id ?? newId('channel'),
      org_id: args.orgId,
      platform: args.platform,
      handle: args.account.handle,
      avatar_url: args.account.avatar_url,
      followers: args.account.followers,
      status: 'live',
      last_sync_at: at,
      last_error: null,
      created_at: previous?.created_at ?? at,
      account_id: args.account.id,
      // Every (re)connect replaces it: a reconnect that declined a scope loses what needed it.
      granted_scopes: args.grantedScopes ? [...new Set(args.grantedScopes)].sort() : null,
      connection_id: args.connectionId,
      connected_at: at,
      next_sync_at: nextSyncAt(args.account.credentials, args.now),
      sync_failures: 0,
      updated_at: at,
    };
    try {
      await saveConnectedChannel({
        channel,
        previous,
        credentials: args.account.credentials,
        channelLimit: limit,
        also: args.session
          ? [completeConnectionItem(args.session.rec, args.session.from, channel.id, at)]
          : [],
      });
      return channel;
    } catch (err) {
      if (err instanceof ChannelLimitError)
        throw new ConnectFailure('channel_limit', `The ${org.plan} plan allows ${limit} connected channels.`);
      // A concurrent connection of the same account, or the same session, won: look again once.
      if (err instanceof ConnectRaceError && attempt === 0) continue;
      throw err;
    }
  }
}

/** Whether a PlatformError means "these credentials are refused" (versus "try again later"). */
export const refused = (err: unknown): boolean =>
  err instanceof PlatformError && !err.retryable && err.category !== 'system';

/**
 * The scopes pasted credentials hold, where the platform inspects tokens (Meta's and Threads'
 * debug_token, Google's tokeninfo); null when it cannot say or the look fails: the channel then
 * lacks only the parts that need a recorded grant.
 */
export async function pastedScopes(platform: Platform, credentials: Record<string, unknown>) {
  const connect = await connectFor(platform);
  if (connect.kind !== 'oauth' || !connect.scopesOf || platform === 'mastodon') return null;
  try {
    return await connect.scopesOf(credentials, await sessionApp(platform, null, ''));
  } catch {
    return null;
  }
}

/** Verifies pasted credentials with the platform: the account they post as, from the platform. */
export async function verifyCredentials(platform: Platform, credentials: Record<string, unknown>) {
  const connect = await connectFor(platform);
  const account =
    connect.kind === 'app_password' ? await connect.login(credentials) : await connect.profile(credentials);
  const claimed = credentials.account_id;
  if (typeof claimed === 'string' && claimed !== '' && claimed !== account.id)
    throw new PlatformError(
      'auth_expired',
      `${platform}: the token belongs to account ${account.id}, not ${claimed}`,
      {
        retryable: false,
      },
    );
  return account;
}
