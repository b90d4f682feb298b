import { createHash, randomBytes } from 'node:crypto';
import { PLATFORMS, type Platform } from '#core/platforms';
import type { FakeRequest, FakeResponse } from './server.ts';

// The authorization-server half every OAuth fake shares: registered apps, fake users, the consent
// (authorization) endpoint, one-time codes bound to client, redirect_uri and PKCE challenge, grants
// with their access and refresh tokens, expiry, rotation and revocation. Each platform's fake builds
// its documented token, refresh, revoke and profile answers on top of one FakeOAuth.
//
// Consent is never interactive: a GET of the authorization endpoint answers the redirect the user's
// "Allow" would cause. Fake-only query parameters on that GET decide what the user does, per request, so
// parallel tests never share state:
//   fake_consent=deny              the user refuses (the platform's documented error redirect)
//   fake_consent=partial           the user grants every requested scope but the publishing ones
//   fake_decline=<a,b>             the user unticks these requested scopes (comma- or space-separated)
//   fake_user=<name>               the user who consents (created on first use; default: the fake's
//                                  existing default account, so existing tests keep their ids)
//   fake_token_lifetime=<seconds>  access tokens of this grant, and of its refreshes, expire that soon
//
// Every registered app accepts any absolute redirect_uri as registered (tests run on random ports),
// except Mastodon's dynamically registered apps, which are held to the redirect_uris they registered.
// Codes live 10 minutes and work once; a replayed code is refused and, as RFC 6749 §4.1.2 asks, kills
// the grant issued with it. Revoking any token of a grant kills the whole grant.

/** The app registered with every OAuth fake. Mastodon registers apps dynamically (POST /api/v1/apps)
 * and Bluesky uses app passwords: their entries exist so the record covers every Platform, but
 * neither fake knows them. TikTok calls the id `client_key`. */
export const FAKE_APPS = Object.fromEntries(
  PLATFORMS.map((p) => [p, { clientId: `herald-${p}-app`, clientSecret: `herald-${p}-secret` }]),
) as Record<Platform, { clientId: string; clientSecret: string }>;

export const CODE_TTL_MS = 10 * 60_000;

export interface FakeUser {
  /** The fake_user name (`default` for the fake's default account). */
  name: string;
  /** The platform's id of the user (numeric string, URN id, open_id, channel id…). */
  id: string;
  username: string;
  displayName: string;
  /** Path of the avatar below the fake's base (see avatarPath). */
  avatarPath: string;
  followers: number;
  following: number;
  posts: number;
  isDefault: boolean;
}

export interface FakeApp {
  clientId: string;
  /** null: a public client (no secret). */
  secret: string | null;
  /** null: any absolute redirect_uri is accepted. */
  redirectUris: string[] | null;
  /** null: any scope the platform knows. */
  scopes: string[] | null;
  name?: string;
  website?: string | null;
  id?: string;
}

export interface FakeGrant {
  id: string;
  clientId: string;
  user: FakeUser;
  requested: string[];
  scopes: string[];
  declined: string[];
  /** fake_token_lifetime, seconds. */
  lifetime: number | null;
  redirectUri: string;
  createdAt: number;
  revoked: { at: number; via: string } | null;
  /** Platform extras (Google access_type, Pinterest continuous_refresh, a Meta page id…). */
  extra: Record<string, unknown>;
  tokens: Set<string>;
}

export interface FakeToken {
  token: string;
  kind: 'access' | 'refresh';
  grant: FakeGrant;
  issuedAt: number;
  expiresAt: number | null;
  /** When a single-use refresh token was used. */
  usedAt: number | null;
  /** Platform extras (a Meta token's type and page, a long-lived flag…). */
  meta: Record<string, unknown>;
}

interface Code {
  code: string;
  clientId: string;
  redirectUri: string;
  challenge: string | null;
  method: string | null;
  grant: FakeGrant;
  expiresAt: number;
  usedAt: number | null;
}

export type TokenState =
  | { state: 'valid'; token: FakeToken }
  | { state: 'expired'; token: FakeToken }
  | { state: 'revoked'; token: FakeToken }
  | { state: 'unknown' };

export type Redeemed =
  | { ok: true; grant: FakeGrant }
  | { ok: false; reason: 'unknown' | 'expired' | 'used' | 'client' | 'redirect' | 'pkce_missing' | 'pkce' };

