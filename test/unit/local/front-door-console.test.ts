import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { consolePages } from '#lib/operations';
import * as sessions from '#usecases/console-sessions';
import * as passkeys from '#usecases/passkeys';
import { buildEvent, cookiesOf, createFrontDoor } from '../../../bin/local/front-door.ts';

// The local front door serves the console's pages as API Gateway does (payload v2): the request's
// Cookie header arrives as `event.cookies` (and not as a header), each of the answer's `cookies`
// leaves as its own Set-Cookie header, and the console's routes keep their throttles.

vi.mock('#usecases/console-sessions', () => ({ resolveSession: vi.fn(), signOut: vi.fn() }));
vi.mock('#usecases/passkeys', async (original) => ({
  ...(await original<typeof import('#usecases/passkeys')>()),
  beginSignIn: vi.fn(),
  finishSignIn: vi.fn(),
}));

const root = resolve(import.meta.dirname, '../../..');
const server = createFrontDoor(root);
let base = '';
let origin = '';

beforeAll(async () => {
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  base = `http://127.0.0.1:${port}`;
  origin = `http://localhost:${port}`;
  vi.stubEnv('HERALD_CONSOLE_URL', origin);
});

afterAll(async () => {
  vi.unstubAllEnvs();
  await new Promise<void>((ok) => server.close(() => ok()));
});

beforeEach(() => {
  vi.mocked(sessions.signOut).mockReset();
  vi.mocked(passkeys.finishSignIn).mockReset();
});

describe('payload v2 cookies', () => {
  it('hands the Cookie header over as `cookies` and drops the header, as API Gateway does', () => {
    const req = Object.assign(Readable.from([]), {
      url: '/console',
      method: 'GET',
      httpVersion: '1.1',
      headers: { host: 'localhost:3000', cookie: 'herald_session=a~b~c; theme=dark;  ' },
      socket: { remoteAddress: '127.0.0.1' },
    }) as unknown as IncomingMessage;

    const event = buildEvent(req, null, {}, Buffer.alloc(0), 'req-1');

    expect(event.cookies).toEqual(['herald_session=a~b~c', 'theme=dark']);
    expect(event.headers).not.toHaveProperty('cookie');
    expect(cookiesOf(undefined)).toEqual([]);
  });

  it('passes the browser cookie to the handler and sends back its cookies as Set-Cookie headers', async () => {
    const res = await fetch(`${origin}/console/sign-out`, {
      method: 'POST',
      headers: {
        origin,
        cookie: 'herald_session=org~usr~tok; other=1',
        'content-type': 'application/x-www-form-urlencoded',
      },
      redirect: 'manual',
    });

    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console/sign-in?msg=signed_out');
    expect(res.headers.getSetCookie()).toEqual([
      'herald_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict',
    ]);
    expect(sessions.signOut).toHaveBeenCalledWith('org~usr~tok', expect.any(Date));
  });

  it('sends each of several cookies as its own Set-Cookie header', async () => {
    vi.mocked(passkeys.finishSignIn).mockResolvedValue({
      cookie: 'org~usr~new',
      session: {} as Awaited<ReturnType<typeof passkeys.finishSignIn>>['session'],
    });

    const res = await fetch(`${origin}/console/sign-in`, {
      method: 'POST',
      headers: { origin, cookie: 'herald_ceremony=cer_1', 'content-type': 'application/json' },
      body: JSON.stringify({ response: {} }),
    });

    expect(res.status).toBe(200);
    expect(res.headers.getSetCookie()).toEqual([
      'herald_session=org~usr~new; Path=/; HttpOnly; SameSite=Strict',
      'herald_ceremony=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict',
    ]);
    expect(passkeys.finishSignIn).toHaveBeenCalledWith(expect.objectContaining({ ceremonyId: 'cer_1' }));
  });
});

describe('console routes', () => {
  it('serves every page route of the manifest (none falls to the $default 404)', async () => {
    for (const page of consolePages)
      for (const route of page.routes) {
        if (route.throttle) continue; // the throttle test below spends those
        const path = route.path.replace('{file}', 'console.css').replace('{id}', 'x');
        const res = await fetch(`${origin}${path}`, { method: route.method, redirect: 'manual' });
        expect(res.headers.get('content-type') ?? '', `${route.method} ${path}`).not.toContain(
          'problem+json',
        );
        expect(res.headers.get('content-security-policy'), `${route.method} ${path}`).toContain(
          "default-src 'none'",
        );
      }
  });

  it('is reached on localhost though it listens on 127.0.0.1, and sends 127.0.0.1 pages there', async () => {
    const onLocalhost = await fetch(`${origin}/console/sign-in`);
    const onIp = await fetch(`${base}/console/sign-in?msg=signed_out`, { redirect: 'manual' });

    expect(onLocalhost.status).toBe(200);
    expect(onIp.status).toBe(303);
    expect(onIp.headers.get('location')).toBe(`${origin}/console/sign-in?msg=signed_out`);
  });

  it('answers a console path with a method it does not serve with 405 and Allow', async () => {
    const res = await fetch(`${origin}/console/keys`, { method: 'DELETE' });

    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, POST');
  });

  it("throttles sign-in attempts at the route's ceiling, before the handler runs", async () => {
    const begin = vi
      .mocked(passkeys.beginSignIn)
      .mockResolvedValue({ ceremonyId: 'c', options: {} as never });
    const throttle = consolePages
      .flatMap((p) => p.routes)
      .find((r) => r.method === 'POST' && r.path === '/console/sign-in/options')?.throttle;
    const burst = (throttle?.burstLimit ?? 0) + 5;
    // The bucket refills by the clock: hold it still, so the ceiling is met however slow the host.
    const still = Date.now();
    const clock = vi.spyOn(Date, 'now').mockReturnValue(still);

    const statuses = await Promise.all(
      Array.from({ length: burst }, () =>
        fetch(`${origin}/console/sign-in/options`, {
          method: 'POST',
          headers: { origin, 'content-type': 'application/json' },
          body: '{}',
        }).then((r) => r.status),
      ),
    ).finally(() => clock.mockRestore());

    expect(statuses.filter((s) => s === 429).length).toBe(5);
    expect(begin.mock.calls.length).toBeLessThanOrEqual(throttle?.burstLimit ?? 0);
  });
});
