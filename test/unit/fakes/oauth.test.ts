import { createHash, randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { allFakes } from '../../fakes/index.ts';
import { FAKE_APPS } from '../../fakes/oauth.ts';
import type { FakePlatforms } from '../../fakes/server.ts';

// The OAuth halves of the platform fakes, driven over HTTP as a connector would: consent redirect → code →
// token → profile/accounts → refresh (rotation where the platform rotates) → revoke → the API refuses the
// token; and the ways it goes wrong (replayed code, other redirect_uri, wrong PKCE verifier, wrong client
// secret, refused and partial consent, expired tokens, revocation through the control API).

let fakes: FakePlatforms;
let origin = '';

beforeAll(async () => {
  fakes = await allFakes().start();
  origin = fakes.origin;
});
afterAll(() => fakes.stop());
beforeEach(() => fakes.reset());
afterEach(() => {
  vi.useRealTimers();
});

const REDIRECT = 'https://herald.example/v1/connect/callback?flow=abc';
const STATE = 'state-123';

type Json = Record<string, unknown>;

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
const form = (o: Record<string, string>) => new URLSearchParams(o).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

async function get(path: string, headers: Record<string, string> = {}) {
  return fetch(`${origin}${path}`, { headers, redirect: 'manual' });
}
async function post(path: string, body: string, headers: Record<string, string> = FORM) {
  return fetch(`${origin}${path}`, { method: 'POST', body, headers, redirect: 'manual' });
}
const json = async (res: Response) => (await res.json()) as Json;

/** Follows the consent GET: the redirect's URL (query and fragment) — it must be a redirect. */
async function consent(path: string): Promise<URL> {
  const res = await get(path);
  expect(res.status, await res.clone().text()).toBe(302);
  return new URL(res.headers.get('location') ?? '');
}

function query(params: Record<string, string | undefined>) {
  return new URLSearchParams(
    Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined),
  ).toString();
}

// ---- one description per OAuth platform -------------------------------------------------------

interface Flow {
  platform: string;
  /** Registers an app when the platform wants one (Mastodon); its client id and secret. */
  app(): Promise<{ id: string; secret: string }>;
  /** The consent URL (path below the origin). */
  authorize(
    app: { id: string },
    o: { challenge?: string; extra?: Record<string, string>; scopes?: string[] },
  ): string;
  usesPkce: boolean;
  /** Scopes asked, and the publishing scope a partial consent withholds. */
  scopes: string[];
  publishScope: string;
  /** The token request. */
  exchange(
    app: { id: string; secret: string },
    code: string,
    o: { verifier?: string; redirect?: string },
  ): Promise<Response>;
  access(body: Json): string;
  /** Scopes the token answer reports. */
  granted(body: Json): string[];
  /** A call the API answers for a live token (profile or accounts); its status for a dead one. */
  profile(token: string): Promise<Response>;
  deadStatus: number;
  /** Checks the refusal of a bad code / redirect_uri / verifier / client. */
  refusedCode(res: Response): Promise<void>;
  refusedClient(res: Response): Promise<void>;
  /** The user's refusal, as the redirect carries it. */
  denied: Record<string, string>;
  /** Revokes the token through the platform's API (undefined: the platform has none). */
  revoke?(app: { id: string; secret: string }, token: string): Promise<Response>;
}

const app = (p: keyof typeof FAKE_APPS) => async () => ({
  id: FAKE_APPS[p].clientId,
  secret: FAKE_APPS[p].clientSecret,
});
const scopeOf = (body: Json, sep: RegExp) =>
  String(body.scope ?? '')
    .split(sep)
    .filter(Boolean);

/** RFC 6749 §2.3.1 in the body: a form POST carrying the client id (under `idField`) and secret. */
const bodyCredentialsExchange =
  (path: string, idField = 'client_id'): Flow['exchange'] =>
  (a, code, o) =>
    post(
      path,
      form({
        [idField]: a.id,
        client_secret: a.secret,
        code,
        grant_type: 'authorization_code',
        redirect_uri: o.redirect ?? REDIRECT,
        ...(o.verifier ? { code_verifier: o.verifier } : {}),
      }),
    );

/** A refused client, as RFC 6749 §5.2 words it. */
const refusedAs =
  (status: number, error: string): Flow['refusedClient'] =>
  async (res) => {
    expect(res.status).toBe(status);
    expect((await json(res)).error).toBe(error);
  };

const GRAPH_CODE_REFUSED = async (res: Response) => {
  expect(res.status).toBe(400);
  const b = await json(res);
  expect(b.error).toMatchObject({ type: 'OAuthException', code: 100 });
};

