import { metaAnswers } from './documented-errors.ts';
import {
  type AuthorizeSpec,
  avatarPath,
  FakeOAuth,
  type FakeOAuthOptions,
  type FakeToken,
  type FakeUser,
  followersOf,
  hashDigits,
  hashNumber,
} from './oauth.ts';
import { bearer, type FakeContext, type FakeRequest, type FakeResponse } from './server.ts';

// Facebook Login as the Facebook and Instagram fakes serve it, each under its own prefix with or without
// the Graph version (/v24.0/…), as developers.facebook.com documents it ("Manually Build a Login Flow",
// "Long-Lived Access Tokens", "Page Access Tokens"):
//   GET      /{v}/dialog/oauth             client_id, redirect_uri, state, scope (comma- or space-separated),
//                                          response_type=code, optional code_challenge (S256)
//   GET|POST /{v}/oauth/access_token       client_id, client_secret, redirect_uri, code [, code_verifier]
//                                          → {access_token, token_type: "bearer", expires_in: 3600} (short-lived)
//   GET|POST /{v}/oauth/access_token       grant_type=fb_exchange_token, client_id, client_secret,
//                                          fb_exchange_token → {access_token, token_type, expires_in: 5183944}
//   GET      /{v}/me                       the user (or, with a Page token, the Page)
//   GET      /{v}/me/permissions           {data: [{permission, status: granted|declined}]}
//   DELETE   /{v}/me/permissions           {success: true}; the grant's user and Page tokens stop working
//   GET      /{v}/me/accounts?fields=…     the user's Pages with Page tokens the Page endpoints accept
//   GET      /{v}/debug_token              input_token, access_token={app-id}|{app-secret} → {data: {app_id,
//                                          type: USER|PAGE, application, expires_at, is_valid, scopes,
//                                          user_id, profile_id?}}; an unknown input_token: is_valid false
//                                          (instagram_business_account{…} on the Instagram fake)
// Consent redirects carry Facebook's `#_=_` fragment; a refusal redirects
// error_reason=user_denied&error=access_denied&error_description=Permissions+error. A Page token from a
// long-lived user token never expires; from a short-lived one it expires with it. Unsure: the error for a
// wrong code_verifier (the fake: code 100 "Invalid code verifier."), and what /me/accounts answers without
// pages_show_list (the fake: an empty list).
// Error answers, checked against published material (documented-errors.ts builds them). Graph errors are
// {"error": {message, type: "OAuthException", code, error_subcode?, fbtrace_id}} with HTTP 400 (Graph API
// "Handling Errors"); the Login guides show no error bodies, so the code exchange's wordings are the ones
// developers report (laravel/socialite#385 and others): code 100 subcode 36009 "This authorization code
// has been used.", 36007 "This authorization code has expired.", 36008 "Error validating verification
// code…" (redirect_uri differs); unknown code "Invalid verification code format."; code 101 "Error
// validating application. Invalid application ID." (unknown app) and code 1 "Error validating client
// secret." — Meta answers the operator's mistake with HTTP 400 like any other, not RFC 6749's invalid_client.
// Tokens the user revoked answer code 190 subcode 458 ("App Not Installed"), expired ones 190/463
// ("Expired"), with Graph's `WWW-Authenticate: OAuth "Facebook Platform" "invalid_token" "…"`. Throttling
// (codes 4, 17, 32, 613, 80001/80002 with X-App-Usage / X-Business-Use-Case-Usage, HTTP 400 or 403, never
// 429) is never produced on its own: inject documentedErrors.facebook.throttled (or its variants).

export interface MetaPage {
  id: string;
  name: string;
  category: string;
  followers: number;
  fans: number;
  /** The Instagram professional account linked to the Page (Instagram fake). */
  ig?: { id: string; username: string; name: string; followers: number; media: number };
}