export type Refreshed =
  | { ok: true; grant: FakeGrant; token: FakeToken }
  | { ok: false; reason: 'unknown' | 'used' | 'revoked' | 'expired' | 'client' };

export interface OAuthStats {
  authorizations: number;
  denied: number;
  codesExchanged: number;
  refreshes: number;
  revocations: number;
  revoked: Array<{
    user: string;
    userId: string;
    clientId: string;
    via: string;
    at: string;
    tokens: string[];
  }>;
}

/** What the control API and the server's snapshot need from a fake with an authorization server. */
export interface OAuthControl {
  /** Revokes every grant of the token or user; how many were revoked, or null when none matched. */
  revoke(by: { access_token?: string; user?: string }): number | null;
  stats(): OAuthStats;
}

export interface FakeOAuthOptions {
  platform: Platform;
  /** The fake's default account, as a FakeUser. */
  defaultUser(): Omit<FakeUser, 'name' | 'isDefault'>;
  /** A fake_user's account. */
  makeUser(name: string): Omit<FakeUser, 'name' | 'isDefault'>;
  /** Token prefixes, as the platform's tokens look. */
  prefixes?: { access?: string; refresh?: string; code?: string };
}

// ---- small helpers ---------------------------------------------------------------------------

type Account = Omit<FakeUser, 'name' | 'isDefault'>;

/** A fake's default account; its avatar is served under its id. */
export const defaultAccount = (a: Omit<Account, 'avatarPath'>): Account => ({
  ...a,
  avatarPath: avatarPath(a.id),
});

/** A fake_user's account: named after the user, followers derived from the name, other counts 0 unless given. */
export function namedAccount(name: string, id: string, more: Partial<Account> = {}): Account {
  return {
    id,
    username: name,
    displayName: name,
    avatarPath: avatarPath(id),
    followers: followersOf(name),
    following: 0,
    posts: 0,
    ...more,
  };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** A deterministic number for a name, for ids and counts (0 ≤ n < mod). */
export function hashNumber(name: string, mod: number, salt = ''): number {
  return Number(digest(`${salt}:${name}`).readBigUInt64BE(0) % BigInt(mod));
}

/** A deterministic string of `len` digits for a name (first digit non-zero). */
export function hashDigits(name: string, len: number, salt = ''): string {
  const hex = digest(`${salt}:${name}`).toString('hex') + digest(`${salt}::${name}`).toString('hex');
  let out = '';
  for (let i = 0; out.length < len; i++) out += String(Number.parseInt(hex[i % hex.length] ?? '0', 16) % 10);
  return `${(Number(out[0]) % 9) + 1}${out.slice(1)}`;
}

/** A deterministic base62-ish string (letters, digits, `-`, `_`) of `len` chars for a name. */
export function hashId(name: string, len: number, salt = ''): string {
  return digest(`${salt}:${name}`).toString('base64url').slice(0, len);
}

/** A follower count derived from the name. */
export const followersOf = (name: string) => 100 + hashNumber(name, 50_000, 'followers');

/** Where a fake serves a user's avatar, below its base. */
export const avatarPath = (id: string) => `/fake-avatars/${encodeURIComponent(id)}.png`;

const PNG_1X1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

/** A fake's avatar images (a 1×1 PNG for every avatarPath), or null for other paths. */
export function serveAvatar(req: FakeRequest): FakeResponse | null {
  if (req.method !== 'GET' || !req.path.startsWith('/fake-avatars/')) return null;
  return { status: 200, headers: { 'content-type': 'image/png' }, body: PNG_1X1 };
}

export const random = (bytes = 24) => randomBytes(bytes).toString('base64url');

export function pkceS256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

/** Whether the verifier hashes (or equals, for `plain`) to the challenge. TikTok's desktop guide
 * documents a hex-encoded SHA-256, which `hexToo` also accepts. */
export function pkceMatches(challenge: string, method: string, verifier: string, hexToo = false): boolean {
  if (method === 'plain') return verifier === challenge;
  if (pkceS256(verifier) === challenge) return true;
  return hexToo && createHash('sha256').update(verifier).digest('hex') === challenge;
}

/** The form body (or JSON body) of a request, with the query string underneath. */
export function formOf(req: FakeRequest, withQuery = false): URLSearchParams {
  const out = withQuery ? new URLSearchParams(req.query) : new URLSearchParams();
  if (req.json && typeof req.json === 'object' && !Array.isArray(req.json)) {
    for (const [k, v] of Object.entries(req.json as Record<string, unknown>)) {
      if (Array.isArray(v)) {
        out.delete(k);
        for (const x of v) out.append(k, String(x));
      } else if (v !== undefined && v !== null) out.set(k, typeof v === 'string' ? v : JSON.stringify(v));
    }
  } else if (!(req.headers['content-type'] ?? '').includes('multipart/')) {
    for (const [k, v] of new URLSearchParams(req.body.toString('utf8'))) out.set(k, v);
  }
  return out;
}

/** HTTP Basic client credentials (RFC 6749 §2.3.1: each part form-urlencoded), or null. */
export function basicAuth(req: FakeRequest): { id: string; secret: string } | null {
  const b64 = /^Basic\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1];
  if (!b64) return null;
  const raw = Buffer.from(b64, 'base64').toString('utf8');
  const i = raw.indexOf(':');
  if (i < 0) return null;
  const dec = (s: string) => {
    try {
      return decodeURIComponent(s.replace(/\+/g, ' '));
    } catch {
      return s;
    }
  };
  return { id: dec(raw.slice(0, i)), secret: dec(raw.slice(i + 1)) };
}