const flows: Flow[] = [
  {
    platform: 'x',
    app: app('x'),
    usesPkce: true,
    scopes: ['tweet.read', 'users.read', 'tweet.write', 'offline.access'],
    publishScope: 'tweet.write',
    authorize: (a, o) =>
      `/x/i/oauth2/authorize?${query({
        response_type: 'code',
        client_id: a.id,
        redirect_uri: REDIRECT,
        scope: (o.scopes ?? ['tweet.read', 'users.read', 'tweet.write', 'offline.access']).join(' '),
        state: STATE,
        code_challenge: o.challenge,
        code_challenge_method: o.challenge ? 'S256' : undefined,
        ...o.extra,
      })}`,
    exchange: (a, code, o) =>
      post(
        '/x/2/oauth2/token',
        form({
          grant_type: 'authorization_code',
          code,
          redirect_uri: o.redirect ?? REDIRECT,
          code_verifier: o.verifier ?? '',
        }),
        { ...FORM, authorization: basic(a.id, a.secret) },
      ),
    access: (b) => String(b.access_token),
    granted: (b) => scopeOf(b, / /),
    profile: (t) =>
      get('/x/2/users/me?user.fields=profile_image_url,public_metrics', { authorization: `Bearer ${t}` }),
    deadStatus: 401,
    refusedCode: async (res) => {
      expect(res.status).toBe(400);
      const b = await json(res);
      expect(b.error).toBe('invalid_request');
      expect([
        'Value passed for the authorization code was invalid.',
        'Value passed for the code verifier did not match the code challenge.',
      ]).toContain(b.error_description);
    },
    refusedClient: refusedAs(401, 'unauthorized_client'),
    denied: { error: 'access_denied' },
    revoke: (a, token) =>
      post('/x/2/oauth2/revoke', form({ token, token_type_hint: 'access_token' }), {
        ...FORM,
        authorization: basic(a.id, a.secret),
      }),
  },
  {
    platform: 'linkedin',
    app: app('linkedin'),
    usesPkce: true,
    scopes: ['openid', 'profile', 'w_member_social', 'r_organization_admin', 'w_organization_social'],
    publishScope: 'w_member_social',
    authorize: (a, o) =>
      `/linkedin/oauth/v2/authorization?${query({
        response_type: 'code',
        client_id: a.id,
        redirect_uri: REDIRECT,
        state: STATE,
        scope: (
          o.scopes ?? [
            'openid',
            'profile',
            'w_member_social',
            'r_organization_admin',
            'w_organization_social',
          ]
        ).join(' '),
        code_challenge: o.challenge,
        code_challenge_method: o.challenge ? 'S256' : undefined,
        ...o.extra,
      })}`,
    exchange: bodyCredentialsExchange('/linkedin/oauth/v2/accessToken'),
    access: (b) => String(b.access_token),
    granted: (b) => scopeOf(b, /,/),
    profile: (t) => get('/linkedin/v2/userinfo', { authorization: `Bearer ${t}` }),
    deadStatus: 401,
    refusedCode: async (res) => {
      expect(res.status).toBe(400);
      const b = await json(res);
      expect(b.error).toBe('invalid_request');
      expect(String(b.error_description)).toMatch(/^Unable to retrieve access token/);
    },
    refusedClient: refusedAs(401, 'invalid_client'),
    denied: { error: 'user_cancelled_authorize', error_description: 'The user cancelled the authorization' },
    revoke: (a, token) =>
      post('/linkedin/oauth/v2/revoke', form({ client_id: a.id, client_secret: a.secret, token })),
  },
  ...(['facebook', 'instagram'] as const).map(
    (p): Flow => ({
      platform: p,
      app: app(p),
      usesPkce: true,
      scopes:
        p === 'facebook'
          ? ['pages_show_list', 'pages_read_engagement', 'pages_manage_posts']
          : ['instagram_basic', 'instagram_content_publish', 'pages_show_list', 'business_management'],
      publishScope: p === 'facebook' ? 'pages_manage_posts' : 'instagram_content_publish',
      authorize: (a, o) =>
        `/${p}/v24.0/dialog/oauth?${query({
          client_id: a.id,
          redirect_uri: REDIRECT,
          state: STATE,
          response_type: 'code',
          scope: (
            o.scopes ??
            (p === 'facebook'
              ? ['pages_show_list', 'pages_read_engagement', 'pages_manage_posts']
              : ['instagram_basic', 'instagram_content_publish', 'pages_show_list', 'business_management'])
          ).join(','),
          code_challenge: o.challenge,
          code_challenge_method: o.challenge ? 'S256' : undefined,
          ...o.extra,
        })}`,
      exchange: (a, code, o) =>
        get(
          `/${p}/v24.0/oauth/access_token?${query({
            client_id: a.id,
            client_secret: a.secret,
            redirect_uri: o.redirect ?? REDIRECT,
            code,
            code_verifier: o.verifier,
          })}`,
        ),
      access: (b) => String(b.access_token),
      granted: () => [],
      profile: (t) => get(`/${p}/v24.0/me/accounts?fields=id,name,access_token&access_token=${t}`),
      deadStatus: 400,
      refusedCode: GRAPH_CODE_REFUSED,
      refusedClient: async (res) => {
        expect(res.status).toBe(400);
        expect((await json(res)).error).toMatchObject({
          code: 1,
          message: 'Error validating client secret.',
        });
      },
      denied: {
        error_reason: 'user_denied',
        error: 'access_denied',
        error_description: 'Permissions error.',
      },
      revoke: (_a, token) =>
        fetch(`${origin}/${p}/v24.0/me/permissions?access_token=${token}`, { method: 'DELETE' }),
    }),
  ),
  {
    platform: 'threads',
    app: app('threads'),
    usesPkce: false,
    scopes: ['threads_basic', 'threads_content_publish', 'threads_manage_insights'],
    publishScope: 'threads_content_publish',
    authorize: (a, o) =>
      `/threads/oauth/authorize?${query({
        client_id: a.id,
        redirect_uri: REDIRECT,
        scope: (o.scopes ?? ['threads_basic', 'threads_content_publish', 'threads_manage_insights']).join(
          ',',
        ),
        response_type: 'code',
        state: STATE,
        ...o.extra,
      })}`,
    exchange: (a, code, o) =>
      post(
        '/threads/oauth/access_token',
        form({
          client_id: a.id,
          client_secret: a.secret,
          code,
          grant_type: 'authorization_code',
          redirect_uri: o.redirect ?? REDIRECT,
        }),
      ),
    access: (b) => String(b.access_token),
    granted: () => [],
    profile: (t) =>
      get(`/threads/v1.0/me?fields=id,username,name,threads_profile_picture_url&access_token=${t}`),
    deadStatus: 400,
    refusedCode: async (res) => {
      expect(res.status).toBe(400);
      expect(await json(res)).toMatchObject({ error_type: 'OAuthException', code: 400 });
    },
    refusedClient: async (res) => {
      expect(res.status).toBe(400);
      expect(await json(res)).toMatchObject({ error_type: 'OAuthException' });
    },
    denied: { error_reason: 'user_denied', error: 'access_denied', error_description: 'Permissions error' },
  },
  {
    platform: 'tiktok',
    app: app('tiktok'),
    usesPkce: true,
    scopes: ['user.info.basic', 'user.info.profile', 'user.info.stats', 'video.publish'],
    publishScope: 'video.publish',
    authorize: (a, o) =>
      `/tiktok/v2/auth/authorize/?${query({
        client_key: a.id,
        scope: (
          o.scopes ?? ['user.info.basic', 'user.info.profile', 'user.info.stats', 'video.publish']
        ).join(','),
        redirect_uri: REDIRECT,
        state: STATE,
        response_type: 'code',
        code_challenge: o.challenge,
        code_challenge_method: o.challenge ? 'S256' : undefined,
        ...o.extra,
      })}`,
    exchange: bodyCredentialsExchange('/tiktok/v2/oauth/token/', 'client_key'),
    access: (b) => String(b.access_token),
    granted: (b) => scopeOf(b, /,/),
    profile: (t) =>
      get('/tiktok/v2/user/info/?fields=open_id,union_id,avatar_url,display_name,username,follower_count', {
        authorization: `Bearer ${t}`,
      }),
    deadStatus: 401,
    refusedCode: async (res) => {
      expect(res.status).toBe(400);
      const b = await json(res);
      expect(['invalid_grant', 'invalid_request']).toContain(b.error);
      expect(b.log_id).toEqual(expect.any(String));
    },
    refusedClient: refusedAs(401, 'invalid_client'),
    denied: { error: 'access_denied' },
    revoke: (a, token) =>
      post('/tiktok/v2/oauth/revoke/', form({ client_key: a.id, client_secret: a.secret, token })),
  },
  {
    platform: 'youtube',
    app: app('youtube'),
    usesPkce: true,
    scopes: [
      'https://www.googleapis.com/auth/youtube.readonly',
      'https://www.googleapis.com/auth/youtube.upload',
    ],
    publishScope: 'https://www.googleapis.com/auth/youtube.upload',
    authorize: (a, o) =>
      `/youtube/o/oauth2/v2/auth?${query({
        client_id: a.id,
        redirect_uri: REDIRECT,
        response_type: 'code',
        scope: (
          o.scopes ?? [
            'https://www.googleapis.com/auth/youtube.readonly',
            'https://www.googleapis.com/auth/youtube.upload',
          ]
        ).join(' '),
        access_type: 'offline',
        prompt: 'consent',
        state: STATE,
        code_challenge: o.challenge,
        code_challenge_method: o.challenge ? 'S256' : undefined,
        ...o.extra,
      })}`,
    exchange: bodyCredentialsExchange('/youtube/token'),
    access: (b) => String(b.access_token),
    granted: (b) => scopeOf(b, / /),
    profile: (t) =>
      get('/youtube/youtube/v3/channels?part=snippet,statistics&mine=true', { authorization: `Bearer ${t}` }),
    deadStatus: 401,
    refusedCode: async (res) => {
      expect(res.status).toBe(400);
      expect(['invalid_grant', 'redirect_uri_mismatch']).toContain((await json(res)).error);
    },
    refusedClient: refusedAs(401, 'invalid_client'),
    denied: { error: 'access_denied' },
    revoke: (_a, token) => post('/youtube/revoke', form({ token })),
  },
  {
    platform: 'pinterest',
    app: app('pinterest'),
    usesPkce: false,
    scopes: ['boards:read', 'pins:read', 'pins:write', 'user_accounts:read'],
    publishScope: 'pins:write',
    authorize: (a, o) =>
      `/pinterest/oauth/?${query({
        client_id: a.id,
        redirect_uri: REDIRECT,
        response_type: 'code',
        scope: (o.scopes ?? ['boards:read', 'pins:read', 'pins:write', 'user_accounts:read']).join(','),
        state: STATE,
        ...o.extra,
      })}`,
    exchange: (a, code, o) =>
      post(
        '/pinterest/v5/oauth/token',
        form({
          grant_type: 'authorization_code',
          code,
          redirect_uri: o.redirect ?? REDIRECT,
          continuous_refresh: 'true',
        }),
        { ...FORM, authorization: basic(a.id, a.secret) },
      ),
    access: (b) => String(b.access_token),
    granted: (b) => scopeOf(b, /,/),
    profile: (t) => get('/pinterest/v5/user_account', { authorization: `Bearer ${t}` }),
    deadStatus: 401,
    refusedCode: async (res) => {
      expect(res.status).toBe(401);
      expect(await json(res)).toEqual({ code: 283, message: 'The authorization grant is invalid' });
    },
    refusedClient: async (res) => {
      expect(res.status).toBe(401);
      expect(await json(res)).toEqual({ code: 2, message: 'Authentication failed.' });
    },
    denied: { error: 'access_denied' },
  },
  {
    platform: 'mastodon',
    app: async () => {
      const res = await post(
        '/mastodon/api/v1/apps',
        JSON.stringify({
          client_name: 'Herald',
          redirect_uris: [REDIRECT],
          scopes: 'read write push',
          website: 'https://herald.example',
        }),
        { 'content-type': 'application/json' },
      );
      const b = await json(res);
      return { id: String(b.client_id), secret: String(b.client_secret) };
    },
    usesPkce: true,
    scopes: ['read', 'write'],
    publishScope: 'write',
    authorize: (a, o) =>
      `/mastodon/oauth/authorize?${query({
        response_type: 'code',
        client_id: a.id,
        redirect_uri: REDIRECT,
        scope: (o.scopes ?? ['read', 'write']).join(' '),
        state: STATE,
        code_challenge: o.challenge,
        code_challenge_method: o.challenge ? 'S256' : undefined,
        ...o.extra,
      })}`,
    exchange: (a, code, o) =>
      post(
        '/mastodon/oauth/token',
        JSON.stringify({
          grant_type: 'authorization_code',
          code,
          client_id: a.id,
          client_secret: a.secret,
          redirect_uri: o.redirect ?? REDIRECT,
          ...(o.verifier ? { code_verifier: o.verifier } : {}),
        }),
        { 'content-type': 'application/json' },
      ),
    access: (b) => String(b.access_token),
    granted: (b) => scopeOf(b, / /),
    profile: (t) => get('/mastodon/api/v1/accounts/verify_credentials', { authorization: `Bearer ${t}` }),
    deadStatus: 401,
    refusedCode: async (res) => {
      expect(res.status).toBe(400);
      expect((await json(res)).error).toBe('invalid_grant');
    },
    refusedClient: refusedAs(401, 'invalid_client'),
    denied: {
      error: 'access_denied',
      error_description: 'The resource owner or authorization server denied the request.',
    },
    revoke: (a, token) =>
      post('/mastodon/oauth/revoke', form({ client_id: a.id, client_secret: a.secret, token })),
  },
];

