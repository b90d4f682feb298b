import {
  type Credentials,
  type Lease,
  leaseCredentials,
  readCredentials,
  releaseLease,
  saveLeasedCredentials,
} from '#adapters/channel-credentials';
import { type OAuthApp, OAuthError, refreshTokens } from '#adapters/oauth';
import { getPlatformApp } from '#adapters/platform-apps';
import { connectFor, type OAuthConnect } from '#adapters/platforms/connect-registry';
import { PlatformError, type TokenSource } from '#adapters/platforms/types';
import type { Platform } from '#core/platforms';
import { logger } from '#shared/logger';

// A channel's tokens while the delivery worker, the engagement sync or the channel sync use them:
// the one place a channel's access token is renewed (the connectors only ask). A refresh takes the
// credentials' lease first, so of two processes that want to refresh at once exactly one spends the
// refresh token — which X, TikTok and Pinterest rotate, so spending it twice would lose the grant —
// and the other waits for the new tokens. The lease is granted only at the version the refresher
// read (so the refresh token it spends is the stored one), and its result is kept only if written:
// the write is conditioned on that version, so rotated tokens never live only in memory.
// A refresh answer without a refresh token keeps the old one.
//
// What a refusal means is core/channel-health.ts's: the grant refused → auth_expired (the person
// must reconnect); the operator's app refused → system, marked `operator`; the platform down → system.

/** Longer than a refresh can take (the OAuth client's 15 s timeout, sealing, the write). */
const LEASE_MS = 45_000;
const WAIT_MS = 10_000;
const SKEW_MS = 60_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Where a channel's credentials live: the table (leases, versions), or memory in tests. */
export interface CredentialStore {
  lease(version: number, leaseMs: number): Promise<Lease | null>;
  read(): Promise<{ credentials: Credentials; version: number }>;
  /** Writes version + 1 if the stored version is still `version`; false otherwise. */
  save(version: number, credentials: Credentials): Promise<boolean>;
  release(lease: Lease): Promise<void>;
}

export function tableStore(orgId: string, channelId: string): CredentialStore {
  return {
    lease: (version, leaseMs) => leaseCredentials(orgId, channelId, version, leaseMs),
    read: () => readCredentials(orgId, channelId),
    save: (version, credentials) => saveLeasedCredentials(orgId, channelId, version, credentials),
    release: (lease) => releaseLease(orgId, channelId, lease),
  };
}

/** The operator's app of the platform (client id and secret), as a refresh needs it. */
async function platformApp(platform: Platform): Promise<OAuthApp | null> {
  const app = await getPlatformApp(platform);
  return app
    ? { clientId: app.client_id, clientSecret: app.client_secret, redirectUri: app.redirect_uri }
    : null;
}

export interface ChannelTokenArgs {
  orgId: string;
  channelId: string;
  platform: Platform;
  credentials: Credentials;
  version: number;
  /** Every version of the credentials seen, for redacting errors. */
  remember?(credentials: Credentials): unknown;
  /** Default: the table. */
  store?: CredentialStore;
  /** Default: the operator's platform app. */
  app?: (platform: Platform) => Promise<OAuthApp | null>;
}