/** `uri` with `params` added to its query (keeping the query it had) and an optional fragment. */
export function withParams(
  uri: string,
  params: Record<string, string | undefined>,
  fragment?: string,
): string {
  const u = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.append(k, v);
  if (fragment !== undefined) u.hash = fragment;
  return u.toString();
}

export const redirect = (location: string): FakeResponse => ({
  status: 302,
  headers: { location, 'cache-control': 'no-store' },
});

/** The HTML page an authorization server shows when it must not redirect (bad client or redirect_uri). */
export function errorPage(status: number, title: string, detail: string): FakeResponse {
  const esc = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return {
    status,
    headers: { 'content-type': 'text/html; charset=utf-8' },
    body: `<!doctype html><html><head><title>${esc(title)}</title></head><body><h1>${esc(title)}</h1><p>${esc(detail)}</p></body></html>`,
  };
}

function isAbsoluteUri(s: string): boolean {
  try {
    const u = new URL(s);
    return Boolean(u.protocol) && !u.hash;
  } catch {
    return false;
  }
}

// ---- the authorization endpoint ---------------------------------------------------------------

export interface AuthorizeSpec {
  /** Query parameter naming the client (TikTok: client_key). */
  clientParam?: string;
  /** How the scope parameter separates scopes. */
  separator: RegExp;
  /** Whether the platform knows this scope. */
  knownScope(scope: string): boolean;
  /** Scopes that publish: fake_consent=partial withholds them. */
  publishes(scope: string): boolean;
  pkce: 'required' | 'optional';
  /** Accepted code_challenge_method values (default S256 only). */
  pkceMethods?: string[];
  requireState?: boolean;
  /** Scopes when the request names none (null: scope is required). */
  defaultScopes?: string[] | null;
  /** Error redirect parameters when the user refuses. */
  denied: Record<string, string>;
  /** The error code a platform uses instead of invalid_scope (LinkedIn: unauthorized_scope_error). */
  scopeError?: string;
  /** Description of an invalid_scope redirect naming the scopes refused. */
  scopeDescription?(unknown: string[]): string;
  /** Description for invalid_scope / invalid_request redirects, when the platform words them. */
  describe?: Partial<Record<'invalid_scope' | 'invalid_request' | 'unsupported_response_type', string>>;
  /** The page shown for an unknown client or a bad redirect_uri. */
  page?(status: number, problem: 'client' | 'redirect_uri', detail: string): FakeResponse;
  /** Extra parameters of the success redirect (TikTok's `scopes`). */
  successParams?(grant: FakeGrant): Record<string, string>;
  /** A fragment on every redirect (Threads appends `#_`). */
  fragment?: string;
  /** Platform extras taken from the query (access_type, prompt…). */
  extra?(query: URLSearchParams): Record<string, unknown>;
}