/** Runs consent (with PKCE when the flow uses it) and the code exchange: the token answer. */
async function connect(f: Flow, extra: Record<string, string> = {}) {
  const a = await f.app();
  const p = pkce();
  const back = await consent(f.authorize(a, { challenge: f.usesPkce ? p.challenge : undefined, extra }));
  const code = back.searchParams.get('code') ?? '';
  const res = await f.exchange(a, code, { verifier: p.verifier });
  expect(res.status, await res.clone().text()).toBe(200);
  return { app: a, code, verifier: p.verifier, body: await json(res) };
}

describe.each(flows)('$platform authorization server', (f) => {
  it('redirects consent to redirect_uri with a code and the state, keeping its query', async () => {
    const a = await f.app();
    const back = await consent(f.authorize(a, { challenge: pkce().challenge }));
    expect(`${back.origin}${back.pathname}`).toBe('https://herald.example/v1/connect/callback');
    expect(back.searchParams.get('flow')).toBe('abc');
    expect(back.searchParams.get('state')).toBe(STATE);
    expect(back.searchParams.get('code')).toMatch(/.{16,}/);
  });

  it('exchanges the code once; the token reads the profile; a replayed code is refused and kills the grant', async () => {
    const c = await connect(f);
    const token = f.access(c.body);
    expect((await f.profile(token)).status).toBe(200);
    const again = await f.exchange(c.app, c.code, { verifier: c.verifier });
    await f.refusedCode(again);
    expect((await f.profile(token)).status).toBe(f.deadStatus);
    const state = (await (await get(`/__fakes/${f.platform}/state`)).json()) as { oauth: Json };
    expect(state.oauth).toMatchObject({ authorizations: 1, codesExchanged: 1, revocations: 1 });
  });

  it('refuses the code for another redirect_uri', async () => {
    const a = await f.app();
    const p = pkce();
    const back = await consent(f.authorize(a, { challenge: f.usesPkce ? p.challenge : undefined }));
    const res = await f.exchange(a, back.searchParams.get('code') ?? '', {
      verifier: p.verifier,
      redirect: 'https://evil.example/callback',
    });
    await f.refusedCode(res);
  });

  // Only platforms whose flow uses PKCE.
  if (f.usesPkce)
    it('refuses a code_verifier that does not hash to the challenge', async () => {
      const a = await f.app();
      const back = await consent(f.authorize(a, { challenge: pkce().challenge }));
      const res = await f.exchange(a, back.searchParams.get('code') ?? '', { verifier: pkce().verifier });
      await f.refusedCode(res);
    });

  it('refuses other client credentials', async () => {
    const a = await f.app();
    const p = pkce();
    const back = await consent(f.authorize(a, { challenge: f.usesPkce ? p.challenge : undefined }));
    const res = await f.exchange(
      { id: a.id, secret: 'not-the-secret' },
      back.searchParams.get('code') ?? '',
      {
        verifier: p.verifier,
      },
    );
    await f.refusedClient(res);
  });

  it('fake_consent=deny redirects the documented error with the state', async () => {
    const a = await f.app();
    const back = await consent(
      f.authorize(a, { challenge: pkce().challenge, extra: { fake_consent: 'deny' } }),
    );
    for (const [k, v] of Object.entries(f.denied)) expect(back.searchParams.get(k)).toBe(v);
    expect(back.searchParams.get('state')).toBe(STATE);
    expect(back.searchParams.get('code')).toBeNull();
  });

  it('fake_consent=partial grants every scope but the publishing one', async () => {
    const c = await connect(f, { fake_consent: 'partial' });
    const granted = f.granted(c.body);
    if (granted.length) {
      expect(granted).not.toContain(f.publishScope);
      expect(granted).toContain(f.scopes[0]); // the first scope asked never publishes
      for (const s of granted) expect(f.scopes).toContain(s);
    }
    expect((await f.profile(f.access(c.body))).status).toBe(200);
  });

  it('fake_token_lifetime: the access token expires', async () => {
    const c = await connect(f, { fake_token_lifetime: '1' });
    const token = f.access(c.body);
    expect((await f.profile(token)).status).toBe(200);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 1500 });
    expect((await f.profile(token)).status).toBe(f.deadStatus);
  });

  // Only platforms with a revocation endpoint.
  if (f.revoke !== undefined)
    it('revokes through the platform API: the token stops working', async () => {
      const c = await connect(f);
      const token = f.access(c.body);
      const res = await f.revoke?.(c.app, token);
      expect(res?.status).toBe(200);
      expect((await f.profile(token)).status).toBe(f.deadStatus);
    });

  it('the control API revokes a user: every token of that user stops working at once', async () => {
    const one = await connect(f, { fake_user: 'alice' });
    const two = await connect(f, { fake_user: 'alice' });
    const bob = await connect(f, { fake_user: 'bob' });
    const res = await post(`/__fakes/${f.platform}/revoke`, JSON.stringify({ user: 'alice' }), {
      'content-type': 'application/json',
    });
    expect(await res.json()).toEqual({ revoked: 2 });
    expect((await f.profile(f.access(one.body))).status).toBe(f.deadStatus);
    expect((await f.profile(f.access(two.body))).status).toBe(f.deadStatus);
    expect((await f.profile(f.access(bob.body))).status).toBe(200);
    const state = (await (await get(`/__fakes/${f.platform}/state`)).json()) as {
      oauth: { revoked: Array<{ user: string; via: string }> };
    };
    expect(state.oauth.revoked.map((r) => [r.user, r.via])).toEqual([
      ['alice', 'control'],
      ['alice', 'control'],
    ]);
  });
});

