import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy, { type MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { ApiError, toProblem } from '#core/errors';
import { docsUrl } from './config.ts';
import { logger } from './logger.ts';

// What every HTTP response shares, authenticated or not: the request id header and RFC 9457
// problem+json errors. No adapters here, so public handlers stay small and need no table.

export type HttpEvent = APIGatewayProxyEventV2;
export type HttpResult = APIGatewayProxyStructuredResultV2 & { headers: Record<string, string> };

type Middleware<C extends Context = Context> = MiddlewareObj<HttpEvent, HttpResult, Error, C>;

export const requestIdOf = (event: HttpEvent) => event.requestContext?.requestId ?? 'unknown';

/**
 * The MCP server's mark on the event of the REST call a tool call stands for. It sits in the
 * request context, which API Gateway (and the local front door) builds itself for every request
 * from outside: no client can set it.
 */
export const MCP_MARK = { lambda: { herald_via: 'mcp' } } as const;

/** Whether a request came through the MCP server or straight to the REST API. */
export function viaOf(event: HttpEvent): 'api' | 'mcp' {
  const authorizer = (event.requestContext as { authorizer?: { lambda?: { herald_via?: unknown } } })
    ?.authorizer;
  return authorizer?.lambda?.herald_via === 'mcp' ? 'mcp' : 'api';
}

export function jsonResponse(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): HttpResult {
  // 204 No Content carries no body (and so no content type).
  if (status === 204)
    return { statusCode: 204, headers: { 'cache-control': 'no-store', ...headers }, body: '' };
  return rawJsonResponse(status, JSON.stringify(body), headers);
}

/** For bodies that must go out byte for byte as recorded (idempotent replays). */
export function rawJsonResponse(
  status: number,
  json: string,
  headers: Record<string, string> = {},
): HttpResult {
  return {
    statusCode: status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers },
    body: json,
  };
}

/** A context that collects headers for the response, whatever its outcome (e.g. rate-limit headers). */
export interface HeaderBagContext extends Context {
  responseHeaders?: Record<string, string>;
}

export function addResponseHeaders(context: HeaderBagContext, headers: Record<string, string>): void {
  context.responseHeaders = { ...context.responseHeaders, ...headers };
}

/** `X-Request-Id` and the collected headers on every response, success or error. Register it first. */
export const requestIdHeader = <C extends HeaderBagContext>(): Middleware<C> => {
  const add = (request: { event: HttpEvent; response: HttpResult | null; context: C }) => {
    if (request.response) {
      request.response.headers = {
        ...request.response.headers,
        ...request.context.responseHeaders,
        'x-request-id': requestIdOf(request.event),
      };
    }
  };
  return { after: add, onError: add };
};

/** Turns any error into RFC 9457 problem+json; nothing internal leaks for 5xx. */
export const problemJson = <C extends Context>(): Middleware<C> => ({
  onError: (request) => {
    const err = request.error;
    const requestId = requestIdOf(request.event);
    const apiError =
      err instanceof ApiError
        ? err
        : new ApiError('internal_error', 'The server failed to handle the request; retry later.');
    if (apiError.status >= 500)
      logger.error('request failed', { error: err ?? undefined, request_id: requestId });
    request.response = {
      statusCode: apiError.status,
      headers: {
        'content-type': 'application/problem+json',
        'cache-control': 'no-store',
        ...apiError.headers,
      },
      body: JSON.stringify(toProblem(apiError, requestId, docsUrl(request.event.requestContext?.domainName))),
    };
  },
});

/** A handler served without an API key (the OpenAPI document, the $default route). */
export function publicHandler(fn: (event: HttpEvent) => Promise<HttpResult>) {
  return middy<HttpEvent, HttpResult>(fn)
    .use(injectLambdaContext(logger, { resetKeys: true, logEvent: false }))
    .use(requestIdHeader())
    .use(problemJson());
}
