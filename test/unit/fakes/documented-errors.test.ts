import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  asControlFailure,
  type DocumentedError,
  documentedErrors,
  OAUTH_PLATFORMS,
  type OAuthPlatform,
} from '../../fakes/documented-errors.ts';
import { allFakes } from '../../fakes/index.ts';
import { FAKE_APPS, type FakeGrant, type FakeOAuth } from '../../fakes/oauth.ts';
import type { FakePlatforms } from '../../fakes/server.ts';

// The contract fakes' key error answers — the token endpoint refusing the client or the grant, the API
// refusing a revoked or expired token, throttling — against the platforms' published material:
//   1. each fake's own answer is the one documented-errors.ts records (with its source) for it;
//   2. every recorded answer can be injected, in-process and through the control API, on the paths the
//      fake really serves;
//   3. where a platform publishes a machine-readable description, the answers validate against its
//      schemas: X's OpenAPI document (Problem / GenericProblem, 2.159) and Pinterest's (Error,
//      Pinterest.Lib.Error and the documented examples, 5.23.0), excerpts under test/fakes/schemas/;
//   4. the OAuth-shaped token errors follow RFC 6749 §5.2 (error codes and their character set, 400, and
//      401 + WWW-Authenticate for invalid_client after HTTP Basic), except where a platform documents or
//      is observed to deviate.

let fakes: FakePlatforms;
let origin = '';

beforeAll(async () => {
  fakes = await allFakes().start();
  origin = fakes.origin;
});
afterAll(() => fakes.stop());
beforeEach(() => fakes.reset());