// ---- platform shapes -------------------------------------------------------------------------

const byName = (p: string) => flows.find((f) => f.platform === p) as Flow;
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

describe('x', () => {
  const x = byName('x');

  it('requires PKCE and state', async () => {
    const a = await x.app();
    const back = await consent(x.authorize(a, {}));
    expect(back.searchParams.get('error')).toBe('invalid_request');
  });

  it('answers the documented token, /2/users/me, single-use refresh and revoke shapes', async () => {
    const c = await connect(x, { fake_user: 'alice' });
    expect(Object.keys(c.body).sort()).toEqual([
      'access_token',
      'expires_in',
      'refresh_token',
      'scope',
      'token_type',
    ]);
    expect(c.body).toMatchObject({
      token_type: 'bearer',
      expires_in: 7200,
      scope: 'tweet.read users.read tweet.write offline.access',
    });
    const me = await json(await x.profile(String(c.body.access_token)));
    expect(me).toEqual({
      data: {
        id: expect.stringMatching(/^\d{19}$/),
        name: 'alice',
        username: 'alice',
        profile_image_url: expect.stringMatching(new RegExp(`^${origin}/x/`)),
        public_metrics: {
          followers_count: expect.any(Number),
          following_count: expect.any(Number),
          tweet_count: expect.any(Number),
          listed_count: expect.any(Number),
          like_count: 0,
          media_count: 0,
        },
      },
    });
    // Deterministic per name.
    const again = await json(
      await x.profile(String((await connect(x, { fake_user: 'alice' })).body.access_token)),
    );
    expect(again).toEqual(me);

    const refresh = () =>
      post(
        '/x/2/oauth2/token',
        form({ grant_type: 'refresh_token', refresh_token: String(c.body.refresh_token) }),
        {
          ...FORM,
          authorization: basic(c.app.id, c.app.secret),
        },
      );
    const r1 = await json(await refresh());
    expect(r1.refresh_token).not.toBe(c.body.refresh_token);
    expect((await refresh()).status).toBe(400); // single use
    const revoked = await x.revoke?.(c.app, String(r1.access_token));
    expect(await revoked?.json()).toEqual({ revoked: true });
    expect((await x.profile(String(r1.access_token))).status).toBe(401);
  });

  it('refuses a code after its 10 minutes, and comma-separated scopes as unknown', async () => {
    const a = await x.app();
    const p = pkce();
    const back = await consent(x.authorize(a, { challenge: p.challenge }));
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 10 * 60_000 + 1000 });
    await x.refusedCode(await x.exchange(a, back.searchParams.get('code') ?? '', { verifier: p.verifier }));
    vi.useRealTimers();
    const commas = await consent(
      `/x/i/oauth2/authorize?${query({ response_type: 'code', client_id: a.id, redirect_uri: REDIRECT, scope: 'tweet.read,users.read', state: STATE, code_challenge: p.challenge, code_challenge_method: 'S256' })}`,
    );
    expect(commas.searchParams.get('error')).toBe('invalid_scope');
    expect(commas.searchParams.get('state')).toBe(STATE);
    // An unknown client or redirect_uri is never redirected to.
    const unknown = await get(x.authorize({ id: 'someone-else' }, { challenge: p.challenge }));
    expect(unknown.status).toBe(400);
    expect(unknown.headers.get('location')).toBeNull();
  });

  it('gives no refresh token without offline.access and refuses tweets without tweet.write', async () => {
    const a = await x.app();
    const p = pkce();
    const back = await consent(
      x.authorize(a, { challenge: p.challenge, scopes: ['tweet.read', 'users.read'] }),
    );
    const body = await json(
      await x.exchange(a, back.searchParams.get('code') ?? '', { verifier: p.verifier }),
    );
    expect(body.refresh_token).toBeUndefined();
    const res = await post('/x/2/tweets', JSON.stringify({ text: 'hi' }), {
      'content-type': 'application/json',
      ...bearer(String(body.access_token)),
    });
    expect(res.status).toBe(403);
  });

  it('tweets with a flow token are authored by the connected user; the legacy token still works', async () => {
    const c = await connect(x, { fake_user: 'carol' });
    const me = (await json(await x.profile(String(c.body.access_token)))).data as Json;
    const res = await post('/x/2/tweets', JSON.stringify({ text: 'hello' }), {
      'content-type': 'application/json',
      ...bearer(String(c.body.access_token)),
    });
    expect(res.status).toBe(201);
    expect(
      fakes.fake<{ posts: Array<{ author_id: string }> } & import('../../fakes/server.ts').FakePlatform>('x')
        .posts[0]?.author_id,
    ).toBe(me.id);
    expect((await x.profile('token')).status).toBe(200);
  });
});

