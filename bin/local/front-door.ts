import { randomUUID } from 'node:crypto';
import {
  createServer,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import {
  consolePages,
  DEFAULT_TIMEOUT_SECONDS,
  fallback,
  mcp,
  type Operation,
  operations,
  pathMatcher,
} from '#lib/operations';
import { asInvocations } from './invocations.ts';
import { createMediaDoor, type LocalS3 } from './media-door.ts';

// The local stand-in for API Gateway (HTTP API, payload v2): routes from the manifest (the API's
// operations and the console's pages), events built like API Gateway builds them (cookies
// included), and the very same handler modules that run in Lambda — including the $default route's
// handler for paths and methods we do not serve.

type Handler<E = APIGatewayProxyEventV2, R = APIGatewayProxyStructuredResultV2> = (
  event: E,
  context: Context,
) => Promise<R>;

/** API Gateway's own payload limit; the handlers enforce the API's smaller one. */
const GATEWAY_MAX_BODY = 10 * 1024 * 1024;
interface Route {
  op: Pick<Operation, 'id' | 'path'> & { method: Operation['method'] | 'ANY' };
  /** The path template's matcher, compiled once (every request tries the routes in turn). */
  match?: (path: string) => Record<string, string> | null;
  handler: Promise<Handler>;
  /** The function's timeout in AWS, so middy's early timeout behaves the same locally. */
  timeoutMs: number;
  /** The route's throttle (the manifest's `throttle`): false when the request is refused. */
  admit?: () => boolean;
}

/**
 * A Lambda's handler, from its entry in the manifest (Node caches the module: one per process),
 * each call run as its own invocation (invocations.ts).
 */
export function loadHandler<E = APIGatewayProxyEventV2, R = APIGatewayProxyStructuredResultV2>(
  root: string,
  entry: string,
): Promise<Handler<E, R>> {
  return import(pathToFileURL(join(root, entry)).href).then((m: { handler: Handler<E, R> }) =>
    asInvocations(m.handler),
  );
}

const timeoutMsOf = (timeoutSeconds = DEFAULT_TIMEOUT_SECONDS) => timeoutSeconds * 1000;

export function lambdaContext(functionName: string, requestId: string, timeoutMs = timeoutMsOf()): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

async function readBody(req: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > GATEWAY_MAX_BODY) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

const TEXTUAL = /^(application\/(json|[\w.+-]+\+json|x-www-form-urlencoded|xml)|text\/)/i;

export function buildEvent(
  req: IncomingMessage,
  route: Route | null,
  pathParameters: Record<string, string>,
  body: Buffer,
  requestId: string,
): APIGatewayProxyEventV2 {
  const url = new URL(req.url ?? '/', 'http://local');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  // Payload v2 hands the request's cookies over as `cookies`, one `name=value` each, and not as a header.
  const cookies = cookiesOf(headers.cookie);
  delete headers.cookie;
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = k in query ? `${query[k]},${v}` : v;
  const routeKey = route ? `${route.op.method} ${route.op.path}` : '$default';
  const textual = TEXTUAL.test(headers['content-type'] ?? 'application/json');
  const now = Date.now();
  return {
    version: '2.0',
    routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    ...(cookies.length ? { cookies } : {}),
    headers,
    ...(Object.keys(query).length ? { queryStringParameters: query } : {}),
    ...(Object.keys(pathParameters).length ? { pathParameters } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'local',
      http: {
        method: req.method ?? 'GET',
        path: url.pathname,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey,
      stage: '$default',
      time: new Date(now).toISOString(),
      timeEpoch: now,
    },
    ...(body.length ? { body: textual ? body.toString('utf8') : body.toString('base64') } : {}),
    isBase64Encoded: body.length > 0 && !textual,
  };
}

/** A Cookie header's pairs, as API Gateway lists them in a payload v2 event's `cookies`. */
export function cookiesOf(header: string | undefined): string[] {
  return (header ?? '')
    .split(';')
    .map((c) => c.trim())
    .filter(Boolean);
}

/**
 * Writes a Lambda proxy result as API Gateway does: payload v2's `cookies` become one Set-Cookie
 * header each, the body is decoded if it came base64-encoded.
 */
export function writeResult(res: ServerResponse, result: APIGatewayProxyStructuredResultV2): void {
  const payload = result.isBase64Encoded
    ? Buffer.from(result.body ?? '', 'base64')
    : Buffer.from(result.body ?? '', 'utf8');
  const headers: OutgoingHttpHeaders = { ...result.headers, 'content-length': payload.length };
  if (result.cookies?.length) headers['set-cookie'] = result.cookies;
  res.writeHead(result.statusCode ?? 200, headers);
  res.end(payload);
}

/**
 * API Gateway's route throttle: a token bucket of `burstLimit` tokens refilled at `rateLimit` per
 * second; an empty bucket answers 429 before the integration runs.
 */
export function tokenBucket(limit: { rateLimit: number; burstLimit: number }, now = () => Date.now()) {
  let tokens = limit.burstLimit;
  let at = now();
  return (): boolean => {
    const t = now();
    tokens = Math.min(limit.burstLimit, tokens + ((t - at) / 1000) * limit.rateLimit);
    at = t;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };
}

export function createFrontDoor(root: string, media?: LocalS3): Server {
  const mediaDoor = media ? createMediaDoor(media) : null;
  const routes: Route[] = [
    ...operations.map((op) => ({
      op,
      match: pathMatcher(op.path),
      handler: loadHandler(root, op.entry),
      timeoutMs: timeoutMsOf(op.timeoutSeconds),
      ...(op.throttle ? { admit: tokenBucket(op.throttle) } : {}),
    })),
    // One function per console page, serving each of its routes (each with its own throttle).
    ...consolePages.flatMap((page) => {
      const handler = loadHandler(root, page.entry);
      return page.routes.map((r) => ({
        op: { id: page.id, method: r.method, path: r.path },
        match: pathMatcher(r.path),
        handler,
        timeoutMs: timeoutMsOf(page.timeoutSeconds),
        ...(r.throttle ? { admit: tokenBucket(r.throttle) } : {}),
      }));
    }),
  ];
  const mcpRoute: Route = {
    op: { id: mcp.id, method: 'ANY', path: mcp.path },
    handler: loadHandler(root, mcp.entry),
    timeoutMs: timeoutMsOf(mcp.timeoutSeconds),
  };
  const notFound: Route = {
    op: { id: fallback.id, method: 'GET', path: '$default' },
    handler: loadHandler(root, fallback.entry),
    timeoutMs: timeoutMsOf(),
  };
  return createServer(async (req, res) => {
    const requestId = randomUUID();
    try {
      if (mediaDoor && (await mediaDoor(req, res))) return;
      const path = new URL(req.url ?? '/', 'http://local').pathname;
      let route: Route | null = path === mcp.path ? mcpRoute : null;
      let params: Record<string, string> = {};
      if (!route)
        for (const r of routes) {
          const m = r.op.method === req.method ? (r.match?.(path) ?? null) : null;
          if (m) {
            route = r;
            params = m;
            break;
          }
        }
      const body = await readBody(req);
      if (body === null) return gatewayAnswer(res, requestId, 413, 'Request Entity Too Large');
      if (route?.admit && !route.admit()) return gatewayAnswer(res, requestId, 429, 'Too Many Requests');
      const target = route ?? notFound;
      const event = buildEvent(req, route, params, body, requestId);
      const handler = await target.handler;
      const result = await handler(event, lambdaContext(target.op.id, requestId, target.timeoutMs));
      writeResult(res, result);
    } catch (err) {
      // API Gateway answers a crashed integration with a bare 500; so do we, without internals.
      console.error(`[front-door] ${requestId}`, err);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      gatewayAnswer(res, requestId, 500, 'Internal Server Error');
    }
  });
}

/** What API Gateway itself answers, before or instead of the integration: `{"message"}`. */
function gatewayAnswer(res: ServerResponse, requestId: string, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': requestId });
  res.end(JSON.stringify({ message }));
}
