import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { type Operation, operations } from '#lib/operations';

// The local stand-in for API Gateway (HTTP API, payload v2): routes from the manifest, events built
// like API Gateway builds them, and the very same handler modules that run in Lambda.

type Handler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

/** API Gateway's own payload limit; the handlers enforce the API's smaller one. */
const GATEWAY_MAX_BODY = 10 * 1024 * 1024;
const LAMBDA_TIMEOUT_MS = 10_000;

interface Route {
  op: Operation;
  pattern: RegExp;
  params: string[];
  handler: Promise<Handler>;
}

function compile(op: Operation, root: string): Route {
  const params: string[] = [];
  const source = op.path
    .replace(/[.*+?^$()|[\]\\]/g, '\\$&')
    .replace(/\\?\{(\w+)\\?\}|\{(\w+)\}/g, (_m, a, b) => {
      params.push(a ?? b);
      return '([^/]+)';
    });
  const handler = import(pathToFileURL(join(root, op.entry)).href).then(
    (m: { handler: Handler }) => m.handler,
  );
  return { op, pattern: new RegExp(`^${source}$`), params, handler };
}

export function lambdaContext(
  functionName: string,
  requestId: string,
  timeoutMs = LAMBDA_TIMEOUT_MS,
): Context {
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

function problem(
  res: ServerResponse,
  status: number,
  code: string,
  title: string,
  detail: string,
  requestId: string,
  extra: Record<string, string> = {},
) {
  res.writeHead(status, { 'content-type': 'application/problem+json', 'x-request-id': requestId, ...extra });
  res.end(
    JSON.stringify({
      type: `https://docs.herald.dev/api/problems/${code.replaceAll('_', '-')}`,
      title,
      status,
      code,
      detail,
      request_id: requestId,
    }),
  );
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
  route: Route,
  match: RegExpExecArray,
  body: Buffer,
  requestId: string,
): APIGatewayProxyEventV2 {
  const url = new URL(req.url ?? '/', 'http://local');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = k in query ? `${query[k]},${v}` : v;
  const pathParameters = Object.fromEntries(
    route.params.map((p, i) => [p, decodeURIComponent(match[i + 1] ?? '')]),
  );
  const textual = TEXTUAL.test(headers['content-type'] ?? 'application/json');
  const now = Date.now();
  return {
    version: '2.0',
    routeKey: `${route.op.method} ${route.op.path}`,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    ...(Object.keys(query).length ? { queryStringParameters: query } : {}),
    ...(route.params.length ? { pathParameters } : {}),
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
      routeKey: `${route.op.method} ${route.op.path}`,
      stage: '$default',
      time: new Date(now).toISOString(),
      timeEpoch: now,
    },
    ...(body.length ? { body: textual ? body.toString('utf8') : body.toString('base64') } : {}),
    isBase64Encoded: body.length > 0 && !textual,
  };
}

export function createFrontDoor(root: string): Server {
  const routes = operations.map((op) => compile(op, root));
  return createServer(async (req, res) => {
    const requestId = randomUUID();
    try {
      const path = new URL(req.url ?? '/', 'http://local').pathname;
      const matches = routes.map((r) => ({ r, m: r.pattern.exec(path) })).filter((x) => x.m);
      const hit = matches.find((x) => x.r.op.method === req.method);
      if (!hit) {
        req.resume();
        if (matches.length) {
          const allow = matches.map((x) => x.r.op.method).join(', ');
          return problem(
            res,
            405,
            'method_not_allowed',
            'Method not allowed',
            `Use ${allow} on ${path}.`,
            requestId,
            { allow },
          );
        }
        return problem(
          res,
          404,
          'resource_not_found',
          'Resource not found',
          `No route ${req.method} ${path}.`,
          requestId,
        );
      }
      const body = await readBody(req);
      if (body === null)
        return problem(
          res,
          413,
          'payload_too_large',
          'Payload too large',
          'Request body too large.',
          requestId,
        );
      const event = buildEvent(req, hit.r, hit.m as RegExpExecArray, body, requestId);
      const handler = await hit.r.handler;
      const result = await handler(event, lambdaContext(hit.r.op.id, requestId));
      const payload = result.isBase64Encoded
        ? Buffer.from(result.body ?? '', 'base64')
        : Buffer.from(result.body ?? '', 'utf8');
      res.writeHead(result.statusCode ?? 200, {
        ...(result.headers as Record<string, string>),
        'content-length': payload.length,
      });
      res.end(payload);
    } catch (err) {
      // API Gateway answers a crashed integration with 500; so do we, without internals.
      console.error(`[front-door] ${requestId}`, err);
      if (!res.headersSent)
        problem(
          res,
          500,
          'internal_error',
          'Internal server error',
          'The server failed to handle the request.',
          requestId,
        );
      else res.destroy();
    }
  });
}