describe('linkedin', () => {
  const li = byName('linkedin');
  const rest = (t: string) => ({
    ...bearer(t),
    'linkedin-version': '202504',
    'x-restli-protocol-version': '2.0.0',
  });

  it('answers the token without token_type (with openid: Bearer and an id_token), userinfo and the organizations', async () => {
    const a = await li.app();
    const back = await consent(li.authorize(a, { scopes: ['w_member_social', 'r_organization_admin'] }));
    const plain = await json(await li.exchange(a, back.searchParams.get('code') ?? '', {}));
    expect(Object.keys(plain).sort()).toEqual([
      'access_token',
      'expires_in',
      'refresh_token',
      'refresh_token_expires_in',
      'scope',
    ]);
    expect(plain).toMatchObject({ expires_in: 5184000, scope: 'w_member_social,r_organization_admin' });

    const c = await connect(li);
    expect(c.body).toMatchObject({
      token_type: 'Bearer',
      id_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
    });
    const t = String(c.body.access_token);
    const me = await json(await li.profile(t));
    expect(me).toEqual({
      sub: 'abc',
      name: 'Ada Acme',
      given_name: 'Ada',
      family_name: 'Acme',
      picture: expect.stringMatching(new RegExp(`^${origin}/linkedin/`)),
      locale: { country: 'US', language: 'en' },
    });
    const acls = await json(
      await get('/linkedin/rest/organizationAcls?q=roleAssignee&role=ADMINISTRATOR&state=APPROVED', rest(t)),
    );
    expect(acls).toMatchObject({
      elements: [
        {
          organization: 'urn:li:organization:2414183',
          role: 'ADMINISTRATOR',
          state: 'APPROVED',
          roleAssignee: 'urn:li:person:abc',
        },
      ],
      paging: { start: 0, total: 1 },
    });
    expect(await json(await get('/linkedin/rest/organizations/2414183', rest(t)))).toMatchObject({
      id: 2414183,
      localizedName: 'Acme Corp',
      vanityName: 'acme-corp',
    });
    const sizes = await get(
      `/linkedin/rest/networkSizes/${encodeURIComponent('urn:li:organization:2414183')}?edgeType=COMPANY_FOLLOWED_BY_MEMBER`,
      rest(t),
    );
    expect(await json(sizes)).toEqual({ firstDegreeSize: 5120 });
    // The /rest routes want the version headers.
    expect((await get('/linkedin/rest/organizations/2414183', bearer(t))).status).toBe(400);
  });

  it('gates the organization routes on r_organization_admin and keeps the refresh token', async () => {
    const c = await connect(li, { fake_consent: 'partial' });
    const t = String(c.body.access_token);
    const a = await li.app();
    const back = await consent(li.authorize(a, { scopes: ['openid', 'profile'] }));
    const noOrg = await json(await li.exchange(a, back.searchParams.get('code') ?? '', {}));
    const res = await get('/linkedin/rest/organizationAcls?q=roleAssignee', rest(String(noOrg.access_token)));
    expect(res.status).toBe(403);
    expect(await json(res)).toMatchObject({ status: 403, code: 'ACCESS_DENIED' });
    const refresh = () =>
      post(
        '/linkedin/oauth/v2/accessToken',
        form({
          grant_type: 'refresh_token',
          refresh_token: String(c.body.refresh_token),
          client_id: c.app.id,
          client_secret: c.app.secret,
        }),
      );
    const r1 = await json(await refresh());
    const r2 = await json(await refresh());
    expect(r1.refresh_token).toBe(c.body.refresh_token);
    expect(r2.access_token).not.toBe(r1.access_token);
    expect((await li.profile(t)).status).toBe(200);
  });

  it('tells revoked and expired tokens apart', async () => {
    const c = await connect(li);
    await li.revoke?.(c.app, String(c.body.access_token));
    expect(await json(await li.profile(String(c.body.access_token)))).toMatchObject({
      serviceErrorCode: 65601,
      code: 'REVOKED_ACCESS_TOKEN',
    });
  });
});