export function channelTokens(args: ChannelTokenArgs): TokenSource & {
  /** Renews now whatever the expiry says (the channel sync ahead of expiry); false when it cannot. */
  refresh(): Promise<boolean>;
  readonly version: number;
  /** Once a renewal was wanted and impossible: why, and what would help (for last_error). */
  readonly unrenewable: string | null;
  /** A failure's message, with what would help when the token was refused and cannot be renewed. */
  explain(err: PlatformError): string;
} {
  const store = args.store ?? tableStore(args.orgId, args.channelId);
  const appOf = args.app ?? platformApp;
  const platform = args.platform;
  let credentials = args.credentials;
  let version = args.version;
  let used = false;
  let how: ReturnType<typeof renewal> | undefined;
  let unrenewable: string | null = null;
  const adopt = (c: Credentials, v: number) => {
    credentials = c;
    version = v;
    args.remember?.(c);
  };

  /** How this channel's token is renewed, or why it cannot be (the message says what would help). */
  async function renewal(): Promise<
    { connect: OAuthConnect; app: OAuthApp; why: null } | { connect: null; app: null; why: string }
  > {
    const connect = await connectFor(platform);
    const none = (why: string) => ({ connect: null, app: null, why });
    if (connect.kind !== 'oauth' || !connect.refresh)
      return none(`${platform} tokens are renewed only by connecting the channel again`);
    if (connect.refresh === 'oauth' && typeof credentials.refresh_token !== 'string')
      return none('the channel has no refresh token; connect it again');
    const app = await appOf(platform);
    if (!app)
      return none(
        `no ${platform} platform app is configured, so Herald cannot renew the token (the operator registers it with herald platform-app set --platform ${platform}; then connect the channel again)`,
      );
    return { connect, app, why: null };
  }

  /**
   * The grant was refused: unless another process renewed meanwhile (then its tokens are used).
   * `waitMs`: a refresher whose lease ran out may still be saving the rotated tokens that made the
   * platform refuse ours; give it that long.
   */
  async function renewedElsewhere(waitMs = 0): Promise<boolean> {
    for (let waited = 0; ; waited += 250) {
      const now = await store.read();
      if (now.version !== version && now.credentials.access_token) {
        adopt(now.credentials, now.version);
        return true;
      }
      if (waited >= waitMs) return false;
      await sleep(250);
    }
  }

  async function refreshWith(connect: OAuthConnect, app: OAuthApp): Promise<boolean> {
    const started = Date.now();
    for (;;) {
      const lease = await store.lease(version, LEASE_MS);
      if (!lease) {
        // Another process refreshed (a newer version), or is refreshing (a live lease): use its tokens.
        const now = await store.read();
        if (now.version !== version) {
          if (!now.credentials.access_token) throw disconnected();
          adopt(now.credentials, now.version);
          return true;
        }
        if (Date.now() - started > WAIT_MS)
          throw new PlatformError('system', `${platform}: a token refresh elsewhere did not finish`);
        await sleep(250);
        continue;
      }
      let next: Credentials;
      try {
        // The lease is granted only at the version these credentials were read at, so the refresh
        // token spent here is the stored one: the lease's condition is the re-read.
        const server = connect.server();
        const tokens =
          connect.refresh === 'oauth'
            ? await refreshTokens(server, app, String(credentials.refresh_token))
            : await (connect.refresh as Exclude<typeof connect.refresh, 'oauth' | undefined>)(
                credentials,
                app,
                server,
              );
        next = {
          ...credentials,
          access_token: tokens.access_token,
          // Never overwrite a refresh token with none: platforms that do not rotate omit it.
          ...(tokens.refresh_token ? { refresh_token: tokens.refresh_token } : {}),
        };
        if (tokens.expires_at) next.expires_at = tokens.expires_at;
        else delete next.expires_at;
        args.remember?.(next);
      } catch (err) {
        await store.release(lease);
        if (!(err instanceof OAuthError)) throw err;
        if (err.kind === 'grant' && (await renewedElsewhere(lease.displaced ? WAIT_MS : 0))) return true;
        throw refusal(err);
      }
      if (await store.save(version, next)) {
        adopt(next, version + 1);
        return true;
      }
      // Someone wrote a newer version meanwhile (a reconnect, or a refresh after our lease ran
      // out): the stored credentials win; ours were never written, so they are not used.
      logger.error('a token refresh lost its race; using the stored credentials', {
        channel_id: args.channelId,
        platform,
      });
      if (await renewedElsewhere()) return true;
      throw disconnected();
    }
  }

  const disconnected = () =>
    new PlatformError('auth_expired', `${platform}: the channel was disconnected`, { retryable: false });

  function refusal(err: OAuthError): PlatformError {
    const status = err.status ? { status: err.status } : {};
    if (err.kind === 'grant')
      return new PlatformError('auth_expired', `${platform}: token refresh refused: ${err.message}`, {
        retryable: false,
        ...status,
      });
    if (err.kind === 'client')
      return new PlatformError(
        'system',
        `${platform}: the platform refused Herald's app while renewing the token (${err.message}); the operator must check the ${platform} platform app (herald platform-app set)`,
        { retryable: true, operator: true, ...status },
      );
    return new PlatformError('system', `${platform}: token refresh failed: ${err.message}`, {
      retryable: true,
      ...status,
    });
  }

  /** Renews once per source; false when already tried. `need`: why a renewal is wanted. */
  async function renew(need: 'expiring' | 'refused' | 'ahead'): Promise<boolean> {
    if (used) return false;
    how ??= renewal();
    const { connect, app, why } = await how;
    if (connect) {
      used = true;
      return refreshWith(connect, app);
    }
    unrenewable = why;
    // A token that still works is used until the platform refuses it; a refused one is reported
    // by the connector with the platform's words (and `unrenewable` says what would help).
    if (need !== 'expiring' || !expired()) return false;
    throw new PlatformError(
      'auth_expired',
      `${platform}: the access token expired and cannot be renewed: ${why}`,
      {
        retryable: false,
      },
    );
  }

  const expiresAt = () => Date.parse(String(credentials.expires_at ?? ''));
  const expiring = () => {
    const at = expiresAt();
    return Number.isFinite(at) && at <= Date.now() + SKEW_MS;
  };
  const expired = () => {
    const at = expiresAt();
    return Number.isFinite(at) && at <= Date.now();
  };

  return {
    get credentials() {
      return credentials;
    },
    get version() {
      return version;
    },
    get unrenewable() {
      return unrenewable;
    },
    explain: (err) =>
      err.category === 'auth_expired' && unrenewable ? `${err.message} (${unrenewable})` : err.message,
    async accessToken() {
      if (expiring() && !used) await renew('expiring');
      const token = credentials.access_token;
      if (typeof token !== 'string' || !token)
        throw new PlatformError('auth_expired', `${platform}: the channel has no access token`, {
          retryable: false,
        });
      return token;
    },
    refreshAfter401: () => renew('refused'),
    refresh: () => renew('ahead'),
  };
}
