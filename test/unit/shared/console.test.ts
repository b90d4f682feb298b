import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { html } from '#core/html';
import { ActError, type SignedIn } from '#core/people';
import {
  type ConsoleAnswer,
  type ConsoleRequest,
  type ConsoleRoute,
  ceremonyCookie,
  consoleHandlers,
  consoleNotFound,
  consoleSite,
  imageSources,
  jsonAnswer,
  MAX_FORM_BYTES,
  pageAnswer,
  parseCookies,
  redirectAnswer,
  securityHeaders,
  sessionCookie,
} from '#shared/console';
import type { HttpEvent } from '#shared/envelope';
import { logger } from '#shared/logger';
import {
  CONSOLE_ORIGIN,
  call,
  consoleEvent,
  formPost,
  jsonPost,
  person,
  SESSION_COOKIE,
  sessionOf,
} from '../support/console.ts';

// The console pipeline (functions/shared/console.ts) over a fake gate and the routes of one page
// of the manifest (consoleKeys), each route's behaviour chosen per test.

const OWNER = person('owner');
const resolve = vi.fn<(cookie: string | undefined, now: Date) => Promise<SignedIn | null>>();
const statusPage = vi.fn(
  ({ status, message, requestId }: { status: number; message: string; requestId: string }) =>
    html`<main><h1>${status}</h1><p>${message}</p><p>${requestId}</p></main>`,
);
const consolePage = consoleHandlers({ gate: { resolve }, statusPage });

let answer: (req: ConsoleRequest) => Promise<ConsoleAnswer>;
const ran = vi.fn<(req: ConsoleRequest) => void>();
/** The request the route saw. */
function seen(): ConsoleRequest {
  const call = ran.mock.calls[0];
  if (!call) throw new Error('the route did not run');
  return call[0];
}

const route = (who: 'person' | 'anyone', body?: 'form' | 'json'): ConsoleRoute => ({
  who,
  ...(body ? { body } : {}),
  run: async (req: ConsoleRequest) => {
    ran(req);
    return answer(req);
  },
});

// consoleKeys' three routes: a page (person), a form (person), and — for these tests — an anyone JSON route.
const { handler } = consolePage('consoleKeys', {
  'GET /console/keys': route('person'),
  'POST /console/keys': route('person'),
  'POST /console/keys/{id}/revoke': route('anyone', 'json'),
});

beforeEach(() => {
  resolve.mockReset();
  resolve.mockImplementation(async (cookie) =>
    cookie === sessionOf(OWNER)[0]?.split('=')[1] ? OWNER : null,
  );
  ran.mockReset();
  statusPage.mockClear();
  answer = async () => pageAnswer(html`<main>ok</main>`);
});

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

const signedInGet = (query = '') => consoleEvent('GET /console/keys', { cookies: sessionOf(OWNER), query });
const signedInPost = (fields: Record<string, string | string[]> = {}, headers: Record<string, string> = {}) =>
  formPost('POST /console/keys', fields, { cookies: sessionOf(OWNER), headers });

describe('the Origin check on every state-changing request', () => {
  it.each([
    ['missing', undefined],
    ['another site', 'https://evil.example'],
    ['null (sandboxed frame)', 'null'],
    ['the same host over http', 'http://console.unit'],
    ['another port', 'https://console.unit:8443'],
  ])('refuses a POST whose Origin is %s with the 403 page, and runs nothing', async (_what, origin) => {
    const event = signedInPost({ name: 'x' });
    if (origin === undefined) delete event.headers.origin;
    else event.headers.origin = origin;

    const res = await call(handler, event);

    expect(res.statusCode).toBe(403);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).toContain('refused');
    expect(ran).not.toHaveBeenCalled();
    expect(resolve).not.toHaveBeenCalled();
  });

  it('refuses a cross-site JSON fetch with a 403 JSON error', async () => {
    const res = await call(
      handler,
      jsonPost(
        'POST /console/keys/{id}/revoke',
        {},
        { params: { id: 'k' }, headers: { origin: 'https://evil.example' } },
      ),
    );

    expect(res.statusCode).toBe(403);
    expect(JSON.parse(res.body ?? '')).toMatchObject({ error: { kind: 'forbidden' } });
    expect(ran).not.toHaveBeenCalled();
  });

  it('lets a POST from the console origin through', async () => {
    const res = await call(handler, signedInPost({ name: 'x' }));

    expect(res.statusCode).toBe(200);
    expect(ran).toHaveBeenCalledOnce();
  });

  it('needs no Origin on a GET (navigations do not always send one)', async () => {
    const res = await call(handler, signedInGet());

    expect(res.statusCode).toBe(200);
  });
});