describe.each(['facebook', 'instagram'] as const)('%s (Facebook Login)', (p) => {
  const f = byName(p);

  it('exchanges for a long-lived token and lists the Pages with Page tokens the Page endpoints accept', async () => {
    const c = await connect(f);
    expect(c.body).toEqual({ access_token: expect.any(String), token_type: 'bearer', expires_in: 3600 });
    const long = await json(
      await get(
        `/${p}/v24.0/oauth/access_token?${query({
          grant_type: 'fb_exchange_token',
          client_id: c.app.id,
          client_secret: c.app.secret,
          fb_exchange_token: String(c.body.access_token),
        })}`,
      ),
    );
    expect(long).toEqual({ access_token: expect.any(String), token_type: 'bearer', expires_in: 5183944 });
    const fields =
      p === 'facebook'
        ? 'id,name,access_token,picture,followers_count,fan_count'
        : 'id,name,access_token,instagram_business_account{id,username,profile_picture_url,followers_count}';
    const accounts = await json(
      await get(`/${p}/v24.0/me/accounts?fields=${fields}&access_token=${long.access_token}`),
    );
    const data = accounts.data as Json[];
    expect(data).toHaveLength(2);
    expect(accounts.paging).toEqual({ cursors: { before: expect.any(String), after: expect.any(String) } });
    if (p === 'facebook') {
      expect(data[0]).toEqual({
        id: '104857600000001',
        name: 'Acme',
        access_token: expect.any(String),
        picture: {
          data: {
            height: 50,
            width: 50,
            is_silhouette: false,
            url: expect.stringContaining(`${origin}/facebook/`),
          },
        },
        followers_count: 4200,
        fan_count: 4105,
      });
      const pageToken = String(data[0]?.access_token);
      const res = await post(
        `/facebook/v24.0/104857600000001/feed`,
        form({ message: 'hi', access_token: pageToken }),
      );
      expect(res.status).toBe(200);
      // A user token cannot publish to the Page.
      const asUser = await post(
        `/facebook/v24.0/104857600000001/feed`,
        form({ message: 'x', access_token: String(long.access_token) }),
      );
      expect(asUser.status).toBe(403);
      // Revoking the app kills the user's tokens and the Page tokens derived from them.
      expect(
        await json(
          await fetch(`${origin}/facebook/v24.0/me/permissions?access_token=${long.access_token}`, {
            method: 'DELETE',
          }),
        ),
      ).toEqual({ success: true });
      const dead = await post(
        `/facebook/v24.0/104857600000001/feed`,
        form({ message: 'y', access_token: pageToken }),
      );
      expect(dead.status).toBe(400);
      expect((await json(dead)).error).toMatchObject({ code: 190, error_subcode: 458 });
    } else {
      expect(data[0]).toEqual({
        id: expect.any(String),
        name: 'Acme',
        access_token: expect.any(String),
        instagram_business_account: {
          id: '17841405822304914',
          username: 'acme',
          profile_picture_url: expect.stringContaining(`${origin}/instagram/`),
          followers_count: 12850,
        },
      });
      expect(data[1]?.instagram_business_account).toBeUndefined();
    }
  });

  it('lists granted and declined permissions; a used code answers 100/36009', async () => {
    const c = await connect(f, { fake_consent: 'partial' });
    const perms = await json(await get(`/${p}/v24.0/me/permissions?access_token=${c.body.access_token}`));
    expect(perms.data).toContainEqual({ permission: f.publishScope, status: 'declined' });
    expect(perms.data).toContainEqual({ permission: 'public_profile', status: 'granted' });
    const again = await f.exchange(c.app, c.code, {});
    expect((await json(again)).error).toMatchObject({
      code: 100,
      error_subcode: 36009,
      message: 'This authorization code has been used.',
    });
  });

  it('appends #_=_ to the consent redirect and gives fake users Pages of their own', async () => {
    const a = await f.app();
    const back = await consent(f.authorize(a, { extra: { fake_user: 'dana' } }));
    expect(back.hash).toBe('#_=_');
    const token = await json(await f.exchange(a, back.searchParams.get('code') ?? '', {}));
    const accounts = await json(
      await get(
        `/${p}/v24.0/me/accounts?fields=id,instagram_business_account&access_token=${token.access_token}`,
      ),
    );
    const ids = (accounts.data as Json[]).map((d) => d.id);
    expect(ids).toHaveLength(2);
    expect(ids).not.toContain('104857600000001');
  });
});

describe('threads', () => {
  const th = byName('threads');

  it('exchanges short → long-lived, refreshes, reads the profile and the followers count', async () => {
    const a = await th.app();
    const back = await consent(th.authorize(a, { extra: { fake_user: 'erin' } }));
    expect(back.hash).toBe('#_');
    const short = await json(await th.exchange(a, back.searchParams.get('code') ?? '', {}));
    expect(Object.keys(short).sort()).toEqual(['access_token', 'user_id']);
    const long = await json(
      await get(
        `/threads/access_token?${query({ grant_type: 'th_exchange_token', client_secret: a.secret, access_token: String(short.access_token) })}`,
      ),
    );
    expect(long).toEqual({ access_token: expect.any(String), token_type: 'bearer', expires_in: 5183944 });
    const refreshed = await json(
      await get(
        `/threads/refresh_access_token?grant_type=th_refresh_token&access_token=${long.access_token}`,
      ),
    );
    expect(refreshed).toMatchObject({ token_type: 'bearer', expires_in: 5183944 });
    const me = await json(await th.profile(String(refreshed.access_token)));
    expect(me).toEqual({
      id: short.user_id,
      username: 'erin',
      name: 'erin',
      threads_profile_picture_url: expect.stringContaining(`${origin}/threads/`),
    });
    const insights = await json(
      await get(
        `/threads/v1.0/me/threads_insights?metric=followers_count&access_token=${refreshed.access_token}`,
      ),
    );
    expect(insights.data).toEqual([
      {
        name: 'followers_count',
        period: 'day',
        title: 'followers_count',
        description: expect.any(String),
        total_value: { value: expect.any(Number) },
        id: `${short.user_id}/insights/followers_count/day`,
      },
    ]);
  });

  it('refuses publishing and insights without their permissions', async () => {
    const a = await th.app();
    const back = await consent(th.authorize(a, { scopes: ['threads_basic'] }));
    const t = (await json(await th.exchange(a, back.searchParams.get('code') ?? '', {}))).access_token;
    const res = await post(
      '/threads/v1.0/me/threads',
      form({ media_type: 'TEXT', text: 'hi', access_token: String(t) }),
    );
    expect(res.status).toBe(400);
    expect((await json(res)).error).toMatchObject({ code: 10 });
    expect(
      (await get(`/threads/v1.0/me/threads_insights?metric=followers_count&access_token=${t}`)).status,
    ).toBe(400);
  });
});

describe('tiktok', () => {
  const tt = byName('tiktok');

  it('answers the documented token, rotates refresh tokens and gates user info fields by scope', async () => {
    const a = await tt.app();
    const p = pkce();
    const back = await consent(tt.authorize(a, { challenge: p.challenge }));
    expect(back.searchParams.get('scopes')).toBe(
      'user.info.basic,user.info.profile,user.info.stats,video.publish',
    );
    const body = await json(
      await tt.exchange(a, back.searchParams.get('code') ?? '', { verifier: p.verifier }),
    );
    expect(body).toEqual({
      access_token: expect.stringMatching(/^act\./),
      expires_in: 7200,
      open_id: 'open-id-1',
      refresh_expires_in: 15552000,
      refresh_token: expect.stringMatching(/^rft\./),
      scope: 'user.info.basic,user.info.profile,user.info.stats,video.publish',
      token_type: 'Bearer',
    });
    const info = await json(await tt.profile(String(body.access_token)));
    expect(info).toEqual({
      data: {
        user: {
          open_id: 'open-id-1',
          union_id: expect.any(String),
          avatar_url: expect.stringContaining(`${origin}/tiktok/`),
          display_name: 'Herald',
          username: 'herald',
          follower_count: 5300,
        },
      },
      error: { code: 'ok', message: '', log_id: expect.any(String) },
    });
    const refresh = (rt: unknown) =>
      post(
        '/tiktok/v2/oauth/token/',
        form({
          client_key: a.id,
          client_secret: a.secret,
          grant_type: 'refresh_token',
          refresh_token: String(rt),
        }),
      );
    const r1 = await json(await refresh(body.refresh_token));
    expect(r1.refresh_token).not.toBe(body.refresh_token);
    expect((await refresh(body.refresh_token)).status).toBe(400);
    expect((await refresh(r1.refresh_token)).status).toBe(200);
    expect(await json(await tt.profile('nope'))).toMatchObject({ error: { code: 'access_token_invalid' } });
  });

  it('accepts the hex-encoded challenge of the desktop guide; stats need user.info.stats', async () => {
    const a = await tt.app();
    const verifier = randomBytes(32).toString('hex');
    const challenge = createHash('sha256').update(verifier).digest('hex');
    const back = await consent(tt.authorize(a, { challenge, scopes: ['user.info.basic'] }));
    const body = await json(await tt.exchange(a, back.searchParams.get('code') ?? '', { verifier }));
    const res = await tt.profile(String(body.access_token));
    expect(res.status).toBe(401);
    expect((await json(res)).error).toMatchObject({ code: 'scope_not_authorized' });
  });
});

