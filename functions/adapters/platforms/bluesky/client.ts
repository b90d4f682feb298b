import { type HttpResponse, request, type StreamBody } from '../http.ts';
import { type Credentials, PlatformError } from '../types.ts';
import { UPLOAD_REQUEST_MS } from '../upload.ts';
import { userOriginFetch } from '../user-origin.ts';
import { errorName, scopeRefusal, TOKEN_ERRORS, xrpcError } from './errors.ts';

// XRPC on the account's PDS, the origin in the channel credentials (`service`, default
// https://bsky.social). The channel holds an app password, not tokens: we open a session
// (com.atproto.server.createSession), keep it in memory for the container's life because
// createSession is tightly rate limited, refresh it (refreshSession) once when the PDS says the access
// token expired, and fall back to a new session when the refresh token is gone too. The PDS is the
// user's choice, so every call goes through the address-checked fetch.

export interface SessionData {
  did: string;
  handle: string;
  accessJwt: string;
  refreshJwt: string;
}

const sessions = new Map<string, SessionData>();

/**
 * The access token's `scope` claim (the PDS's JWTs): `com.atproto.appPassPrivileged` for an app
 * password allowed to read and send direct messages, `com.atproto.appPass` for the others,
 * `com.atproto.access` for the account's own password. null when the token is not a readable JWT.
 */
export function sessionScope(session: Pick<SessionData, 'accessJwt'>): string | null {
  const payload = session.accessJwt.split('.')[1];
  if (!payload) return null;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { scope?: unknown };
    return typeof claims.scope === 'string' ? claims.scope : null;
  } catch {
    return null;
  }
}

function credentialsOf(creds: Credentials) {
  const service = String(creds.service ?? 'https://bsky.social').replace(/\/+$/, '');
  const identifier = String(creds.identifier ?? '');
  const password = String(creds.app_password ?? '');
  if (!identifier || !password)
    throw new PlatformError('auth_expired', 'bluesky: channel has no identifier/app_password', {
      retryable: false,
    });
  return { service, identifier, password };
}

export class Client {
  private readonly service: string;
  private readonly identifier: string;
  private readonly password: string;
  private readonly key: string;

  constructor(creds: Credentials) {
    const c = credentialsOf(creds);
    this.service = c.service;
    this.identifier = c.identifier;
    this.password = c.password;
    this.key = `${c.service}|${c.identifier}`;
  }

  async session(): Promise<SessionData> {
    return sessions.get(this.key) ?? this.login();
  }

  /** Ends the session (com.atproto.server.deleteSession with the refresh token), if one is open. */
  async logout(): Promise<void> {
    const session = sessions.get(this.key);
    sessions.delete(this.key);
    if (!session) return;
    await request('bluesky', `${this.service}/xrpc/com.atproto.server.deleteSession`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session.refreshJwt}` },
      fetch: userOriginFetch(),
    });
  }

  async login(): Promise<SessionData> {
    sessions.delete(this.key);
    const nsid = 'com.atproto.server.createSession';
    const res = await request<SessionData>('bluesky', `${this.service}/xrpc/${nsid}`, {
      method: 'POST',
      json: { identifier: this.identifier, password: this.password },
      fetch: userOriginFetch(),
    });
    if (res.status !== 200) throw xrpcError(res, nsid);
    sessions.set(this.key, res.body);
    return res.body;
  }

  /** refreshSession once; when the refresh token is dead too, a fresh login with the app password. */
  private async renew(stale: SessionData): Promise<SessionData> {
    const nsid = 'com.atproto.server.refreshSession';
    const res = await request<SessionData>('bluesky', `${this.service}/xrpc/${nsid}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stale.refreshJwt}` },
      fetch: userOriginFetch(),
    });
    if (res.status === 200 && res.body.accessJwt) {
      const next = { ...stale, ...res.body };
      sessions.set(this.key, next);
      return next;
    }
    if (res.status === 429 || res.status >= 500) throw xrpcError(res, nsid);
    return this.login();
  }

  /** One XRPC call with the session's access token; an expired/invalid token is renewed once. */
  async call<T>(
    nsid: string,
    init: {
      method?: 'GET' | 'POST';
      query?: Record<string, string | string[]>;
      body?: unknown;
      /** The blob, streamed. */
      raw?: StreamBody;
      media?: boolean;
      /** e.g. `atproto-proxy`, for a service the PDS forwards the call to (the chat service). */
      headers?: Record<string, string>;
    },
  ): Promise<HttpResponse<T>> {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(init.query ?? {})) for (const item of [v].flat()) qs.append(k, item);
    const url = `${this.service}/xrpc/${nsid}${qs.size ? `?${qs}` : ''}`;
    let session = await this.session();
    for (let attempt = 0; ; attempt++) {
      const res = await request<T>('bluesky', url, {
        method: init.method ?? 'GET',
        headers: { ...init.headers, authorization: `Bearer ${session.accessJwt}` },
        json: init.raw ? undefined : init.body,
        ...(init.raw ? { stream: init.raw } : {}),
        timeoutMs: init.raw ? UPLOAD_REQUEST_MS : undefined,
        fetch: userOriginFetch(),
      });
      // "Bad token method/scope": the session is fine, this password may not make the call.
      if (attempt === 0 && TOKEN_ERRORS.has(errorName(res)) && !scopeRefusal(res)) {
        session = await this.renew(session);
        continue;
      }
      return res;
    }
  }

  async ok<T>(nsid: string, init: Parameters<Client['call']>[1]): Promise<T> {
    const res = await this.call<T>(nsid, init);
    if (res.status !== 200) throw xrpcError(res, nsid, init.media);
    return res.body;
  }
}