const REDIRECT = 'https://herald.example/v1/connect/callback';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const form = (o: Record<string, string>) => new URLSearchParams(o).toString();
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${origin}${path}`, { headers, redirect: 'manual' });
const post = (path: string, body: string, headers: Record<string, string> = FORM) =>
  fetch(`${origin}${path}`, { method: 'POST', body, headers, redirect: 'manual' });

type Json = Record<string, unknown>;

const oauthOf = (p: OAuthPlatform) => (fakes.fake(p) as unknown as { oauth: FakeOAuth }).oauth;

/** A grant of the fake's default user to Herald's app, made directly (no consent flow). */
function grantOf(p: OAuthPlatform, id: string): FakeGrant {
  return {
    id,
    clientId: FAKE_APPS[p].clientId,
    user: oauthOf(p).user(),
    requested: [],
    scopes: [],
    declined: [],
    lifetime: null,
    redirectUri: REDIRECT,
    createdAt: Date.now(),
    revoked: null,
    extra: {},
    tokens: new Set(),
  };
}

/** A token of the fake's authorization server, issued directly (the flows are tested in oauth.test.ts). */
function issue(p: OAuthPlatform, state: 'revoked' | 'expired'): string {
  const oauth = oauthOf(p);
  const grant = grantOf(p, `grant-test-${p}`);
  const t = oauth.issue(grant, 'access', 3600, { type: 'user', longLived: true });
  if (state === 'revoked') oauth.revokeGrant(grant, 'test');
  else t.expiresAt = Date.now() - 60_000;
  return t.token;
}

/** How to make each fake refuse the client and the grant at its token endpoint, and call its API. */
interface Drive {
  badClient(): Promise<Response>;
  badGrant(): Promise<Response>;
  /** A call of the API with this token; `path` is the path below the fake's prefix. */
  api(token: string): { path: string; call: () => Promise<Response> };
}

const app = (p: OAuthPlatform) => FAKE_APPS[p];
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

/** A consent redirect's code (Facebook Login), exchanged once so the next exchange finds it used. */
async function usedGraphCode(p: 'facebook' | 'instagram'): Promise<Response> {
  const a = app(p);
  const consent = await get(
    `/${p}/v24.0/dialog/oauth?${form({ client_id: a.clientId, redirect_uri: REDIRECT, state: 's', response_type: 'code' })}`,
  );
  const code = new URL(consent.headers.get('location') ?? '').searchParams.get('code') ?? '';
  const exchange = () =>
    get(
      `/${p}/v24.0/oauth/access_token?${form({ client_id: a.clientId, client_secret: a.clientSecret, redirect_uri: REDIRECT, code })}`,
    );
  expect((await exchange()).status).toBe(200);
  return exchange();
}

const graphDrive = (p: 'facebook' | 'instagram'): Drive => ({
  badClient: () =>
    get(
      `/${p}/v24.0/oauth/access_token?${form({ client_id: app(p).clientId, client_secret: 'wrong', redirect_uri: REDIRECT, code: 'AQnope' })}`,
    ),
  badGrant: () => usedGraphCode(p),
  api: (t) => ({ path: '/v24.0/me', call: () => get(`/${p}/v24.0/me?access_token=${t}`) }),
});

/** A refresh with an unknown refresh token, the client authenticated with HTTP Basic and `secret`. */
const basicRefresh = (path: string, p: OAuthPlatform, secret: string) =>
  post(path, form({ grant_type: 'refresh_token', refresh_token: 'nope' }), {
    ...FORM,
    authorization: basic(app(p).clientId, secret),
  });

const drives: Record<OAuthPlatform, Drive> = {
  x: {
    badClient: () => basicRefresh('/x/2/oauth2/token', 'x', 'wrong'),
    badGrant: () => basicRefresh('/x/2/oauth2/token', 'x', app('x').clientSecret),
    api: (t) => ({ path: '/2/users/me', call: () => get('/x/2/users/me', bearer(t)) }),
  },
  linkedin: {
    badClient: () =>
      post(
        '/linkedin/oauth/v2/accessToken',
        form({
          grant_type: 'refresh_token',
          refresh_token: 'nope',
          client_id: app('linkedin').clientId,
          client_secret: 'wrong',
        }),
      ),
    badGrant: () =>
      post(
        '/linkedin/oauth/v2/accessToken',
        form({
          grant_type: 'refresh_token',
          refresh_token: 'nope',
          client_id: app('linkedin').clientId,
          client_secret: app('linkedin').clientSecret,
        }),
      ),
    api: (t) => ({ path: '/v2/userinfo', call: () => get('/linkedin/v2/userinfo', bearer(t)) }),
  },
  facebook: graphDrive('facebook'),
  instagram: graphDrive('instagram'),
  threads: {
    badClient: () =>
      post(
        '/threads/oauth/access_token',
        form({
          client_id: app('threads').clientId,
          client_secret: 'wrong',
          grant_type: 'authorization_code',
          redirect_uri: REDIRECT,
          code: 'nope',
        }),
      ),
    badGrant: () =>
      post(
        '/threads/oauth/access_token',
        form({
          client_id: app('threads').clientId,
          client_secret: app('threads').clientSecret,
          grant_type: 'authorization_code',
          redirect_uri: REDIRECT,
          code: 'nope',
        }),
      ),
    api: (t) => ({ path: '/v1.0/me', call: () => get(`/threads/v1.0/me?fields=id&access_token=${t}`) }),
  },
  tiktok: {
    badClient: () =>
      post(
        '/tiktok/v2/oauth/token/',
        form({
          client_key: app('tiktok').clientId,
          client_secret: 'wrong',
          grant_type: 'refresh_token',
          refresh_token: 'nope',
        }),
      ),
    badGrant: () =>
      post(
        '/tiktok/v2/oauth/token/',
        form({
          client_key: app('tiktok').clientId,
          client_secret: app('tiktok').clientSecret,
          grant_type: 'refresh_token',
          refresh_token: 'nope',
        }),
      ),
    api: (t) => ({
      path: '/v2/user/info/',
      call: () => get('/tiktok/v2/user/info/?fields=open_id', bearer(t)),
    }),
  },
  youtube: {
    badClient: () =>
      post('/youtube/token', form({ grant_type: 'refresh_token', refresh_token: 'nope' }), {
        ...FORM,
        authorization: basic(app('youtube').clientId, 'wrong'),
      }),
    badGrant: () =>
      post(
        '/youtube/token',
        form({
          grant_type: 'refresh_token',
          refresh_token: 'nope',
          client_id: app('youtube').clientId,
          client_secret: app('youtube').clientSecret,
        }),
      ),
    api: (t) => ({
      path: '/youtube/v3/channels',
      call: () => get('/youtube/youtube/v3/channels?part=id&mine=true', bearer(t)),
    }),
  },
  pinterest: {
    badClient: () => basicRefresh('/pinterest/v5/oauth/token', 'pinterest', 'wrong'),
    badGrant: () => basicRefresh('/pinterest/v5/oauth/token', 'pinterest', app('pinterest').clientSecret),
    api: (t) => ({ path: '/v5/user_account', call: () => get('/pinterest/v5/user_account', bearer(t)) }),
  },
  mastodon: {
    badClient: () =>
      post(
        '/mastodon/oauth/token',
        form({ grant_type: 'authorization_code', code: 'nope', redirect_uri: REDIRECT }),
        {
          ...FORM,
          authorization: basic('unknown-app', 'wrong'),
        },
      ),
    badGrant: () => {
      (fakes.fake('mastodon') as unknown as { oauth: FakeOAuth }).oauth.register({
        clientId: 'registered-app',
        secret: 'registered-secret',
        redirectUris: [REDIRECT],
        scopes: ['read', 'write'],
      });
      return post(
        '/mastodon/oauth/token',
        form({
          grant_type: 'authorization_code',
          code: 'nope',
          redirect_uri: REDIRECT,
          client_id: 'registered-app',
          client_secret: 'registered-secret',
        }),
      );
    },
    api: (t) => ({
      path: '/api/v1/accounts/verify_credentials',
      call: () => get('/mastodon/api/v1/accounts/verify_credentials', bearer(t)),
    }),
  },
};

/** Trace ids, log ids and expiry dates differ from one answer to the next. */
function scrub(v: unknown): unknown {
  if (typeof v === 'string')
    return v.replace(/Session has expired on [^."]+\./g, 'Session has expired on <date>.');
  if (Array.isArray(v)) return v.map(scrub);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.entries(v).map(([k, x]) => [k, k === 'fbtrace_id' || k === 'log_id' ? '<id>' : scrub(x)]),
    );
  return v;
}

const TIME_HEADERS = new Set(['x-rate-limit-reset', 'x-ratelimit-reset']);

/** The response is the documented answer: status, body (scrubbed) and every documented header. */
async function expectDocumented(res: Response, doc: DocumentedError): Promise<Json> {
  const text = await res.text();
  expect(res.status, text).toBe(doc.status);
  const body = JSON.parse(text) as Json;
  expect(scrub(body)).toEqual(scrub(doc.body));
  for (const [k, v] of Object.entries(doc.headers ?? {})) {
    if (TIME_HEADERS.has(k)) expect(res.headers.get(k), k).toBeTruthy();
    else expect(scrub(res.headers.get(k)), k).toBe(scrub(v));
  }
  return body;
}

describe('documentedErrors', () => {
  it.each(OAUTH_PLATFORMS)('%s: every kind has a status, a body, a path, a meaning and a source', (p) => {
    const e = documentedErrors[p];
    expect(e.tokenInvalidClient.meaning).toBe('operator');
    expect(e.tokenInvalidGrant.meaning).toBe('reauthorize');
    expect(e.revokedToken.meaning).toBe('reauthorize');
    expect(e.expiredToken.meaning).toBe('reauthorize');
    expect(e.throttled.meaning).toBe('later');
    const all = [
      e.tokenInvalidClient,
      e.tokenInvalidGrant,
      e.revokedToken,
      e.expiredToken,
      e.throttled,
      ...(e.tokenInvalidRequest ? [e.tokenInvalidRequest] : []),
      ...Object.values(e.variants),
    ];
    for (const d of all) {
      expect(d.path).toBeInstanceOf(RegExp);
      expect(d.body).toBeTruthy();
      expect(d.source.length).toBeGreaterThan(10);
      expect(['documented', 'observed', 'assumed']).toContain(d.basis);
    }
  });

  it('throttling: X and Mastodon say when to retry; Meta throttles with 400/403 and usage headers, never 429', () => {
    const x = documentedErrors.x.throttled;
    expect(x.status).toBe(429);
    expect(Number(x.headers?.['x-rate-limit-reset'])).toBeGreaterThan(Date.now() / 1000);
    expect(x.headers?.['x-rate-limit-remaining']).toBe('0');
    const m = documentedErrors.mastodon.throttled;
    expect(m.status).toBe(429);
    expect(Date.parse(m.headers?.['x-ratelimit-reset'] ?? '')).toBeGreaterThan(Date.now());
    for (const p of ['facebook', 'instagram', 'threads'] as const) {
      const e = documentedErrors[p];
      for (const t of [e.throttled, ...Object.values(e.variants).filter((v) => v.meaning === 'later')]) {
        expect([400, 403]).toContain(t.status);
        const code = (t.body as { error: { code: number } }).error.code;
        expect([4, 17, 32, 613, 80001, 80002]).toContain(code);
      }
      expect(e.throttled.headers?.['x-app-usage']).toBeDefined();
    }
    for (const p of ['linkedin', 'tiktok', 'youtube', 'pinterest'] as const)
      expect(documentedErrors[p].throttled.status).toBe(429);
  });

  it('each read is fresh: trace ids and reset times are made anew', () => {
    const a = documentedErrors.facebook.throttled.body as { error: { fbtrace_id: string } };
    const b = documentedErrors.facebook.throttled.body as { error: { fbtrace_id: string } };
    expect(a.error.fbtrace_id).not.toBe(b.error.fbtrace_id);
  });
});

describe.each(OAUTH_PLATFORMS)('%s fake answers as documented', (p) => {
  const d = drives[p];

  it('refuses the client with tokenInvalidClient and the grant with tokenInvalidGrant', async () => {
    await expectDocumented(await d.badClient(), documentedErrors[p].tokenInvalidClient);
    await expectDocumented(await d.badGrant(), documentedErrors[p].tokenInvalidGrant);
  });

  it('refuses a revoked token with revokedToken and an expired one with expiredToken', async () => {
    const revoked = d.api(issue(p, 'revoked'));
    expect(revoked.path).toMatch(documentedErrors[p].revokedToken.path);
    await expectDocumented(await revoked.call(), documentedErrors[p].revokedToken);
    fakes.reset();
    await expectDocumented(await d.api(issue(p, 'expired')).call(), documentedErrors[p].expiredToken);
  });

  it('answers an injected throttle on its API paths, in-process and through the control API', async () => {
    const call = d.api('any-token');
    expect(call.path).toMatch(documentedErrors[p].throttled.path);
    fakes.failDocumented(p, 'throttled');
    await expectDocumented(await call.call(), documentedErrors[p].throttled);
    // Not on the token endpoint: the path pattern keeps it to the API.
    expect(documentedErrors[p].throttled.path.test('/oauth/token')).toBe(false);

    const ctl = await post(`/__fakes/${p}/fail`, JSON.stringify({ documented: 'throttled', times: 2 }), {
      'content-type': 'application/json',
    });
    expect(ctl.status).toBe(204);
    await expectDocumented(await call.call(), documentedErrors[p].throttled);
    await expectDocumented(await call.call(), documentedErrors[p].throttled);
    expect((await call.call()).status).not.toBe(documentedErrors[p].throttled.status);
  });
});

describe('documented variants and malformed requests the fakes answer on their own', () => {
  it('LinkedIn: an unknown code is "not found"; a missing parameter is named', async () => {
    const a = app('linkedin');
    const exchange = (o: Record<string, string>) =>
      post(
        '/linkedin/oauth/v2/accessToken',
        form({
          grant_type: 'authorization_code',
          client_id: a.clientId,
          client_secret: a.clientSecret,
          ...o,
        }),
      );
    await expectDocumented(
      await exchange({ code: 'nope', redirect_uri: REDIRECT }),
      documentedErrors.linkedin.variants.codeNotFound as DocumentedError,
    );
    await expectDocumented(
      await exchange({ redirect_uri: REDIRECT }),
      documentedErrors.linkedin.tokenInvalidRequest as DocumentedError,
    );
  });

  it('Google: a refresh token presented by another client is unauthorized_client; no client id is invalid_request', async () => {
    const oauth = oauthOf('youtube');
    oauth.register({ clientId: 'other-client', secret: 'other-secret', redirectUris: null, scopes: null });
    const grant = grantOf('youtube', 'grant-yt');
    const refresh = oauth.issue(grant, 'refresh', null).token;
    const res = await post(
      '/youtube/token',
      form({
        grant_type: 'refresh_token',
        refresh_token: refresh,
        client_id: 'other-client',
        client_secret: 'other-secret',
      }),
    );
    await expectDocumented(res, documentedErrors.youtube.variants.refreshOfAnotherClient as DocumentedError);
    await expectDocumented(
      await post('/youtube/token', form({ grant_type: 'refresh_token', refresh_token: refresh })),
      documentedErrors.youtube.tokenInvalidRequest as DocumentedError,
    );
  });

  it("Mastodon: a missing code is invalid_request, with Doorkeeper's WWW-Authenticate", async () => {
    (fakes.fake('mastodon') as unknown as { oauth: FakeOAuth }).oauth.register({
      clientId: 'registered-app',
      secret: 'registered-secret',
      redirectUris: [REDIRECT],
      scopes: ['read'],
    });
    await expectDocumented(
      await post(
        '/mastodon/oauth/token',
        form({
          grant_type: 'authorization_code',
          redirect_uri: REDIRECT,
          client_id: 'registered-app',
          client_secret: 'registered-secret',
        }),
      ),
      documentedErrors.mastodon.tokenInvalidRequest as DocumentedError,
    );
  });
});

describe('control API', () => {
  it('injects a documented variant, takes a plain failure built by asControlFailure, and 404s unknown kinds', async () => {
    const v = documentedErrors.youtube.variants.quotaExceeded;
    if (!v) throw new Error('no quotaExceeded variant');
    await post('/__fakes/youtube/fail', JSON.stringify({ documented: 'quotaExceeded' }), {
      'content-type': 'application/json',
    });
    await expectDocumented(await get('/youtube/youtube/v3/channels?part=id&mine=true'), v);

    await post(
      '/__fakes/linkedin/fail',
      JSON.stringify(asControlFailure(documentedErrors.linkedin.throttled)),
      {
        'content-type': 'application/json',
      },
    );
    await expectDocumented(await get('/linkedin/v2/userinfo'), documentedErrors.linkedin.throttled);

    const unknown = await post('/__fakes/x/fail', JSON.stringify({ documented: 'nope' }), {
      'content-type': 'application/json',
    });
    expect(unknown.status).toBe(404);
    expect(() => fakes.failDocumented('bluesky', 'throttled')).toThrow(/no documented throttled/);
  });
});

// ---- machine-readable descriptions --------------------------------------------------------------

const schemas = resolve(import.meta.dirname, '../../fakes/schemas');
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);
const xDoc = JSON.parse(readFileSync(resolve(schemas, 'x-openapi-2.159-problems.json'), 'utf8')) as Json;
const pinDoc = JSON.parse(readFileSync(resolve(schemas, 'pinterest-openapi-5.23.0-errors.json'), 'utf8')) as {
  paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, Json> }> }>>;
};
ajv.addSchema({ ...xDoc, $id: 'x-openapi' });
ajv.addSchema({ ...pinDoc, $id: 'pinterest-openapi' });

function expectValid(schemaRef: string, body: unknown) {
  const validate = ajv.compile({ $ref: schemaRef });
  expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
}

/** A response's documented example in the Pinterest excerpt. */
function pinExample(path: string, method: string, status: string): unknown {
  const json = pinDoc.paths[path]?.[method]?.responses[status]?.content['application/json'] as
    | { example?: unknown; examples?: Record<string, { value: unknown }> }
    | undefined;
  return json?.example ?? Object.values(json?.examples ?? {})[0]?.value;
}

describe('X API v2 OpenAPI (xdk latest-openapi.json 2.159): Problem / GenericProblem', () => {
  it('maps about:blank to GenericProblem, and the 401 and 429 answers are generic problems', async () => {
    const problem = (xDoc as { components: { schemas: { Problem: Json } } }).components.schemas.Problem;
    expect((problem.discriminator as { mapping: Record<string, string> }).mapping['about:blank']).toBe(
      '#/components/schemas/GenericProblem',
    );
    const dead = await get('/x/2/users/me', bearer(issue('x', 'revoked')));
    expect(dead.headers.get('content-type')).toBe('application/problem+json');
    const body = await dead.json();
    expectValid('x-openapi#/components/schemas/Problem', body);
    expectValid('x-openapi#/components/schemas/GenericProblem', body);
    expectValid('x-openapi#/components/schemas/GenericProblem', documentedErrors.x.throttled.body);
    expect(body).toEqual({ title: 'Unauthorized', detail: 'Unauthorized', type: 'about:blank', status: 401 });
  });

  it('an invalid request is an InvalidRequestProblem', async () => {
    const res = await post('/x/2/tweets', JSON.stringify({}), {
      authorization: 'Bearer token',
      'content-type': 'application/json',
    });
    expect(res.status).toBe(400);
    expectValid('x-openapi#/components/schemas/InvalidRequestProblem', await res.json());
  });
});

describe('Pinterest API v5 OpenAPI (pinterest/api-description 5.23.0): Error and the documented examples', () => {
  it('the documented examples are Errors', () => {
    for (const [path, method, status] of [
      ['/oauth/token/revoke', 'post', '401'],
      ['/pins/analytics', 'get', '429'],
      ['/catalogs/items/batch', 'post', '401'],
    ] as const)
      expectValid('pinterest-openapi#/components/schemas/Error', pinExample(path, method, status));
  });

  it('the token endpoint answers Error bodies; a refused client is the documented 401 example', async () => {
    const client = await drives.pinterest.badClient();
    expect(client.status).toBe(401);
    const clientBody = await client.json();
    expectValid('pinterest-openapi#/components/schemas/Error', clientBody);
    expect(clientBody).toEqual(pinExample('/oauth/token/revoke', 'post', '401'));
    const grant = await drives.pinterest.badGrant();
    expectValid('pinterest-openapi#/components/schemas/Error', await grant.json());
  });

  it('the API answers a dead token with the documented 401 and throttles with the documented 429', async () => {
    const dead = await get('/pinterest/v5/user_account', bearer(issue('pinterest', 'revoked')));
    expect(dead.status).toBe(401);
    const deadBody = await dead.json();
    expectValid('pinterest-openapi#/components/schemas/Pinterest.Lib.Error', deadBody);
    expect(deadBody).toEqual(pinExample('/catalogs/items/batch', 'post', '401'));

    fakes.failDocumented('pinterest', 'throttled');
    const throttled = await post('/pinterest/v5/pins', JSON.stringify({}), {
      authorization: 'Bearer pina_legacy',
      'content-type': 'application/json',
    });
    expect(throttled.status).toBe(429);
    const body = await throttled.json();
    expectValid('pinterest-openapi#/components/schemas/Pinterest.Lib.Error', body);
    expect(body).toEqual(pinExample('/pins/analytics', 'get', '429'));
  });
});

describe('RFC 6749 §5.2 token error responses', () => {
  // §5.2 and Appendix A.7/A.8: error and error_description use %x20-21 / %x23-5B / %x5D-7E.
  const NQSCHAR = /^[\x20-\x21\x23-\x5B\x5D-\x7E]+$/;
  const REGISTERED = [
    'invalid_request',
    'invalid_client',
    'invalid_grant',
    'unauthorized_client',
    'unsupported_grant_type',
    'invalid_scope',
  ];

  it.each(['x', 'linkedin', 'tiktok', 'youtube', 'mastodon'] as const)(
    '%s: registered codes in the allowed characters; 400, and 401 for a refused client',
    async (p) => {
      for (const res of [await drives[p].badClient(), await drives[p].badGrant()]) {
        const b = (await res.json()) as { error: string; error_description?: string };
        expect(REGISTERED).toContain(b.error);
        expect(b.error).toMatch(NQSCHAR);
        if (b.error_description !== undefined) expect(b.error_description).toMatch(NQSCHAR);
        expect(res.status).toBe(
          b.error === 'invalid_client' || b.error === 'unauthorized_client' ? 401 : 400,
        );
      }
    },
  );

  it('Mastodon (Doorkeeper) answers invalid_client after HTTP Basic with 401 and WWW-Authenticate', async () => {
    const res = await drives.mastodon.badClient();
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="Doorkeeper", error="invalid_client"/);
  });

  it('the deviations are the documented ones: X says unauthorized_client, LinkedIn and X never invalid_grant', async () => {
    expect(((await (await drives.x.badClient()).json()) as Json).error).toBe('unauthorized_client');
    expect(((await (await drives.x.badGrant()).json()) as Json).error).toBe('invalid_request');
    expect(((await (await drives.linkedin.badGrant()).json()) as Json).error).toBe('invalid_request');
    // Pinterest and Meta do not answer RFC 6749 bodies at all.
    expect(await (await drives.pinterest.badGrant()).json()).not.toHaveProperty('error');
    expect(((await (await drives.facebook.badClient()).json()) as Json).error).toMatchObject({
      type: 'OAuthException',
      code: 1,
    });
  });
});
