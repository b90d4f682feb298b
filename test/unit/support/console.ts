import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { Org, OrgSettings, Role, User } from '#core/accounts';
import type { SignedIn } from '#core/people';
import type { HttpResult } from '#shared/envelope';
import { lambdaContext } from '../../../bin/local/front-door.ts';
import { org } from './fixtures.ts';

// Console fixtures: API Gateway v2 events for console routes (cookies in `event.cookies`, as the
// gateway sends them), people signed in, and readers of the answers.

export const CONSOLE_DOMAIN = 'console.unit';
export const CONSOLE_ORIGIN = `https://${CONSOLE_DOMAIN}`;
export const SESSION_COOKIE = '__Host-herald_session';
export const ORG = 'org_01JD0000000000000000000001';

/** The console tests' workspace: ORG on the team plan, with `settings` over the defaults. */
export const consoleOrg = (settings: Partial<OrgSettings> = {}): Org =>
  org({ landing_origins: [], ...settings }, ORG);

export interface ConsoleEventOptions {
  params?: Record<string, string>;
  query?: string;
  headers?: Record<string, string>;
  cookies?: string[];
  body?: string;
  isBase64Encoded?: boolean;
  requestId?: string;
  sourceIp?: string;
}

/** An event for a route key (`POST /console/keys/{id}/revoke`), as API Gateway builds it. */
export function consoleEvent(routeKey: string, opts: ConsoleEventOptions = {}): APIGatewayProxyEventV2 {
  const [method = 'GET', template = '/'] = routeKey.split(' ');
  const path = template.replace(/\{(\w+)\}/g, (_m, name: string) => opts.params?.[name] ?? '');
  const requestId = opts.requestId ?? 'req-console-1';
  return {
    version: '2.0',
    routeKey,
    rawPath: path,
    rawQueryString: opts.query ?? '',
    headers: { host: CONSOLE_DOMAIN, ...opts.headers },
    ...(opts.cookies ? { cookies: opts.cookies } : {}),
    ...(opts.query ? { queryStringParameters: Object.fromEntries(new URLSearchParams(opts.query)) } : {}),
    ...(opts.params ? { pathParameters: opts.params } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'unit',
      domainName: CONSOLE_DOMAIN,
      domainPrefix: 'console',
      http: {
        method,
        path,
        protocol: 'HTTP/1.1',
        sourceIp: opts.sourceIp ?? '198.51.100.7',
        userAgent: 'vitest',
      },
      requestId,
      routeKey,
      stage: '$default',
      time: '01/Jan/2030:00:00:00 +0000',
      timeEpoch: Date.parse('2030-01-01T00:00:00Z'),
    },
    ...(opts.body !== undefined ? { body: opts.body } : {}),
    isBase64Encoded: opts.isBase64Encoded ?? false,
  };
}

/** A form POST from the console's own page. */
export function formPost(
  routeKey: string,
  fields: string | Record<string, string | string[]>,
  opts: ConsoleEventOptions = {},
) {
  const body =
    typeof fields === 'string'
      ? fields
      : new URLSearchParams(
          Object.entries(fields).flatMap(([k, v]): [string, string][] =>
            Array.isArray(v) ? v.map((x): [string, string] => [k, x]) : [[k, v]],
          ),
        ).toString();
  return consoleEvent(routeKey, {
    ...opts,
    body,
    headers: { origin: CONSOLE_ORIGIN, 'content-type': 'application/x-www-form-urlencoded', ...opts.headers },
  });
}

/** A ceremony's same-origin fetch. */
export function jsonPost(routeKey: string, body: unknown, opts: ConsoleEventOptions = {}) {
  return consoleEvent(routeKey, {
    ...opts,
    body: JSON.stringify(body),
    headers: { origin: CONSOLE_ORIGIN, 'content-type': 'application/json', ...opts.headers },
  });
}

export function person(role: Role, n = 1, email = `person${n}@example.com`): SignedIn {
  const user: User = {
    id: `usr_01JD00000000000000000000${String(n).padStart(2, '0')}`,
    org_id: ORG,
    email,
    role,
    created_at: '2030-01-01T00:00:00.000Z',
  };
  return {
    user,
    session: {
      id: `ses_01JD00000000000000000000${String(n).padStart(2, '0')}`,
      org_id: ORG,
      user_id: user.id,
      role,
      created_at: '2030-01-01T00:00:00.000Z',
      seen_at: '2030-01-01T00:00:00.000Z',
      expires_at: '2030-01-01T12:00:00.000Z',
    },
  };
}

/** The session cookie a signed-in person's browser sends. */
export const sessionOf = (s: SignedIn) => [`${SESSION_COOKIE}=${s.session.org_id}~${s.user.id}~secret`];

type Handler = (event: APIGatewayProxyEventV2, context: ReturnType<typeof lambdaContext>) => Promise<unknown>;

/** Runs a console handler as Lambda would. */
export async function call(handler: Handler, event: APIGatewayProxyEventV2): Promise<HttpResult> {
  return (await handler(event, lambdaContext('console', event.requestContext.requestId))) as HttpResult;
}

/** The text of a page's main landmark, tags stripped (what a person reads). */
export function mainText(res: HttpResult): string {
  const main = /<main[^>]*>([\s\S]*)<\/main>/.exec(res.body ?? '')?.[1] ?? '';
  return main
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}
