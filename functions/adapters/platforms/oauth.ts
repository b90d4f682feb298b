import { str } from './support.ts';
import { type Credentials, PlatformError } from './types.ts';

// OAuth 2.0 user tokens as the connectors hold them: a copy of the channel's credentials
// (access_token, refresh_token, expires_at, plus whatever the platform's refresh needs), refreshed
// before use when expires_at is near or past, and at most once per instance — also after a 401.
// Every refresh hands the merged credentials to saveCredentials (refresh tokens often rotate).

export interface OAuthOptions {
  /** Platform name, for messages. */
  platform: string;
  /** Whether these credentials carry what a refresh needs. */
  canRefresh(creds: Credentials): boolean;
  /**
   * The platform's token request: the fields to merge into the credentials, or a PlatformError
   * (auth_expired when the refresh is refused, system/rate_limited when it may work later).
   */
  exchange(creds: Credentials): Promise<Partial<Credentials>>;
  /** Refresh this long before expires_at (default one minute). */
  skewMs?: number;
}

export interface CredentialStore {
  credentials: Credentials;
  saveCredentials(credentials: Credentials): Promise<void>;
}

export class OAuthTokens {
  private creds: Credentials;
  private refreshed = false;

  constructor(
    private readonly opts: OAuthOptions,
    private readonly store: CredentialStore,
  ) {
    this.creds = { ...store.credentials };
  }

  /** Tokens for a channel, refreshed first when they are about to expire. */
  static async open(opts: OAuthOptions, store: CredentialStore): Promise<OAuthTokens> {
    const tokens = new OAuthTokens(opts, store);
    await tokens.ensureFresh();
    return tokens;
  }

  /** The current credentials (after any refresh). */
  get credentials(): Readonly<Credentials> {
    return this.creds;
  }

  get accessToken(): string {
    return str(this.creds.access_token) ?? '';
  }

  get authorization(): string {
    return `Bearer ${this.accessToken}`;
  }

  private get refreshable(): boolean {
    return !this.refreshed && this.opts.canRefresh(this.creds);
  }

  /** Refreshes first when the token expires within the skew and a refresh is possible. */
  async ensureFresh(): Promise<void> {
    const exp = Date.parse(str(this.creds.expires_at) ?? '');
    if (Number.isFinite(exp) && exp <= Date.now() + (this.opts.skewMs ?? 60_000) && this.refreshable)
      await this.refresh();
  }

  /** A fresh access token; auth_expired when the channel has none. */
  async token(): Promise<string> {
    await this.ensureFresh();
    const token = this.accessToken;
    if (!token)
      throw new PlatformError('auth_expired', `${this.opts.platform}: channel has no access_token`, {
        retryable: false,
      });
    return token;
  }

  /** After a 401: refresh once; false when that is not possible (again). */
  async refreshAfter401(): Promise<boolean> {
    if (!this.refreshable) return false;
    await this.refresh();
    return true;
  }

  /** Sends a request (which reads the token itself); after a 401, refreshes once and sends it again. */
  async retrying401<R extends { status: number }>(send: () => Promise<R>): Promise<R> {
    const res = await send();
    if (res.status === 401 && (await this.refreshAfter401())) return send();
    return res;
  }

  private async refresh(): Promise<void> {
    this.refreshed = true;
    const fresh = await this.opts.exchange({ ...this.creds });
    this.creds = { ...this.creds, ...fresh };
    await this.store.saveCredentials({ ...this.creds });
  }
}

/** `expires_at` for a token answer's `expires_in` seconds (nothing when it has none). */
export function expiresAt(expiresIn: unknown): { expires_at?: string } {
  return typeof expiresIn === 'number'
    ? { expires_at: new Date(Date.now() + expiresIn * 1000).toISOString() }
    : {};
}

/** A token answer without a token: worth a retry on a 5xx, else the channel must be connected again. */
export function refreshFailed(platform: string, status: number, detail: string): PlatformError {
  if (status >= 500) return new PlatformError('system', `${platform}: token refresh: ${status} ${detail}`);
  return new PlatformError('auth_expired', `${platform}: token refresh refused: ${status} ${detail}`, {
    status,
    retryable: false,
  });
}
