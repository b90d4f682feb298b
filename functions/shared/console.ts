import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy, { type MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import { documentOf, type SafeHtml } from '#core/html';
import { ActError, CEREMONY_TTL_MS, type SignedIn } from '#core/people';
import { CONSOLE_PATH } from '#core/vocabulary';
import { type ConsolePage, consolePages } from '#lib/operations';
import { type HttpEvent, type HttpResult, requestIdOf } from './envelope.ts';
import { logger } from './logger.ts';

// The pipeline every console page shares, the counterpart of http.ts for HTML: the route's entry
// of the page (one function serves a page and the acts of its forms), the Origin check on every
// state-changing request, the session, the body, and one answer shape for every outcome — with the
// security headers on all of them, errors included. Who the session cookie names is a use case
// (usecases/support/console-gate.ts), handed in as a ConsoleGate so this module reaches no data;
// how an error looks is the views' (handed in as a StatusPageRenderer).

/** The use cases the pipeline asks about a request's session cookie. */
export interface ConsoleGate {
  /** The person behind the cookie's value, or null (none, unknown, expired, signed out, demoted). */
  resolve(cookie: string | undefined, now: Date): Promise<SignedIn | null>;
  /** As resolve, but reads only: for the 404 of an address no page serves, which writes nothing. */
  peek?(cookie: string, now: Date): Promise<SignedIn | null>;
  /** The workspace's name, for the header of a status page. */
  orgName?(signedIn: SignedIn): Promise<string | null>;
}

/** What a status page says; the views render it inside the console's layout. */
export interface StatusPage {
  status: number;
  message: string;
  requestId: string;
  signedIn: SignedIn | null;
  /** The signed-in person's workspace, named in the header. */
  orgName?: string | undefined;
}
export type StatusPageRenderer = (page: StatusPage) => SafeHtml;

/** Where the console is served: every POST's expected Origin, the passkeys' relying party, the cookies. */
export interface ConsoleSite {
  /** Exact origin, e.g. `https://api.example.com` or `http://localhost:3000`. */
  origin: string;
  /** The WebAuthn relying party: its id is the origin's host name (browsers refuse IP addresses). */
  rp: { id: string; name: string; origin: string };
  /** Whether the origin is https: `Secure` cookies, and the `__Host-` prefix for the session's. */
  secure: boolean;
  sessionCookie: string;
}

export const CEREMONY_COOKIE = 'herald_ceremony';
const RP_NAME = 'Herald';

/**
 * The console's site: HERALD_CONSOLE_URL when set (the local stack's `http://localhost:<port>`; on
 * AWS the stage's publicUrl), else the host the request came in on, over https. Read per request:
 * the local stack knows its port only once it listens.
 */
export function consoleSite(event: Pick<HttpEvent, 'requestContext'>): ConsoleSite {
  const configured = process.env.HERALD_CONSOLE_URL;
  const url = new URL(configured ? configured : `https://${event.requestContext.domainName}`);
  const secure = url.protocol === 'https:';
  return {
    origin: url.origin,
    rp: { id: url.hostname, name: RP_NAME, origin: url.origin },
    secure,
    sessionCookie: secure ? '__Host-herald_session' : 'herald_session',
  };
}

/**
 * The session cookie: HttpOnly, SameSite=Strict, no Max-Age (a browser-session cookie: the server's
 * expiry is the one that counts), `__Host-` and Secure on https.
 */
export function sessionCookie(site: ConsoleSite, value: string): string {
  return `${site.sessionCookie}=${value}; Path=/; HttpOnly; SameSite=Strict${site.secure ? '; Secure' : ''}`;
}

export function clearedSessionCookie(site: ConsoleSite): string {
  return `${site.sessionCookie}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict${site.secure ? '; Secure' : ''}`;
}

/** A WebAuthn ceremony's id, from its options to its answer: console paths only, as long as it lasts. */
export function ceremonyCookie(site: ConsoleSite, ceremonyId: string): string {
  return `${CEREMONY_COOKIE}=${ceremonyId}; Path=${CONSOLE_PATH}; Max-Age=${CEREMONY_TTL_MS / 1000}; HttpOnly; SameSite=Strict${site.secure ? '; Secure' : ''}`;
}

export function clearedCeremonyCookie(site: ConsoleSite): string {
  return `${CEREMONY_COOKIE}=; Path=${CONSOLE_PATH}; Max-Age=0; HttpOnly; SameSite=Strict${site.secure ? '; Secure' : ''}`;
}

/** A request as a route sees it. */
export interface ConsoleRequest {
  params: Record<string, string>;
  query: URLSearchParams;
  /** A form's fields (repeated names for check boxes: `getAll`); empty unless the route takes a form. */
  form: URLSearchParams;
  /** The parsed JSON body of a ceremony's fetch; undefined unless the route takes JSON. */
  json: unknown;
  cookies: Record<string, string>;
  site: ConsoleSite;
  sourceIp: string;
  requestId: string;
  now: Date;
  /** The function's time left (a generation's reservation outlives it by a margin). */
  lambda: Pick<Context, 'getRemainingTimeInMillis'>;
}

export interface PersonRequest extends ConsoleRequest {
  signedIn: SignedIn;
}

interface Sets {
  /** Set-Cookie values (API Gateway payload v2 `cookies`). */
  cookies?: string[];
}

/** What a route answers. */
export type ConsoleAnswer = Sets &
  (
    | { kind: 'page'; page: SafeHtml; status: number }
    | { kind: 'redirect'; location: string }
    | { kind: 'json'; body: unknown; status: number }
    | { kind: 'file'; body: string; contentType: string; cacheControl: string }
  );

export const pageAnswer = (page: SafeHtml, opts: { status?: number } & Sets = {}): ConsoleAnswer => ({
  kind: 'page',
  page,
  status: opts.status ?? 200,
  ...(opts.cookies ? { cookies: opts.cookies } : {}),
});

/** 303 See Other: after a form's POST the browser GETs the location (Post/Redirect/Get). */
export const redirectAnswer = (location: string, opts: Sets = {}): ConsoleAnswer => ({
  kind: 'redirect',
  location,
  ...(opts.cookies ? { cookies: opts.cookies } : {}),
});

export const jsonAnswer = (body: unknown, opts: { status?: number } & Sets = {}): ConsoleAnswer => ({
  kind: 'json',
  body,
  status: opts.status ?? 200,
  ...(opts.cookies ? { cookies: opts.cookies } : {}),
});

/**
 * A route of a page. `person`: signed in (else a redirect to sign-in, or 401 for JSON); `anyone`:
 * the sign-in and enrollment pages, their ceremonies, the assets. `body`: what a POST sends — a
 * form (the default) or JSON (a ceremony's fetch, whose errors are answered as JSON too).
 */
export type ConsoleRoute =
  | { who: 'person'; body?: 'form' | 'json'; run: (req: PersonRequest) => Promise<ConsoleAnswer> }
  | { who: 'anyone'; body?: 'form' | 'json'; run: (req: ConsoleRequest) => Promise<ConsoleAnswer> };

/** Forms are small; the landing origins' text area is the largest field. */
export const MAX_FORM_BYTES = 64 * 1024;

/**
 * Where pages may load images from: their own origin, and the media CDN's origin for the functions
 * that know it (the media pages preview an asset). Images only: nothing else is taken from it.
 */
export function imageSources(mediaBaseUrl: string | undefined): string {
  if (!mediaBaseUrl) return "'self' data:";
  try {
    return `'self' data: ${new URL(mediaBaseUrl).origin}`;
  } catch {
    return "'self' data:";
  }
}

/**
 * The headers of every console response, errors included. Built per response: the local stack
 * learns its media origin only once its front door listens, after the handlers are loaded.
 */
export const securityHeaders = (): Record<string, string> => ({
  'content-security-policy': `default-src 'none'; script-src 'self'; style-src 'self'; img-src ${imageSources(process.env.HERALD_MEDIA_BASE_URL)}; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  // Not `no-referrer`: under it browsers send `Origin: null` with a page's own form posts (Fetch's
  // "serializing a request origin"), which the Origin check must refuse. `same-origin` still sends
  // nothing to other sites.
  'referrer-policy': 'same-origin',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
});

/**
 * On https, the security headers and HSTS (a year): a browser that has seen the console once never
 * asks for it over plain http again, where the first request could be downgraded. No
 * includeSubDomains: the console's host may share its parent domain with sites we do not serve.
 */
export function securityHeadersFor(event: Pick<HttpEvent, 'requestContext'>): Record<string, string> {
  return consoleSite(event).secure
    ? { ...securityHeaders(), 'strict-transport-security': 'max-age=31536000' }
    : securityHeaders();
}

/** A refusal of the pipeline itself (before any use case runs). */
class Refusal extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 413,
    message: string,
    readonly kind = ({ 400: 'invalid', 403: 'forbidden', 404: 'not_found', 413: 'too_large' } as const)[
      status
    ],
  ) {
    super(message);
    this.name = 'Refusal';
  }
}

/** No session behind the cookie: the person signs in (again). */
class SignInRequired extends Error {
  constructor(readonly hadCookie: boolean) {
    super('Sign in to continue.');
    this.name = 'SignInRequired';
  }
}

const STATUS_OF: Record<ActError['kind'], number> = {
  not_found: 404,
  forbidden: 403,
  conflict: 409,
  invalid: 400,
  rate_limited: 429,
};

export const SIGN_IN_PATH = `${CONSOLE_PATH}/sign-in`;

interface ConsoleContext extends Context {
  console?: { site?: ConsoleSite; json?: boolean; signedIn?: SignedIn | null };
}

type Middleware = MiddlewareObj<HttpEvent, HttpResult, Error, ConsoleContext>;

/** The security headers, `Cache-Control: no-store` (unless a file says otherwise) and the request id, on every response. */
export const consoleHeaders = (): Middleware => {
  const add = (request: { event: HttpEvent; response: HttpResult | null }) => {
    if (!request.response) return;
    request.response.headers = {
      'cache-control': 'no-store',
      ...request.response.headers,
      ...securityHeadersFor(request.event),
      'x-request-id': requestIdOf(request.event),
    };
  };
  return { after: add, onError: add };
};

/**
 * Every error as an answer: ActError kinds and the pipeline's refusals as their status (a page, or
 * JSON for a ceremony's fetch), no session as a redirect to sign-in (401 for JSON), anything else a
 * 500 that names the request id and nothing internal — logged with its cause.
 */
export const consoleErrors = (statusPage: StatusPageRenderer, gate?: ConsoleGate): Middleware => ({
  onError: async (request) => {
    const err = request.error;
    const requestId = requestIdOf(request.event);
    const c = request.context.console ?? {};
    const site = c.site;
    if (err instanceof SignInRequired) {
      const cookies = err.hadCookie && site ? [clearedSessionCookie(site)] : [];
      // A page asked for comes back after sign-in (a form's POST does not: it is sent again by nobody).
      const event = request.event;
      const next =
        event.requestContext.http.method === 'GET' ? returnPath(`${event.rawPath}${queryOf(event)}`) : null;
      const params = new URLSearchParams();
      if (err.hadCookie) params.set('msg', 'session_ended');
      if (next && next !== CONSOLE_PATH) params.set('next', next);
      const location = params.size ? `${SIGN_IN_PATH}?${params}` : SIGN_IN_PATH;
      request.response = toResult(
        c.json
          ? jsonAnswer(
              { error: { kind: 'signed_out', message: err.message }, redirect: location },
              { status: 401, cookies },
            )
          : redirectAnswer(location, { cookies }),
      );
      // A live region's refresh (htmx) would follow the redirect and swap the sign-in page into
      // the region: the whole page goes to sign-in instead.
      if (request.event.headers?.['hx-request'] === 'true' && !c.json)
        request.response = {
          statusCode: 200,
          headers: { 'hx-redirect': location },
          body: '',
          ...(cookies.length ? { cookies } : {}),
        };
      return;
    }
    const { status, kind, message } = outcomeOf(err, requestId);
    if (status === 403 && err instanceof Refusal)
      logger.warn('console request refused', { reason: message, request_id: requestId });
    if (status >= 500)
      logger.error('console request failed', { error: err ?? undefined, request_id: requestId });
    const signedIn = c.signedIn ?? null;
    const orgName = c.json || !signedIn ? undefined : await orgNameOf(gate, signedIn, requestId);
    const response = toResult(
      c.json
        ? jsonAnswer({ error: { kind, message } }, { status })
        : pageAnswer(renderStatus(statusPage, { status, message, requestId, signedIn, orgName }), {
            status,
          }),
    );
    // Attempts are counted per minute.
    if (status === 429) response.headers['retry-after'] = '60';
    request.response = response;
  },
});

function outcomeOf(err: unknown, requestId: string): { status: number; kind: string; message: string } {
  if (err instanceof ActError)
    return { status: STATUS_OF[err.kind] ?? 400, kind: err.kind, message: err.message };
  if (err instanceof Refusal) return { status: err.status, kind: err.kind, message: err.message };
  return {
    status: 500,
    kind: 'internal_error',
    message: `Something went wrong on our side. If it happens again, quote the request id ${requestId}.`,
  };
}

/** The workspace's name for a status page's header; without it (a failed read) the page still renders. */
async function orgNameOf(
  gate: ConsoleGate | undefined,
  signedIn: SignedIn,
  requestId: string,
): Promise<string | undefined> {
  try {
    return (await gate?.orgName?.(signedIn)) ?? undefined;
  } catch (err) {
    logger.warn('status page without the workspace name', { error: err, request_id: requestId });
    return undefined;
  }
}

/**
 * Who is looking at a 404 of the $default route: nobody without a session cookie (no read at all),
 * else the gate's read-only answer — a link followed to nowhere must not touch or end a session.
 */
async function notFoundViewer(
  event: HttpEvent,
  gate: ConsoleGate | undefined,
  requestId: string,
): Promise<{ signedIn: SignedIn | null; orgName?: string | undefined }> {
  const cookie = parseCookies(event.cookies)[consoleSite(event).sessionCookie];
  if (!cookie || !gate?.peek) return { signedIn: null };
  try {
    const signedIn = await gate.peek(cookie, new Date());
    return signedIn ? { signedIn, orgName: await orgNameOf(gate, signedIn, requestId) } : { signedIn: null };
  } catch (err) {
    logger.warn('404 page without the session', { error: err, request_id: requestId });
    return { signedIn: null };
  }
}

/** A status page, or a bare one if the views themselves fail (the error page must not throw). */
function renderStatus(statusPage: StatusPageRenderer, page: StatusPage): SafeHtml {
  try {
    return statusPage(page);
  } catch (err) {
    logger.error('status page failed to render', { error: err, request_id: page.requestId });
    return statusPage({ ...page, signedIn: null, orgName: undefined });
  }
}

/**
 * A console address no page serves (the $default route's answer under CONSOLE_PATH): a person's
 * browser gets the console's own 404 page, with its headers, not the API's problem+json.
 */
export async function consoleNotFound(
  event: HttpEvent,
  statusPage: StatusPageRenderer,
  gate?: ConsoleGate,
): Promise<HttpResult> {
  const requestId = requestIdOf(event);
  const message = 'There is no such page in the console. Check the address, or start again from the console.';
  const viewer = await notFoundViewer(event, gate, requestId);
  const res = toResult(
    pageAnswer(renderStatus(statusPage, { status: 404, message, requestId, ...viewer }), {
      status: 404,
    }),
  );
  res.headers = {
    'cache-control': 'no-store',
    ...res.headers,
    ...securityHeaders(),
    'x-request-id': requestId,
  };
  return res;
}

function toResult(answer: ConsoleAnswer): HttpResult {
  const cookies = answer.cookies?.length ? { cookies: answer.cookies } : {};
  switch (answer.kind) {
    case 'page':
      return {
        statusCode: answer.status,
        headers: { 'content-type': 'text/html; charset=utf-8' },
        body: documentOf(answer.page),
        ...cookies,
      };
    case 'redirect':
      return { statusCode: 303, headers: { location: answer.location }, body: '', ...cookies };
    case 'json':
      return {
        statusCode: answer.status,
        headers: { 'content-type': 'application/json; charset=utf-8' },
        body: JSON.stringify(answer.body),
        ...cookies,
      };
    case 'file':
      return {
        statusCode: 200,
        headers: { 'content-type': answer.contentType, 'cache-control': answer.cacheControl },
        body: answer.body,
        ...cookies,
      };
  }
}

/** API Gateway payload v2 cookies (`name=value` each); the first of a repeated name wins. */
export function parseCookies(cookies: readonly string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of cookies ?? []) {
    const eq = c.indexOf('=');
    if (eq <= 0) continue;
    const name = c.slice(0, eq).trim();
    if (!(name in out)) out[name] = c.slice(eq + 1).trim();
  }
  return out;
}

function bodyText(event: HttpEvent): string {
  const raw = event.body ?? '';
  // API Gateway base64-encodes bodies it does not take for text; form posts may arrive so.
  const text = event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
  if (Buffer.byteLength(text, 'utf8') > MAX_FORM_BYTES)
    throw new Refusal(413, 'That was more than a console form can send.');
  return text;
}

const mimeOf = (event: HttpEvent) =>
  (event.headers?.['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';

function readForm(event: HttpEvent): URLSearchParams {
  const text = bodyText(event);
  const mime = mimeOf(event);
  if (mime !== 'application/x-www-form-urlencoded' && !(mime === '' && text === ''))
    throw new Refusal(400, 'Send the form as the page does (application/x-www-form-urlencoded).');
  return new URLSearchParams(text);
}

function readJson(event: HttpEvent): unknown {
  const text = bodyText(event);
  if (mimeOf(event) !== 'application/json') throw new Refusal(400, 'Send the body as JSON.');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Refusal(400, 'The body is not valid JSON.');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new Refusal(400, 'The body must be a JSON object.');
  return parsed;
}

/**
 * A cross-site request never reaches a use case: a state-changing request must carry the console's
 * own origin, exactly. Browsers send Origin on every POST (same-origin fetches included); a request
 * without one, or with `null` (sandboxed frames, some redirects), is refused as well.
 */
function checkOrigin(event: HttpEvent, site: ConsoleSite): void {
  if (event.requestContext.http.method === 'GET') return;
  const origin = event.headers?.origin;
  if (origin !== site.origin)
    throw new Refusal(
      403,
      origin === undefined
        ? 'This request did not say where it came from, so it was refused. Use the console’s own pages.'
        : 'This request came from another site, so it was refused. Use the console’s own pages.',
    );
}

/** The route key's path, as API Gateway names it (`GET /console/keys/{id}/revoke`). */
const routeKeyOf = (event: HttpEvent) => event.routeKey ?? '';

/**
 * The console handler builder over a gate and a status page renderer: a page's Lambda handler from
 * its manifest entry and one route object per (method, path) of that entry — exactly those, checked
 * at load. Returns the middy-wrapped `handler` and the page's manifest entry.
 */
export const consoleHandlers = (deps: { gate: ConsoleGate; statusPage: StatusPageRenderer }) =>
  function consolePage(pageId: string, routes: Readonly<Record<string, ConsoleRoute>>) {
    const page = consolePages.find((p) => p.id === pageId);
    if (!page) throw new Error(`unknown console page ${pageId}`);
    const declared = page.routes.map((r) => `${r.method} ${r.path}`).sort();
    const given = Object.keys(routes).sort();
    if (declared.join('\n') !== given.join('\n'))
      throw new Error(
        `${pageId} serves ${given.join(', ')}; its manifest entry names ${declared.join(', ')}`,
      );

    const run = async (event: HttpEvent, context: ConsoleContext): Promise<HttpResult> => {
      const route = routes[routeKeyOf(event)];
      const site = consoleSite(event);
      const json = route?.body === 'json';
      context.console = { site, json, signedIn: null };
      if (!route) throw new Refusal(404, 'There is no such page.');
      const method = event.requestContext.http.method;
      checkOrigin(event, site);
      // Browsers refuse passkeys on an IP address: a page opened on one (the local stack's
      // 127.0.0.1) is sent to the console's own address. Only IP hosts: behind a CDN the request's
      // host may differ from the console's by design, and redirecting it would loop.
      const host = hostOf(event);
      if (method === 'GET' && !json && isIpHost(host) && host !== new URL(site.origin).host)
        return toResult(redirectAnswer(`${site.origin}${event.rawPath}${queryOf(event)}`));
      const cookies = parseCookies(event.cookies);
      const now = new Date();
      const req: ConsoleRequest = {
        params: (event.pathParameters ?? {}) as Record<string, string>,
        query: new URLSearchParams(event.rawQueryString ?? ''),
        form: method === 'POST' && !json ? readForm(event) : new URLSearchParams(),
        json: method === 'POST' && json ? readJson(event) : undefined,
        cookies,
        site,
        sourceIp: event.requestContext.http.sourceIp,
        requestId: requestIdOf(event),
        now,
        lambda: context,
      };
      let answer: ConsoleAnswer;
      if (route.who === 'person') {
        const cookie = cookies[site.sessionCookie];
        const signedIn = cookie ? await deps.gate.resolve(cookie, now) : null;
        if (!signedIn) throw new SignInRequired(cookie !== undefined);
        context.console.signedIn = signedIn;
        logger.appendKeys({ org_id: signedIn.session.org_id, user_id: signedIn.user.id });
        answer = await route.run({ ...req, signedIn });
      } else {
        answer = await route.run(req);
      }
      return toResult(answer);
    };

    const handler = middy<HttpEvent, HttpResult, Error, ConsoleContext>(run)
      .use(injectLambdaContext(logger, { resetKeys: true, logEvent: false }))
      .use(consoleHeaders())
      .use(consoleErrors(deps.statusPage, deps.gate));
    return { handler, page: page as ConsolePage };
  };

const hostOf = (event: HttpEvent) => event.headers?.host ?? event.requestContext.domainName;
/** `127.0.0.1:3000`, `[::1]:3000`: an IP literal, with or without a port. */
const isIpHost = (host: string) => host.startsWith('[') || /^\d{1,3}(\.\d{1,3}){3}(:\d+)?$/.test(host);
const queryOf = (event: HttpEvent) => (event.rawQueryString ? `?${event.rawQueryString}` : '');

/** Console paths a sign-in may return to: our own pages, never another site or a ceremony. */
const RETURNABLE = /^\/console(?:\/[A-Za-z0-9._~-]+)*\/?(?:\?[A-Za-z0-9._~\-=&%+]*)?$/;

/**
 * Where to go after signing in, from a `next` parameter: a console page of this origin, or null.
 * Anything else (another site, `//host`, a scheme, the sign-in and enrollment pages) is ignored, so
 * a link cannot make sign-in send a person elsewhere.
 */
export function returnPath(value: string | null | undefined): string | null {
  if (!value || value.length > 500 || !RETURNABLE.test(value)) return null;
  // `.` and `..` segments would resolve outside /console.
  if ((value.split('?')[0] ?? '').split('/').some((seg) => seg === '.' || seg === '..')) return null;
  if (value.startsWith(`${SIGN_IN_PATH}`) || value.startsWith(`${CONSOLE_PATH}/enroll`)) return null;
  return value;
}

/**
 * A static file's URL, versioned by the hash of the files (HERALD_CONSOLE_ASSETS_VERSION, set by
 * the stack and the local stack) so the assets can be cached for a year and still change on deploy.
 */
export function assetUrl(file: string): string {
  const version = process.env.HERALD_CONSOLE_ASSETS_VERSION;
  return `${CONSOLE_PATH}/assets/${file}${version ? `?v=${encodeURIComponent(version)}` : ''}`;
}