export class FakeOAuth implements OAuthControl {
  readonly platform: Platform;
  apps = new Map<string, FakeApp>();
  users = new Map<string, FakeUser>();
  private codes = new Map<string, Code>();
  private tokens = new Map<string, FakeToken>();
  private grants: FakeGrant[] = [];
  private counters: OAuthStats = this.emptyStats();
  private seq = 0;

  constructor(private readonly opts: FakeOAuthOptions) {
    this.platform = opts.platform;
    this.reset();
  }

  private emptyStats(): OAuthStats {
    return { authorizations: 0, denied: 0, codesExchanged: 0, refreshes: 0, revocations: 0, revoked: [] };
  }

  reset(): void {
    this.apps = new Map();
    const app = FAKE_APPS[this.platform];
    if (this.platform !== 'mastodon' && this.platform !== 'bluesky')
      this.register({ clientId: app.clientId, secret: app.clientSecret, redirectUris: null, scopes: null });
    this.users = new Map();
    this.codes = new Map();
    this.tokens = new Map();
    this.grants = [];
    this.counters = this.emptyStats();
    this.seq = 0;
  }

  register(app: FakeApp): FakeApp {
    this.apps.set(app.clientId, app);
    return app;
  }

  /** The fake's default account, or fake_user `name` (created on first use). */
  user(name?: string | null): FakeUser {
    const key = name ? name : 'default';
    let u = this.users.get(key);
    if (!u) {
      u = name
        ? { ...this.opts.makeUser(name), name, isDefault: false }
        : { ...this.opts.defaultUser(), name: 'default', isDefault: true };
      this.users.set(key, u);
    }
    return u;
  }

  /** 'ok', or why these client credentials are refused. A public client passes with no secret. */
  checkClient(id: string | null | undefined, secret: string | null | undefined): 'ok' | 'unknown' | 'secret' {
    const app = id ? this.apps.get(id) : undefined;
    if (!app) return 'unknown';
    if (app.secret === null) return secret ? 'secret' : 'ok';
    return secret === app.secret ? 'ok' : 'secret';
  }

  // -- authorization endpoint

  /** Answers a GET of the authorization endpoint: the consent redirect, an error redirect, or a page. */
  authorize(req: FakeRequest, spec: AuthorizeSpec): FakeResponse {
    const q = req.query;
    const page = spec.page ?? ((status, _p, detail) => errorPage(status, 'Authorization error', detail));
    const clientId = q.get(spec.clientParam ?? 'client_id') ?? '';
    const app = this.apps.get(clientId);
    if (!app) return page(400, 'client', `Unknown ${spec.clientParam ?? 'client_id'} "${clientId}".`);
    const redirectUri = q.get('redirect_uri') ?? '';
    if (!redirectUri || !isAbsoluteUri(redirectUri))
      return page(400, 'redirect_uri', 'redirect_uri is missing or not an absolute URI.');
    if (app.redirectUris && !app.redirectUris.includes(redirectUri))
      return page(400, 'redirect_uri', 'The redirect uri included is not valid.');
    const state = q.get('state') ?? undefined;
    const fail = (error: string, description?: string) =>
      redirect(
        withParams(
          redirectUri,
          { error, ...(description ? { error_description: description } : {}), state },
          spec.fragment,
        ),
      );
    if (q.get('response_type') !== 'code')
      return fail(
        'unsupported_response_type',
        spec.describe?.unsupported_response_type ??
          'The authorization server does not support this response type.',
      );
    if (spec.requireState && !state) return fail('invalid_request', 'Missing required parameter [state].');
    const challenge = q.get('code_challenge');
    const method = challenge ? (q.get('code_challenge_method') ?? 'plain') : null;
    if (spec.pkce === 'required' && !challenge)
      return fail(
        'invalid_request',
        spec.describe?.invalid_request ?? 'Missing required parameter [code_challenge].',
      );
    if (challenge && method && !(spec.pkceMethods ?? ['S256']).includes(method))
      return fail('invalid_request', `Unsupported code_challenge_method [${method}].`);
    const raw = q.get('scope');
    const requested = [
      ...new Set(
        (raw ?? '')
          .split(spec.separator)
          .map((s) => s.trim())
          .filter(Boolean),
      ),
    ];
    if (!requested.length) {
      if (spec.defaultScopes) requested.push(...spec.defaultScopes);
      else if (spec.defaultScopes === null || spec.defaultScopes === undefined)
        return fail(
          spec.scopeError ?? 'invalid_scope',
          spec.describe?.invalid_scope ?? 'The requested scope is invalid, unknown, or malformed.',
        );
    }
    const unknown = requested.filter((s) => !spec.knownScope(s) || (app.scopes && !coveredBy(s, app.scopes)));
    if (unknown.length)
      return fail(
        spec.scopeError ?? 'invalid_scope',
        spec.scopeDescription?.(unknown) ??
          spec.describe?.invalid_scope ??
          `The requested scope is invalid, unknown, or malformed: ${unknown.join(' ')}`,
      );

    const consent = q.get('fake_consent') ?? 'grant';
    if (consent === 'deny') {
      this.counters.denied++;
      return redirect(withParams(redirectUri, { ...spec.denied, state }, spec.fragment));
    }
    const lifetimeRaw = q.get('fake_token_lifetime');
    const lifetime = lifetimeRaw !== null && Number(lifetimeRaw) > 0 ? Number(lifetimeRaw) : null;
    const unticked = new Set((q.get('fake_decline') ?? '').split(/[ ,]+/).filter(Boolean));
    const scopes = (consent === 'partial' ? requested.filter((s) => !spec.publishes(s)) : requested).filter(
      (s) => !unticked.has(s),
    );
    const grant: FakeGrant = {
      id: `grant-${++this.seq}`,
      clientId,
      user: this.user(q.get('fake_user')),
      requested,
      scopes,
      declined: requested.filter((s) => !scopes.includes(s)),
      lifetime,
      redirectUri,
      createdAt: Date.now(),
      revoked: null,
      extra: spec.extra?.(q) ?? {},
      tokens: new Set(),
    };
    const code: Code = {
      code: `${this.opts.prefixes?.code ?? ''}${random(24)}`,
      clientId,
      redirectUri,
      challenge,
      method,
      grant,
      expiresAt: Date.now() + CODE_TTL_MS,
      usedAt: null,
    };
    this.codes.set(code.code, code);
    this.counters.authorizations++;
    return redirect(
      withParams(redirectUri, { code: code.code, ...spec.successParams?.(grant), state }, spec.fragment),
    );
  }