describe('youtube (Google)', () => {
  const yt = byName('youtube');

  it('answers the documented token and channels; refresh keeps the refresh token', async () => {
    const c = await connect(yt);
    expect(c.body).toEqual({
      access_token: expect.stringMatching(/^ya29\./),
      expires_in: 3599,
      refresh_token: expect.any(String),
      scope:
        'https://www.googleapis.com/auth/youtube.readonly https://www.googleapis.com/auth/youtube.upload',
      token_type: 'Bearer',
    });
    const channels = await json(await yt.profile(String(c.body.access_token)));
    expect(channels).toMatchObject({
      kind: 'youtube#channelListResponse',
      items: [
        {
          id: 'UCherald',
          snippet: {
            title: 'Herald',
            customUrl: '@herald',
            thumbnails: { default: { url: expect.any(String) } },
          },
          statistics: {
            subscriberCount: '12400',
            hiddenSubscriberCount: false,
            videoCount: '87',
            viewCount: '1250000',
          },
        },
      ],
    });
    const refresh = () =>
      post(
        '/youtube/token',
        form({ grant_type: 'refresh_token', refresh_token: String(c.body.refresh_token) }),
        { ...FORM, authorization: basic(c.app.id, c.app.secret) },
      );
    const r1 = await json(await refresh());
    expect(r1.refresh_token).toBeUndefined();
    expect((await refresh()).status).toBe(200);
    expect(await json(await post('/youtube/revoke', form({ token: String(c.body.refresh_token) })))).toEqual(
      {},
    );
    expect(await json(await refresh())).toEqual({
      error: 'invalid_grant',
      error_description: 'Token has been expired or revoked.',
    });
    expect(await json(await post(`/youtube/revoke?token=${c.body.access_token}`, ''))).toEqual({
      error: 'invalid_token',
      error_description: 'Token expired or revoked',
    });
  });

  it('gives fake users two channels, and a refresh token only on first offline consent or prompt=consent', async () => {
    const c = await connect(yt, { fake_user: 'frank', prompt: '' });
    expect(c.body.refresh_token).toEqual(expect.any(String));
    const items = (await json(await yt.profile(String(c.body.access_token)))).items as Json[];
    expect(items.map((i) => i.id)).toEqual([
      expect.stringMatching(/^UC[\w-]{22}$/),
      expect.stringMatching(/^UC[\w-]{22}$/),
    ]);
    const second = await connect(yt, { fake_user: 'frank', prompt: '' });
    expect(second.body.refresh_token).toBeUndefined();
    const forced = await connect(yt, { fake_user: 'frank', prompt: 'consent' });
    expect(forced.body.refresh_token).toEqual(expect.any(String));
    const online = await connect(yt, { fake_user: 'gina', access_type: 'online' });
    expect(online.body.refresh_token).toBeUndefined();
  });

  it('refuses uploads without youtube.upload', async () => {
    const c = await connect(yt, { fake_consent: 'partial' });
    const res = await post(
      '/youtube/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status',
      '{}',
      {
        'content-type': 'application/json',
        ...bearer(String(c.body.access_token)),
      },
    );
    expect(res.status).toBe(403);
    expect((await json(res)).error).toMatchObject({
      code: 403,
      errors: [{ reason: 'insufficientPermissions' }],
    });
  });
});

describe('pinterest', () => {
  const pin = byName('pinterest');

  it('answers the documented token, user account and boards; continuous refresh rotates', async () => {
    const c = await connect(pin);
    expect(c.body).toEqual({
      access_token: expect.stringMatching(/^pina_/),
      refresh_token: expect.stringMatching(/^pinr_/),
      refresh_token_expires_in: 5184000,
      refresh_token_expires_at: expect.any(Number),
      response_type: 'authorization_code',
      token_type: 'bearer',
      expires_in: 2592000,
      scope: 'boards:read,pins:read,pins:write,user_accounts:read',
    });
    const t = String(c.body.access_token);
    expect(await json(await pin.profile(t))).toMatchObject({
      account_type: 'BUSINESS',
      id: '2783136121146311751',
      username: 'herald',
      profile_image: expect.stringContaining(`${origin}/pinterest/`),
      follower_count: 980,
      following_count: 347,
      board_count: 2,
      pin_count: 339,
    });
    const boards = await json(await get('/pinterest/v5/boards', bearer(t)));
    expect(boards.bookmark).toBeNull();
    expect(boards.items).toEqual([
      expect.objectContaining({
        id: '549755885175',
        name: 'Herald',
        privacy: 'PUBLIC',
        owner: { username: 'herald' },
      }),
      expect.objectContaining({ id: '549755885176', privacy: 'SECRET', pin_count: 7, follower_count: 0 }),
    ]);
    const refresh = (rt: unknown) =>
      post('/pinterest/v5/oauth/token', form({ grant_type: 'refresh_token', refresh_token: String(rt) }), {
        ...FORM,
        authorization: basic(c.app.id, c.app.secret),
      });
    const r1 = await json(await refresh(c.body.refresh_token));
    expect(r1).toMatchObject({ response_type: 'refresh_token', refresh_token: expect.any(String) });
    expect(r1.refresh_token).not.toBe(c.body.refresh_token);
    expect((await refresh(c.body.refresh_token)).status).toBe(401); // {code: 283}
  });

  it('does not rotate legacy refresh tokens; pins need pins:write', async () => {
    const a = await pin.app();
    const back = await consent(pin.authorize(a, { extra: { fake_consent: 'partial' } }));
    const res = await post(
      '/pinterest/v5/oauth/token',
      form({
        grant_type: 'authorization_code',
        code: back.searchParams.get('code') ?? '',
        redirect_uri: REDIRECT,
      }),
      { ...FORM, authorization: basic(a.id, a.secret) },
    );
    const body = await json(res);
    expect(body.refresh_token_expires_in).toBe(31536000);
    const refresh = () =>
      post(
        '/pinterest/v5/oauth/token',
        form({ grant_type: 'refresh_token', refresh_token: String(body.refresh_token) }),
        {
          ...FORM,
          authorization: basic(a.id, a.secret),
        },
      );
    expect((await json(await refresh())).refresh_token).toBeUndefined();
    expect((await refresh()).status).toBe(200);
    const pinRes = await post(
      '/pinterest/v5/pins',
      JSON.stringify({
        board_id: '549755885175',
        media_source: { source_type: 'image_url', url: 'https://i.example/a.jpg' },
      }),
      { 'content-type': 'application/json', ...bearer(String(body.access_token)) },
    );
    expect(pinRes.status).toBe(403);
  });
});