export interface FacebookLoginOptions extends Pick<FakeOAuthOptions, 'defaultUser' | 'makeUser'> {
  platform: 'facebook' | 'instagram';
  /** The Pages a user manages. */
  pagesOf(user: FakeUser): MetaPage[];
}

const SHORT_TTL = 3600;
const LONG_TTL = 5183944;

/** Graph's error body (kept here so this module does not import the Facebook fake). */
export function graphError(
  code: number,
  message: string,
  opts: { subcode?: number; status?: number; type?: string } = {},
): FakeResponse {
  return metaAnswers.graph(code, message, opts);
}

/** Graph field list `a,b{c,d},e.limit(1)` → [['a', []], ['b', ['c','d']], ['e', []]]. */
export function graphFields(raw: string | null): Array<[string, string[]]> {
  if (!raw) return [];
  const out: Array<[string, string[]]> = [];
  let depth = 0;
  let cur = '';
  const push = () => {
    const m = /^([a-z_]+)[^{]*(?:\{(.*)\})?$/i.exec(cur.trim());
    if (m?.[1]) out.push([m[1], m[2] ? graphFields(m[2]).map(([n]) => n) : []]);
    cur = '';
  };
  for (const ch of raw) {
    if (ch === '{' || ch === '(') depth++;
    if (ch === '}' || ch === ')') depth--;
    if (ch === ',' && depth === 0) push();
    else cur += ch;
  }
  push();
  return out;
}

export class FacebookLogin {
  readonly oauth: FakeOAuth;
  private readonly spec: AuthorizeSpec;

  constructor(private readonly opts: FacebookLoginOptions) {
    this.oauth = new FakeOAuth({
      platform: opts.platform,
      prefixes: { access: 'EAAG', refresh: 'EAAR', code: 'AQ' },
      defaultUser: opts.defaultUser,
      makeUser: opts.makeUser,
    });
    this.spec = {
      separator: /[ ,]+/,
      knownScope: (s) => /^[a-z_]+$/.test(s),
      publishes: (s) => s.endsWith('_publish') || s === 'pages_manage_posts',
      pkce: 'optional',
      defaultScopes: ['public_profile'],
      denied: {
        error_reason: 'user_denied',
        error: 'access_denied',
        error_description: 'Permissions error.',
      },
      fragment: '_=_',
      page: (_status, problem) =>
        problem === 'client'
          ? pageError('Invalid App ID', 'The provided app ID does not look like a valid app ID.')
          : pageError(
              'URL Blocked',
              'This redirect failed because the redirect URI is not whitelisted in the app’s Client OAuth Settings.',
            ),
    };
  }

  reset(): void {
    this.oauth.reset();
  }

  /** Every Page id a user of this fake manages (default user and fake_users seen so far). */
  pageIds(): Set<string> {
    return new Set(this.users().flatMap((u) => this.opts.pagesOf(u).map((p) => p.id)));
  }

  /** Every Instagram account id linked to a Page of a user of this fake. */
  igIds(): Set<string> {
    return new Set(
      this.users()
        .flatMap((u) => this.opts.pagesOf(u))
        .flatMap((p) => (p.ig ? [p.ig.id] : [])),
    );
  }

  private users(): FakeUser[] {
    return [this.oauth.user(), ...this.oauth.users.values()];
  }

  /** The dialog and token routes (no access token needed); null for other paths. */
  handleOAuth(req: FakeRequest, params: URLSearchParams, segs: string[]): FakeResponse | null {
    const path = segs.join('/');
    if (req.method === 'GET' && path === 'dialog/oauth') return this.oauth.authorize(req, this.spec);
    if ((req.method === 'GET' || req.method === 'POST') && path === 'oauth/access_token')
      return this.token(params);
    if (req.method === 'GET' && path === 'debug_token') return this.debugToken(params);
    return null;
  }

  private debugToken(params: URLSearchParams): FakeResponse {
    const [appId, secret] = (params.get('access_token') ?? '').split('|');
    const client = this.oauth.checkClient(appId, secret);
    if (client !== 'ok') return graphError(190, 'Invalid OAuth access token - Cannot parse access token');
    const c = this.oauth.check(params.get('input_token'));
    if (c.state === 'unknown')
      return {
        status: 200,
        body: {
          data: {
            error: { code: 190, message: 'Invalid OAuth access token - Cannot parse access token' },
            is_valid: false,
            scopes: [],
          },
        },
      };
    const page = c.token.meta.page as string | undefined;
    return {
      status: 200,
      body: {
        data: {
          app_id: c.token.grant.clientId,
          type: page ? 'PAGE' : 'USER',
          application: 'Herald',
          expires_at: c.token.expiresAt ? Math.floor(c.token.expiresAt / 1000) : 0,
          is_valid: c.state === 'valid',
          scopes: ['public_profile', ...c.token.grant.scopes],
          user_id: c.token.grant.user.id,
          ...(page ? { profile_id: page } : {}),
        },
      },
    };
  }

  private token(params: URLSearchParams): FakeResponse {
    const clientId = params.get('client_id');
    if (!clientId) return graphError(101, 'Missing client_id parameter.');
    const client = this.oauth.checkClient(clientId, params.get('client_secret'));
    if (client === 'unknown') return metaAnswers.badAppId();
    if (client === 'secret') return metaAnswers.badSecret();
    if (params.get('grant_type') === 'fb_exchange_token') {
      const old = this.oauth.check(params.get('fb_exchange_token'));
      if (old.state === 'unknown' || old.token.meta.type !== 'user' || old.token.grant.clientId !== clientId)
        return graphError(190, 'Invalid OAuth access token - Cannot parse access token');
      if (old.state !== 'valid') return this.tokenError(old.state, old.token);
      this.oauth.countRefresh();
      const t = this.oauth.issue(old.token.grant, 'access', LONG_TTL, { type: 'user', longLived: true });
      return {
        status: 200,
        body: {
          access_token: t.token,
          token_type: 'bearer',
          expires_in: this.oauth.expiresIn(t) ?? LONG_TTL,
        },
      };
    }
    const code = params.get('code');
    const redirectUri = params.get('redirect_uri');
    if (!code) return graphError(100, 'Missing code parameter.');
    if (!redirectUri) return graphError(100, 'Missing redirect_uri parameter.');
    const r = this.oauth.redeem(code, { clientId, redirectUri, verifier: params.get('code_verifier') });
    if (!r.ok) {
      switch (r.reason) {
        case 'used':
          return metaAnswers.codeUsed();
        case 'expired':
          return metaAnswers.codeExpired();
        case 'redirect':
          return metaAnswers.codeRedirect();
        case 'pkce':
        case 'pkce_missing':
          return graphError(100, 'Invalid code verifier.');
        default:
          return graphError(100, 'Invalid verification code format.');
      }
    }
    const t = this.oauth.issue(r.grant, 'access', SHORT_TTL, { type: 'user', longLived: false });
    return {
      status: 200,
      body: { access_token: t.token, token_type: 'bearer', expires_in: this.oauth.expiresIn(t) ?? SHORT_TTL },
    };
  }

  private tokenError(state: 'expired' | 'revoked', t: FakeToken): FakeResponse {
    return metaAnswers.token(state, t.grant.clientId, t.expiresAt ?? Date.now());
  }

  /**
   * The access token's check for the API routes: a refusal, or who the token acts for. Tokens this
   * login did not issue fall back to the fake's own sets (null when neither knows them: the caller
   * answers as before).
   */
  authenticate(
    req: FakeRequest,
    params: URLSearchParams,
  ): FakeResponse | { token: FakeToken; user: FakeUser; page: MetaPage | null } | null {
    const raw = params.get('access_token') ?? bearer(req);
    const c = this.oauth.check(raw);
    if (c.state === 'unknown') return null;
    if (c.state !== 'valid') return this.tokenError(c.state, c.token);
    const pageId = c.token.meta.page as string | undefined;
    const page = pageId ? (this.opts.pagesOf(c.token.grant.user).find((p) => p.id === pageId) ?? null) : null;
    return { token: c.token, user: c.token.grant.user, page };
  }

  /** /me, /me/permissions and /me/accounts for a token this login issued; null for other paths. */
  handleAccount(
    req: FakeRequest,
    ctx: FakeContext,
    params: URLSearchParams,
    segs: string[],
    who: { token: FakeToken; user: FakeUser; page: MetaPage | null },
  ): FakeResponse | null {
    const [node, edge, extra] = segs;
    if (node !== 'me' || extra) return null;
    const grant = who.token.grant;
    if (!edge && req.method === 'GET') {
      const fields = graphFields(params.get('fields') ?? 'id,name');
      const subject = who.page
        ? { id: who.page.id, name: who.page.name, picture: this.picture(ctx, who.page.id) }
        : { id: who.user.id, name: who.user.displayName, picture: this.picture(ctx, who.user.id) };
      const out: Record<string, unknown> = { id: subject.id };
      for (const [f] of fields) if (f in subject) out[f] = subject[f as keyof typeof subject];
      return { status: 200, body: out };
    }
    if (edge === 'permissions' && who.page)
      return graphError(100, '(#100) Tried accessing nonexisting field (permissions) on node type (Page)');
    if (edge === 'permissions' && req.method === 'GET') {
      const granted = new Set(['public_profile', ...grant.scopes]);
      return {
        status: 200,
        body: {
          data: [
            ...[...granted].map((permission) => ({ permission, status: 'granted' })),
            ...grant.declined.map((permission) => ({ permission, status: 'declined' })),
          ],
        },
      };
    }
    if (edge === 'permissions' && req.method === 'DELETE') {
      this.oauth.revokeGrant(grant, 'deauthorize');
      return { status: 200, body: { success: true } };
    }
    if (edge === 'accounts' && req.method === 'GET') {
      if (who.page)
        return graphError(100, '(#100) Tried accessing nonexisting field (accounts) on node type (Page)');
      if (!grant.scopes.includes('pages_show_list')) return { status: 200, body: { data: [] } };
      const fields = graphFields(params.get('fields') ?? 'access_token,category,category_list,name,id,tasks');
      const data = this.opts.pagesOf(who.user).map((p) => this.pageRow(ctx, who.token, p, fields));
      return {
        status: 200,
        body: {
          data,
          paging: {
            cursors: {
              before: Buffer.from('0').toString('base64url'),
              after: Buffer.from(String(data.length)).toString('base64url'),
            },
          },
        },
      };
    }
    return null;
  }

  /**
   * GET /{page-id} and GET /{ig-user-id} with `fields`, for the Pages (and their Instagram accounts)
   * of this fake's users, as a Page token reads its own Page; null when the id is none of them.
   */
  node(ctx: FakeContext, id: string, params: URLSearchParams): FakeResponse | null {
    const fields = graphFields(params.get('fields') ?? 'id,name');
    for (const user of this.users())
      for (const p of this.opts.pagesOf(user)) {
        if (p.id === id) {
          const { access_token: _token, ...row } = this.pageRow(ctx, null, p, fields);
          return { status: 200, body: row };
        }
        if (p.ig?.id === id) {
          const all: Record<string, unknown> = {
            id: p.ig.id,
            username: p.ig.username,
            name: p.ig.name,
            profile_picture_url: `${ctx.base}${avatarPath(p.ig.id)}`,
            followers_count: p.ig.followers,
            media_count: p.ig.media,
          };
          const row = Object.fromEntries(fields.filter(([f]) => f in all).map(([f]) => [f, all[f]]));
          return { status: 200, body: { id: p.ig.id, ...row } };
        }
      }
    return null;
  }

  private picture(ctx: FakeContext, id: string) {
    return { data: { height: 50, is_silhouette: false, url: `${ctx.base}${avatarPath(id)}`, width: 50 } };
  }

  /** The Page token for a user token: one per (user token, Page), never expiring from a long-lived token. */
  private pageToken(user: FakeToken, page: MetaPage): string {
    if (!(user.meta.pageTokens instanceof Map)) user.meta.pageTokens = new Map<string, string>();
    const cache = user.meta.pageTokens as Map<string, string>;
    const known = cache.get(page.id);
    if (known && this.oauth.check(known).state === 'valid') return known;
    const ttl = user.meta.longLived ? null : this.oauth.expiresIn(user);
    const t = this.oauth.issue(user.grant, 'access', ttl, { type: 'page', page: page.id });
    if (user.meta.longLived)
      t.expiresAt = null; // not even fake_token_lifetime: Page tokens do not expire
    else t.expiresAt = user.expiresAt;
    cache.set(page.id, t.token);
    return t.token;
  }

  private pageRow(
    ctx: FakeContext,
    user: FakeToken | null,
    p: MetaPage,
    fields: Array<[string, string[]]>,
  ): Record<string, unknown> {
    const row: Record<string, unknown> = {};
    for (const [f, sub] of fields) {
      if (f === 'id') row.id = p.id;
      else if (f === 'name') row.name = p.name;
      else if (f === 'access_token' && user) row.access_token = this.pageToken(user, p);
      else if (f === 'category') row.category = p.category;
      else if (f === 'category_list') row.category_list = [{ id: '2200', name: p.category }];
      else if (f === 'tasks')
        row.tasks = ['ADVERTISE', 'ANALYZE', 'CREATE_CONTENT', 'MESSAGING', 'MODERATE', 'MANAGE'];
      else if (f === 'picture') row.picture = this.picture(ctx, p.id);
      else if (f === 'followers_count') row.followers_count = p.followers;
      else if (f === 'fan_count') row.fan_count = p.fans;
      else if (f === 'link') row.link = `https://www.facebook.com/${p.id}`;
      else if (f === 'instagram_business_account' && p.ig) {
        const ig = p.ig;
        const all: Record<string, unknown> = {
          id: ig.id,
          username: ig.username,
          name: ig.name,
          profile_picture_url: `${ctx.base}${avatarPath(ig.id)}`,
          followers_count: ig.followers,
          media_count: ig.media,
        };
        row.instagram_business_account = Object.fromEntries(
          (sub.length ? sub : ['id']).filter((k) => k in all).map((k) => [k, all[k]]),
        );
      }
    }
    if (!('id' in row)) row.id = p.id;
    return row;
  }
}

function pageError(title: string, detail: string): FakeResponse {
  return {
    status: 400,
    headers: { 'content-type': 'text/html; charset=utf-8' },
    body: `<!doctype html><html><body><h1>${title}</h1><p>${detail}</p></body></html>`,
  };
}

/** Pages of a fake_user (two; the first linked to an Instagram account when `withIg`). */
export function userPages(user: FakeUser, withIg: boolean): MetaPage[] {
  const base = hashDigits(user.name, 15, 'page');
  return [0, 1].map((i) => ({
    id: `1${base.slice(1, 14)}${i}`,
    name: `${user.name}${i ? ' Shop' : ''}`,
    category: i ? 'Shopping & retail' : 'Community',
    followers: followersOf(`${user.name}/page${i}`),
    fans: followersOf(`${user.name}/page${i}`) - 7,
    ...(withIg && i === 0
      ? {
          ig: {
            id: `1784${hashDigits(user.name, 13, 'ig')}`,
            username: user.username,
            name: user.displayName,
            followers: followersOf(`${user.name}/ig`),
            media: hashNumber(user.name, 400, 'igmedia'),
          },
        }
      : {}),
  }));
}