  // -- codes

  /**
   * Exchanges a code. `redirectUri` null: the platform does not require it at the token endpoint.
   * A replayed code revokes the grant it produced.
   */
  redeem(
    code: string,
    check: { clientId: string; redirectUri: string | null; verifier: string | null; hexToo?: boolean },
  ): Redeemed {
    const c = this.codes.get(code);
    if (!c) return { ok: false, reason: 'unknown' };
    if (c.usedAt !== null) {
      this.revokeGrant(c.grant, 'code_replay');
      return { ok: false, reason: 'used' };
    }
    if (c.expiresAt <= Date.now()) return { ok: false, reason: 'expired' };
    if (c.clientId !== check.clientId) return { ok: false, reason: 'client' };
    if (check.redirectUri !== null && check.redirectUri !== c.redirectUri)
      return { ok: false, reason: 'redirect' };
    if (c.challenge && c.method) {
      if (!check.verifier) return { ok: false, reason: 'pkce_missing' };
      if (!pkceMatches(c.challenge, c.method, check.verifier, check.hexToo))
        return { ok: false, reason: 'pkce' };
    }
    c.usedAt = Date.now();
    this.grants.push(c.grant);
    this.counters.codesExchanged++;
    return { ok: true, grant: c.grant };
  }

  // -- tokens

  /** Issues a token of the grant. `ttl` seconds (null: no expiry); fake_token_lifetime overrides
   * access-token lifetimes. */
  issue(
    grant: FakeGrant,
    kind: 'access' | 'refresh',
    ttl: number | null,
    meta: Record<string, unknown> = {},
    prefix?: string,
  ): FakeToken {
    const lifetime = kind === 'access' && grant.lifetime !== null ? grant.lifetime : ttl;
    const t: FakeToken = {
      token: `${prefix ?? (kind === 'access' ? this.opts.prefixes?.access : this.opts.prefixes?.refresh) ?? ''}${random(30)}`,
      kind,
      grant,
      issuedAt: Date.now(),
      expiresAt: lifetime === null ? null : Date.now() + lifetime * 1000,
      usedAt: null,
      meta,
    };
    this.tokens.set(t.token, t);
    grant.tokens.add(t.token);
    if (!this.grants.includes(grant)) this.grants.push(grant);
    return t;
  }