describe('the security headers', () => {
  const outcomes: Array<[string, () => Promise<ConsoleAnswer>, number]> = [
    ['a page', async () => pageAnswer(html`<main>ok</main>`), 200],
    ['a redirect', async () => redirectAnswer('/console/keys?msg=key_revoked'), 303],
    ['a JSON answer', async () => jsonAnswer({ ok: true }), 200],
    [
      'an ActError',
      async () => {
        throw new ActError('No such key.', 'not_found');
      },
      404,
    ],
    [
      'a crash',
      async () => {
        throw new Error('boom');
      },
      500,
    ],
  ];

  it.each(outcomes)('are on %s', async (_what, outcome, status) => {
    answer = outcome;
    vi.spyOn(logger, 'error').mockImplementation(() => undefined);

    const res = await call(handler, signedInGet());

    expect(res.statusCode).toBe(status);
    expect(res.headers).toMatchObject({
      ...securityHeaders(),
      'cache-control': 'no-store',
      'x-request-id': 'req-console-1',
    });
    expect(res.headers['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: https://media.example; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    // Images from the media CDN's origin only (the unit env's HERALD_MEDIA_BASE_URL), not its path.
    expect(imageSources('https://d1.cloudfront.net/base/')).toBe("'self' data: https://d1.cloudfront.net");
    expect(imageSources(undefined)).toBe("'self' data:");
    // same-origin, not no-referrer: under no-referrer a page's own form posts carry `Origin: null`.
    expect(res.headers['referrer-policy']).toBe('same-origin');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('are on refusals before any route runs (Origin, sign-in redirect)', async () => {
    const refused = await call(
      handler,
      formPost('POST /console/keys', {}, { headers: { origin: 'https://evil.example' } }),
    );
    const redirected = await call(handler, consoleEvent('GET /console/keys'));

    for (const res of [refused, redirected]) expect(res.headers).toMatchObject(securityHeaders());
  });

  it('tell browsers to come back over https only (HSTS) when the console is served over https, not on http', async () => {
    answer = async () => pageAnswer(html`<main>ok</main>`);
    vi.spyOn(logger, 'warn').mockImplementation(() => undefined);
    const refused = formPost('POST /console/keys', {}, { headers: { origin: 'https://evil.example' } });
    for (const res of [await call(handler, signedInGet()), await call(handler, refused)])
      expect(res.headers['strict-transport-security']).toBe('max-age=31536000');

    vi.stubEnv('HERALD_CONSOLE_URL', 'http://localhost:3000');
    try {
      const local = await call(
        handler,
        consoleEvent('GET /console/keys', { headers: { host: 'localhost:3000' } }),
      );
      expect(local.headers).not.toHaveProperty('strict-transport-security');
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('leave a file its own cache policy', async () => {
    answer = async () => ({
      kind: 'file',
      body: 'x',
      contentType: 'text/css',
      cacheControl: 'public, max-age=60',
    });

    const res = await call(handler, signedInGet());

    expect(res.headers['cache-control']).toBe('public, max-age=60');
    expect(res.headers['content-security-policy']).toBe(securityHeaders()['content-security-policy']);
  });
});

describe('sessions', () => {
  it('sends a GET without a session cookie to sign-in, without asking the gate', async () => {
    const res = await call(handler, consoleEvent('GET /console/keys'));

    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/console/sign-in?next=%2Fconsole%2Fkeys');
    expect(resolve).not.toHaveBeenCalled();
    expect(ran).not.toHaveBeenCalled();
  });

  it('sends a stale cookie to sign-in saying the session ended, and clears it', async () => {
    const res = await call(
      handler,
      consoleEvent('GET /console/keys', { cookies: [`${SESSION_COOKIE}=org~usr~stale`] }),
    );

    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/console/sign-in?msg=session_ended&next=%2Fconsole%2Fkeys');
    expect(res.cookies).toEqual([`${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict; Secure`]);
    expect(resolve).toHaveBeenCalledWith('org~usr~stale', expect.any(Date));
    expect(ran).not.toHaveBeenCalled();
  });

  it('sends a form post without a session to sign-in too, running nothing', async () => {
    const res = await call(handler, formPost('POST /console/keys', { name: 'x' }));

    expect(res.statusCode).toBe(303);
    expect(ran).not.toHaveBeenCalled();
  });

  it('hands the route the person the gate resolved', async () => {
    await call(handler, signedInGet());

    expect(ran).toHaveBeenCalledWith(expect.objectContaining({ signedIn: OWNER }));
  });

  it('reads the session from the __Host- cookie on https and the plain one on http (local)', async () => {
    vi.stubEnv('HERALD_CONSOLE_URL', 'http://localhost:3000');
    const plain = consoleEvent('GET /console/keys', {
      headers: { host: 'localhost:3000' },
      cookies: [`${SESSION_COOKIE}=a~b~c`, 'herald_session=x~y~z'],
    });

    await call(handler, plain);

    expect(resolve).toHaveBeenCalledWith('x~y~z', expect.any(Date));
  });
});

describe('errors', () => {
  it.each([
    ['not_found', 404],
    ['forbidden', 403],
    ['conflict', 409],
    ['invalid', 400],
    ['rate_limited', 429],
  ] as const)('renders an ActError %s as the %d status page with its message', async (kind, status) => {
    answer = async () => {
      throw new ActError(`Refused: ${kind}.`, kind);
    };

    const res = await call(handler, signedInGet());

    expect(res.statusCode).toBe(status);
    expect(res.body).toContain(`Refused: ${kind}.`);
    expect(statusPage).toHaveBeenCalledWith(expect.objectContaining({ status, signedIn: OWNER }));
  });

  it('answers a ceremony fetch with JSON errors', async () => {
    answer = async () => {
      throw new ActError('Too many attempts.', 'rate_limited');
    };

    const res = await call(handler, jsonPost('POST /console/keys/{id}/revoke', {}, { params: { id: 'k' } }));

    expect(res.statusCode).toBe(429);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(res.body ?? '')).toEqual({
      error: { kind: 'rate_limited', message: 'Too many attempts.' },
    });
  });

  it('renders a crash as a 500 page with the request id and nothing internal, and logs the cause', async () => {
    const cause = new Error('ConditionalCheckFailed on ORG#secret-internal-detail');
    answer = async () => {
      throw cause;
    };
    const logged = vi.spyOn(logger, 'error').mockImplementation(() => undefined);

    const res = await call(
      handler,
      consoleEvent('GET /console/keys', { cookies: sessionOf(OWNER), requestId: 'req-500' }),
    );

    expect(res.statusCode).toBe(500);
    expect(res.body).toContain('req-500');
    expect(res.body).not.toContain('secret-internal-detail');
    expect(res.body).not.toContain('ConditionalCheckFailed');
    expect(logged).toHaveBeenCalledWith('console request failed', { error: cause, request_id: 'req-500' });
  });

  it('renders an unknown route key as a 404 page', async () => {
    const res = await call(handler, consoleEvent('GET /console/nothing', { cookies: sessionOf(OWNER) }));

    expect(res.statusCode).toBe(404);
  });
});

describe('bodies', () => {
  it('reads repeated form fields (check boxes) in order', async () => {
    await call(handler, signedInPost({ name: 'Blog', scopes: ['posts:read', 'posts:write'] }));

    const form = seen().form;
    expect(form.get('name')).toBe('Blog');
    expect(form.getAll('scopes')).toEqual(['posts:read', 'posts:write']);
  });

  it('decodes a base64-encoded form (API Gateway sends some bodies so)', async () => {
    const event = signedInPost();
    event.body = Buffer.from('name=Caf%C3%A9&scopes=posts%3Aread').toString('base64');
    event.isBase64Encoded = true;

    await call(handler, event);

    const form = seen().form;
    expect(form.get('name')).toBe('Café');
  });

  it('refuses a form that is not url-encoded (400) and one larger than a form can be (413)', async () => {
    const multipart = await call(
      handler,
      signedInPost({ name: 'x' }, { 'content-type': 'multipart/form-data; boundary=x' }),
    );
    const huge = await call(handler, signedInPost({ name: 'x'.repeat(MAX_FORM_BYTES) }));

    expect(multipart.statusCode).toBe(400);
    expect(huge.statusCode).toBe(413);
    expect(ran).not.toHaveBeenCalled();
  });

  it('takes an empty POST without a content type as an empty form (a button-only form)', async () => {
    const event = consoleEvent('POST /console/keys', {
      cookies: sessionOf(OWNER),
      headers: { origin: CONSOLE_ORIGIN },
    });

    const res = await call(handler, event);

    expect(res.statusCode).toBe(200);
  });

  it('parses a ceremony fetch as JSON and refuses what is not a JSON object', async () => {
    await call(handler, jsonPost('POST /console/keys/{id}/revoke', { token: 't' }, { params: { id: 'k' } }));
    const bad = await call(
      handler,
      consoleEvent('POST /console/keys/{id}/revoke', {
        params: { id: 'k' },
        body: '[1]',
        headers: { origin: CONSOLE_ORIGIN, 'content-type': 'application/json' },
      }),
    );

    expect(seen().json).toEqual({ token: 't' });
    expect(bad.statusCode).toBe(400);
    expect(JSON.parse(bad.body ?? '')).toMatchObject({ error: { kind: 'invalid' } });
  });
});

describe('cookies and the console site', () => {
  it('sends the answer cookies as payload v2 `cookies`', async () => {
    const site = consoleSite(consoleEvent('GET /console/keys'));
    answer = async () =>
      redirectAnswer('/console', { cookies: [sessionCookie(site, 'o~u~t'), ceremonyCookie(site, 'c1')] });

    const res = await call(handler, signedInGet());

    expect(res.cookies).toEqual([
      '__Host-herald_session=o~u~t; Path=/; HttpOnly; SameSite=Strict; Secure',
      'herald_ceremony=c1; Path=/console; Max-Age=300; HttpOnly; SameSite=Strict; Secure',
    ]);
    expect(res.headers).not.toHaveProperty('set-cookie');
  });

  it('is https on the request host by default, HERALD_CONSOLE_URL when set', () => {
    const event = consoleEvent('GET /console/keys');

    expect(consoleSite(event)).toEqual({
      origin: 'https://console.unit',
      rp: { id: 'console.unit', name: 'Herald', origin: 'https://console.unit' },
      secure: true,
      sessionCookie: '__Host-herald_session',
    });
    vi.stubEnv('HERALD_CONSOLE_URL', 'http://localhost:3000/');
    expect(consoleSite(event)).toEqual({
      origin: 'http://localhost:3000',
      rp: { id: 'localhost', name: 'Herald', origin: 'http://localhost:3000' },
      secure: false,
      sessionCookie: 'herald_session',
    });
    expect(sessionCookie(consoleSite(event), 'v')).toBe(
      'herald_session=v; Path=/; HttpOnly; SameSite=Strict',
    );
  });

  it('sends a page opened on an IP address (127.0.0.1) to the console address, where passkeys work', async () => {
    vi.stubEnv('HERALD_CONSOLE_URL', 'http://localhost:3000');

    const res = await call(
      handler,
      consoleEvent('GET /console/keys', { headers: { host: '127.0.0.1:3000' }, query: 'msg=x' }),
    );

    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('http://localhost:3000/console/keys?msg=x');
  });

  it('leaves a page opened on another host name alone (behind a CDN the hosts differ by design)', async () => {
    vi.stubEnv('HERALD_CONSOLE_URL', 'https://console.example.com');

    const res = await call(handler, signedInGet());

    expect(res.statusCode).toBe(200);
  });

  it('parses cookies as name=value, the first of a name winning', () => {
    expect(parseCookies(['a=1', 'b=x=y', 'a=2', 'junk', '=v'])).toEqual({ a: '1', b: 'x=y' });
  });
});

describe('the route table', () => {
  it('must be exactly the page manifest entry routes', () => {
    expect(() => consolePage('consoleKeys', { 'GET /console/keys': route('person') })).toThrow(
      /consoleKeys serves GET \/console\/keys; its manifest entry names/,
    );
    expect(() => consolePage('nope', {})).toThrow(/unknown console page/);
  });
});

describe('the workspace on status pages, and the 404 of an address no page serves', () => {
  const peek = vi.fn<(cookie: string, now: Date) => Promise<SignedIn | null>>();
  const orgName = vi.fn<(s: SignedIn) => Promise<string | null>>();
  const gate = { resolve, peek, orgName };
  const named = consoleHandlers({ gate, statusPage })('consoleKeys', {
    'GET /console/keys': route('person'),
    'POST /console/keys': route('person'),
    'POST /console/keys/{id}/revoke': route('anyone', 'json'),
  }).handler;
  const cookie = () => sessionOf(OWNER)[0]?.split('=')[1] ?? '';
  const unknownPage = (cookies?: string[]) =>
    consoleEvent('$default', { ...(cookies ? { cookies } : {}) }) as unknown as HttpEvent;

  beforeEach(() => {
    peek.mockReset();
    peek.mockImplementation(async (c) => (c === cookie() ? OWNER : null));
    orgName.mockReset();
    orgName.mockResolvedValue('Acme');
  });

  it('names the workspace on a signed-in status page (409)', async () => {
    answer = async () => {
      throw new ActError('Already revoked.', 'conflict');
    };
    const res = await call(named, signedInGet());
    expect(res.statusCode).toBe(409);
    expect(statusPage).toHaveBeenCalledWith(expect.objectContaining({ signedIn: OWNER, orgName: 'Acme' }));
  });

  it('still answers the status page when the name cannot be read', async () => {
    answer = async () => {
      throw new ActError('Already revoked.', 'conflict');
    };
    orgName.mockRejectedValue(new Error('throttled'));
    const res = await call(named, signedInGet());
    expect(res.statusCode).toBe(409);
    expect(statusPage).toHaveBeenCalledWith(expect.objectContaining({ signedIn: OWNER, orgName: undefined }));
  });

  it('asks nobody about a 404 without a session cookie', async () => {
    const res = await consoleNotFound(unknownPage(), statusPage, gate);
    expect(res.statusCode).toBe(404);
    expect(peek).not.toHaveBeenCalled();
    expect(resolve).not.toHaveBeenCalled();
    expect(statusPage).toHaveBeenCalledWith(expect.objectContaining({ status: 404, signedIn: null }));
  });

  it('shows a signed-in person’s 404 in their frame, reading the session only (peek, never resolve)', async () => {
    const res = await consoleNotFound(unknownPage(sessionOf(OWNER)), statusPage, gate);
    expect(res.statusCode).toBe(404);
    expect(resolve).not.toHaveBeenCalled();
    expect(peek).toHaveBeenCalledOnce();
    expect(statusPage).toHaveBeenCalledWith(
      expect.objectContaining({ status: 404, signedIn: OWNER, orgName: 'Acme' }),
    );
    expect(res.headers).toMatchObject(securityHeaders());
  });

  it('answers the signed-out 404 when the session cannot be read', async () => {
    peek.mockRejectedValue(new Error('throttled'));
    const res = await consoleNotFound(unknownPage(sessionOf(OWNER)), statusPage, gate);
    expect(res.statusCode).toBe(404);
    expect(statusPage).toHaveBeenCalledWith(expect.objectContaining({ signedIn: null }));
  });
});