describe('mastodon', () => {
  const m = byName('mastodon');

  it('registers apps (form or JSON) and holds authorize to their redirect_uris and scopes', async () => {
    const res = await post(
      '/mastodon/api/v1/apps',
      form({ client_name: 'Other', redirect_uris: 'https://a.example/cb', scopes: 'read' }),
    );
    const other = await json(res);
    expect(other).toEqual({
      id: expect.any(String),
      name: 'Other',
      website: null,
      scopes: ['read'],
      redirect_uri: 'https://a.example/cb',
      redirect_uris: ['https://a.example/cb'],
      client_id: expect.any(String),
      client_secret: expect.any(String),
      client_secret_expires_at: 0,
    });
    const wrongRedirect = await get(m.authorize({ id: String(other.client_id) }, { scopes: ['read'] }));
    expect(wrongRedirect.status).toBe(400);
    const tooWide = await get(
      `/mastodon/oauth/authorize?${query({ response_type: 'code', client_id: String(other.client_id), redirect_uri: 'https://a.example/cb', scope: 'read write' })}`,
    );
    expect(new URL(tooWide.headers.get('location') ?? '').searchParams.get('error')).toBe('invalid_scope');
    expect(
      (
        await post('/mastodon/api/v1/apps', JSON.stringify({ client_name: 'x', redirect_uris: 'nope' }), {
          'content-type': 'application/json',
        })
      ).status,
    ).toBe(422);
  });

  it('answers the documented token and the grant user in verify_credentials', async () => {
    const c = await connect(m, { fake_user: 'hana' });
    expect(c.body).toEqual({
      access_token: expect.any(String),
      token_type: 'Bearer',
      scope: 'read write',
      created_at: expect.any(Number),
    });
    expect(await json(await m.profile(String(c.body.access_token)))).toMatchObject({
      id: expect.stringMatching(/^\d{18}$/),
      username: 'hana',
      acct: 'hana',
      display_name: 'hana',
      avatar: expect.stringContaining(`${origin}/mastodon/`),
      followers_count: expect.any(Number),
    });
    expect(await json(await m.profile('token'))).toMatchObject({
      id: '109000000000000001',
      username: 'acme',
    });
  });

  it('shows the code for urn:ietf:wg:oauth:2.0:oob and takes form bodies with HTTP Basic', async () => {
    const reg = await json(
      await post(
        '/mastodon/api/v1/apps',
        form({
          client_name: 'CLI',
          redirect_uris: 'urn:ietf:wg:oauth:2.0:oob',
          scopes: 'read:accounts write:statuses',
        }),
      ),
    );
    const page = await get(
      `/mastodon/oauth/authorize?${query({ response_type: 'code', client_id: String(reg.client_id), redirect_uri: 'urn:ietf:wg:oauth:2.0:oob', scope: 'read:accounts' })}`,
    );
    expect(page.status).toBe(200);
    const code = /value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
    const res = await post(
      '/mastodon/oauth/token',
      form({ grant_type: 'authorization_code', code, redirect_uri: 'urn:ietf:wg:oauth:2.0:oob' }),
      { ...FORM, authorization: basic(String(reg.client_id), String(reg.client_secret)) },
    );
    const body = await json(res);
    expect(body.scope).toBe('read:accounts');
    expect((await m.profile(String(body.access_token))).status).toBe(200);
  });

  it('refuses statuses without write; says revoked once revoked', async () => {
    const c = await connect(m, { fake_consent: 'partial' });
    const t = String(c.body.access_token);
    expect(c.body.scope).toBe('read');
    const res = await post('/mastodon/api/v1/statuses', JSON.stringify({ status: 'hi' }), {
      'content-type': 'application/json',
      ...bearer(t),
    });
    expect(res.status).toBe(403);
    await m.revoke?.(c.app, t);
    expect(await json(await m.profile(t))).toEqual({ error: 'The access token was revoked' });
  });
});

describe('bluesky (app passwords)', () => {
  const session = async (identifier: string, password = 'app-password') =>
    post('/bluesky/xrpc/com.atproto.server.createSession', JSON.stringify({ identifier, password }), {
      'content-type': 'application/json',
    });

  it('refuses a wrong app password as the PDS does', async () => {
    const res = await session('ivy.bsky.social', 'wrong');
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual({
      error: 'AuthenticationRequired',
      message: 'Invalid identifier or password',
    });
  });

  it('answers getProfile by handle or did, and deleteSession ends the session', async () => {
    const s = await json(await session('ivy.bsky.social'));
    const byHandle = await json(
      await get('/bluesky/xrpc/app.bsky.actor.getProfile?actor=ivy.bsky.social', bearer(String(s.accessJwt))),
    );
    expect(byHandle).toMatchObject({
      did: s.did,
      handle: 'ivy.bsky.social',
      displayName: 'Ivy',
      avatar: expect.stringContaining(`${origin}/bluesky/`),
      followersCount: expect.any(Number),
      followsCount: expect.any(Number),
      postsCount: expect.any(Number),
    });
    expect(await json(await get(`/bluesky/xrpc/app.bsky.actor.getProfile?actor=${s.did}`))).toEqual(byHandle);
    expect((await get('/bluesky/xrpc/app.bsky.actor.getProfile?actor=nobody.bsky.social')).status).toBe(400);

    const del = (t: unknown) =>
      fetch(`${origin}/bluesky/xrpc/com.atproto.server.deleteSession`, {
        method: 'POST',
        headers: bearer(String(t)),
      });
    expect((await del(s.accessJwt)).status).toBe(401);
    expect((await del(s.refreshJwt)).status).toBe(200);
    const after = await get(
      '/bluesky/xrpc/com.atproto.repo.getRecord?repo=x&collection=y&rkey=z',
      bearer(String(s.accessJwt)),
    );
    expect(after.status).toBe(400);
  });

  it('the control API revokes a user: sessions end and the app password stops working', async () => {
    const s = await json(await session('jo.bsky.social'));
    const res = await post('/__fakes/bluesky/revoke', JSON.stringify({ user: 'jo.bsky.social' }));
    expect(await json(res)).toEqual({ revoked: 1 });
    expect(
      (await get('/bluesky/xrpc/app.bsky.feed.getPosts?uris=at://x', bearer(String(s.accessJwt)))).status,
    ).toBe(400);
    expect((await session('jo.bsky.social')).status).toBe(401);
    expect((await session('other.bsky.social')).status).toBe(200);
  });
});

describe('control API', () => {
  it('404s a revoke that matches nothing and keeps reset resetting the authorization servers', async () => {
    expect((await post('/__fakes/x/revoke', JSON.stringify({ user: 'nobody' }))).status).toBe(404);
    await connect(byName('x'));
    expect(((await (await get('/__fakes/x/state')).json()) as { oauth: Json }).oauth).toMatchObject({
      authorizations: 1,
      codesExchanged: 1,
    });
    await post('/__fakes/reset', '');
    expect(((await (await get('/__fakes/x/state')).json()) as { oauth: Json }).oauth).toMatchObject({
      authorizations: 0,
      codesExchanged: 0,
      refreshes: 0,
      revocations: 0,
      revoked: [],
    });
  });
});
