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
import { connectFor } from '#adapters/platforms/connect-registry';
import { PlatformError, type TokenSource } from '#adapters/platforms/types';
import type { Platform } from '#core/platforms';
import { logger } from '#shared/logger';

// A channel's tokens while the delivery worker, the engagement sync or the channel sync use them:
// the one place a channel's access token is renewed (the connectors only ask). A refresh takes the
// credentials' lease first, so of two processes that want to refresh at once exactly one spends the
// refresh token — which X, TikTok and Pinterest rotate, so spending it twice would lose the grant —
// and the other waits for the new tokens. A refresh answer without a refresh token keeps the old one.

const LEASE_MS = 30_000;
const WAIT_MS = 10_000;
const SKEW_MS = 60_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Where a channel's credentials live: the table (leases, versions), or memory in tests. */
export interface CredentialStore {
  lease(version: number, leaseMs: number): Promise<Lease | null>;
  read(): Promise<{ credentials: Credentials; version: number }>;
  save(lease: Lease, credentials: Credentials): Promise<boolean>;
  release(lease: Lease): Promise<void>;
}

export function tableStore(orgId: string, channelId: string): CredentialStore {
  return {
    lease: (version, leaseMs) => leaseCredentials(orgId, channelId, version, leaseMs),
    read: () => readCredentials(orgId, channelId),
    save: (lease, credentials) => saveLeasedCredentials(orgId, channelId, lease, credentials),
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
} {
  const store = args.store ?? tableStore(args.orgId, args.channelId);
  const appOf = args.app ?? platformApp;
  let credentials = args.credentials;
  let version = args.version;
  let used = false;
  const adopt = (c: Credentials, v: number) => {
    credentials = c;
    version = v;
    args.remember?.(c);
  };

  const refreshable = async () => {
    const connect = await connectFor(args.platform);
    if (connect.kind !== 'oauth' || !connect.refresh) return null;
    if (connect.refresh === 'oauth' && typeof credentials.refresh_token !== 'string') return null;
    return connect;
  };

  async function refresh(): Promise<boolean> {
    if (used) return false;
    used = true;
    const connect = await refreshable();
    if (!connect) return false;
    const started = Date.now();
    for (;;) {
      const lease = await store.lease(version, LEASE_MS);
      if (!lease) {
        // Another process refreshed (a newer version), or is refreshing (a live lease): use its tokens.
        const now = await store.read();
        if (now.version !== version) {
          adopt(now.credentials, now.version);
          return true;
        }
        if (Date.now() - started > WAIT_MS)
          throw new PlatformError('system', `${args.platform}: a token refresh elsewhere did not finish`);
        await sleep(250);
        continue;
      }
      try {
        const app = await appOf(args.platform);
        if (!app)
          throw new PlatformError(
            'system',
            `${args.platform}: the platform app is not configured (herald platform-app set), so tokens cannot be renewed`,
            { retryable: false },
          );
        const server = connect.server();
        const tokens =
          connect.refresh === 'oauth'
            ? await refreshTokens(server, app, String(credentials.refresh_token))
            : await (connect.refresh as Exclude<typeof connect.refresh, 'oauth' | undefined>)(
                credentials,
                app,
                server,
              );
        const next: Credentials = {
          ...credentials,
          access_token: tokens.access_token,
          // Never overwrite a refresh token with none: platforms that do not rotate omit it.
          ...(tokens.refresh_token ? { refresh_token: tokens.refresh_token } : {}),
        };
        if (tokens.expires_at) next.expires_at = tokens.expires_at;
        else delete next.expires_at;
        args.remember?.(next);
        if (!(await store.save(lease, next)))
          logger.error('token refresh outlived its lease; another process may have refreshed too', {
            channel_id: args.channelId,
            platform: args.platform,
          });
        adopt(next, version + 1);
        return true;
      } catch (err) {
        await store.release(lease);
        if (err instanceof OAuthError)
          throw new PlatformError(
            err.kind === 'rejected' ? 'auth_expired' : 'system',
            `${args.platform}: token refresh ${err.kind === 'rejected' ? 'refused' : 'failed'}: ${err.message}`,
            { retryable: err.kind !== 'rejected', ...(err.status ? { status: err.status } : {}) },
          );
        throw err;
      }
    }
  }

  const expiring = () => {
    const at = Date.parse(String(credentials.expires_at ?? ''));
    return Number.isFinite(at) && at <= Date.now() + SKEW_MS;
  };

  return {
    get credentials() {
      return credentials;
    },
    get version() {
      return version;
    },
    async accessToken() {
      if (expiring() && !used) await refresh();
      const token = credentials.access_token;
      if (typeof token !== 'string' || !token)
        throw new PlatformError('auth_expired', `${args.platform}: the channel has no access token`, {
          retryable: false,
        });
      return token;
    },
    refreshAfter401: refresh,
    refresh,
  };
}