  /** Seconds until the token expires (null: never). */
  expiresIn(t: FakeToken): number | null {
    return t.expiresAt === null ? null : Math.max(0, Math.round((t.expiresAt - Date.now()) / 1000));
  }

  /** The state of an access token this fake issued ('unknown': not one of ours, e.g. a legacy test token). */
  check(token: string | null | undefined): TokenState {
    const t = token ? this.tokens.get(token) : undefined;
    if (t?.kind !== 'access') return { state: 'unknown' };
    if (t.grant.revoked) return { state: 'revoked', token: t };
    if (t.expiresAt !== null && t.expiresAt <= Date.now()) return { state: 'expired', token: t };
    return { state: 'valid', token: t };
  }

  /** The token record of any kind, whatever its state. */
  find(token: string | null | undefined): FakeToken | undefined {
    return token ? this.tokens.get(token) : undefined;
  }

  /** Whether the token's grant holds one of these scopes (tokens not issued here: yes). */
  allows(token: string | null | undefined, ...anyOf: string[]): boolean {
    const t = this.find(token);
    return !t || anyOf.some((s) => t.grant.scopes.includes(s));
  }

  /**
   * Uses a refresh token. `rotate`: the token is single-use (a second use is refused). The caller
   * issues the new tokens.
   */
  useRefresh(token: string, clientId: string | null, rotate: boolean): Refreshed {
    const t = this.tokens.get(token);
    if (t?.kind !== 'refresh') return { ok: false, reason: 'unknown' };
    if (clientId !== null && t.grant.clientId !== clientId) return { ok: false, reason: 'client' };
    if (t.grant.revoked) return { ok: false, reason: 'revoked' };
    if (t.usedAt !== null) return { ok: false, reason: 'used' };
    if (t.expiresAt !== null && t.expiresAt <= Date.now()) return { ok: false, reason: 'expired' };
    if (rotate) t.usedAt = Date.now();
    this.counters.refreshes++;
    return { ok: true, grant: t.grant, token: t };
  }

  /** Counts a refresh this store did not decide (legacy test tokens, Meta's token exchanges). */
  countRefresh(): void {
    this.counters.refreshes++;
  }

  // -- revocation

  revokeGrant(grant: FakeGrant, via: string): void {
    if (grant.revoked) return;
    grant.revoked = { at: Date.now(), via };
    this.counters.revocations++;
    this.counters.revoked.push({
      user: grant.user.name,
      userId: grant.user.id,
      clientId: grant.clientId,
      via,
      at: new Date(grant.revoked.at).toISOString(),
      tokens: [...grant.tokens],
    });
  }

  /** Revokes the grant of any of its tokens; the grant, or undefined for a token not issued here. */
  revokeToken(token: string, via: string): FakeGrant | undefined {
    const t = this.tokens.get(token);
    if (t) this.revokeGrant(t.grant, via);
    return t?.grant;
  }

  /** Revokes every live grant of a user (fake_user name, `default`, or the user's platform id). */
  revokeUser(name: string, via: string): number | null {
    const user =
      this.users.get(name) ?? [...this.users.values()].find((u) => u.id === name || u.username === name);
    if (!user) return null;
    const live = this.grants.filter((g) => g.user === user && !g.revoked);
    for (const g of live) this.revokeGrant(g, via);
    return live.length;
  }

  revoke(by: { access_token?: string; user?: string }): number | null {
    if (by.access_token) return this.revokeToken(by.access_token, 'control') ? 1 : null;
    if (by.user) return this.revokeUser(by.user, 'control');
    return null;
  }

  /** Live grants (exchanged, not revoked) of a user. */
  grantsOf(user: FakeUser): FakeGrant[] {
    return this.grants.filter((g) => g.user === user && !g.revoked);
  }

  stats(): OAuthStats {
    return { ...this.counters, revoked: [...this.counters.revoked] };
  }
}

/** Whether `scope` is within `allowed` (Mastodon: `read:statuses` is within `read`). */
export function coveredBy(scope: string, allowed: string[]): boolean {
  if (allowed.includes(scope)) return true;
  const top = scope.split(':')[0] ?? '';
  return scope.includes(':') && (top === 'read' || top === 'write') && allowed.includes(top);
}
