import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { invokeOperation } from '#adapters/operation-invoker';
import type { AuthContext, Org } from '#core/accounts';
import { ApiError } from '#core/errors';
import { hasFeature } from '#core/plans';
import { mcp } from '#lib/operations';
import { type HttpEvent, type HttpResult, MCP_MARK } from '#shared/envelope';
import { logger } from '#shared/logger';
import { authenticateFresh, requirePlanFeature } from '#usecases/support/authenticate';
import { findTool, type ToolSpec, toRequest, visibleTools } from './mcp-tools.ts';

// The MCP server (docs/api/mcp.md): Streamable HTTP, stateless, JSON responses. Every request is
// authenticated with the API key; tools/list shows what the key may call; tools/call runs the
// operation's own Lambda with the REST request it stands for, so scopes, limits, api_requests
// metering, validation and the dangerous-operations toggle are enforced exactly as over REST.

export const SERVER_INFO = { name: 'herald', version: '1.0.0' };
// RFC 6750 §3: no error code when no credentials were sent, invalid_token for a bad key.
const challenge = (code: string) =>
  code === 'invalid_api_key' ? 'Bearer realm="herald", error="invalid_token"' : 'Bearer realm="herald"';

const allowedOrigins = () =>
  (process.env.HERALD_MCP_ALLOWED_ORIGINS ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);

/** Browsers send Origin; only the configured ones may reach the server (DNS rebinding defence). */
export function checkOrigin(headers: Record<string, string | undefined>): void {
  const origin = headers.origin;
  if (origin === undefined) return;
  if (!allowedOrigins().includes(origin))
    throw new ApiError('origin_not_allowed', `Requests from origin ${origin} are not accepted.`);
}

/** Who is calling: the key, and its organization as read for this request (settings current). */
export interface McpCaller {
  auth: AuthContext;
  org: Org;
}

export async function authenticateMcp(headers: Record<string, string | undefined>): Promise<McpCaller> {
  try {
    // Protocol traffic (initialize, tools/list) is not admitted through the request gate, so the
    // key is read fresh: a revoked key is refused at once here too. Tool calls pass the gate.
    const caller = await authenticateFresh(headers);
    requirePlanFeature(caller.auth, mcp.feature);
    return caller;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401)
      throw new ApiError(err.code, err.message, { headers: { 'www-authenticate': challenge(err.code) } });
    throw err;
  }
}

/** The API Gateway event of the REST call a tool call stands for. */
function operationEvent(
  spec: ToolSpec,
  args: Record<string, unknown>,
  source: HttpEvent,
): APIGatewayProxyEventV2 {
  const req = toRequest(spec, args);
  const headers: Record<string, string> = { ...req.headers, accept: 'application/json' };
  for (const name of ['authorization', 'x-api-key', 'user-agent']) {
    const v = source.headers?.[name];
    if (v !== undefined) headers[name] = v;
  }
  if (req.body !== undefined) headers['content-type'] = 'application/json';
  const rawQueryString = new URLSearchParams(req.query).toString();
  const requestId = randomUUID();
  const routeKey = `${spec.op.method} ${spec.op.path}`;
  const pathParameters = Object.fromEntries(spec.pathParams.map((p) => [p, String(args[p] ?? '')]));
  return {
    version: '2.0',
    routeKey,
    rawPath: req.path,
    rawQueryString,
    headers,
    ...(rawQueryString ? { queryStringParameters: req.query } : {}),
    ...(spec.pathParams.length ? { pathParameters } : {}),
    // Marked as the MCP server's (viaOf), which no request from outside can be.
    requestContext: Object.assign(
      {
        ...source.requestContext,
        http: { ...source.requestContext.http, method: spec.op.method, path: req.path },
        requestId,
        routeKey,
        time: new Date().toISOString(),
        timeEpoch: Date.now(),
      },
      { authorizer: MCP_MARK },
    ),
    ...(req.body !== undefined ? { body: JSON.stringify(req.body) } : {}),
    isBase64Encoded: false,
  };
}

export async function callTool(
  name: string,
  args: Record<string, unknown>,
  source: HttpEvent,
): Promise<CallToolResult> {
  const spec = findTool(name);
  if (!spec) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
  let res: Awaited<ReturnType<typeof invokeOperation>>;
  let json: Record<string, unknown>;
  try {
    res = await invokeOperation(spec.op.id, operationEvent(spec, args, source));
    json = res.body ? (JSON.parse(res.body) as Record<string, unknown>) : {};
  } catch (err) {
    // A crashed operation: log it here, and tell the client nothing internal (as REST's 500s).
    logger.error('tool call failed', { tool: name, error: err as Error });
    throw new McpError(ErrorCode.InternalError, 'The operation failed; retry later.');
  }
  const text = res.body ?? '';
  const status = res.statusCode ?? 500;
  if (status >= 200 && status < 300) {
    // A post's version (its ETag), for the if_match argument of the writes that follow.
    const etag = res.headers?.etag;
    return {
      content: [{ type: 'text', text }],
      structuredContent: json,
      ...(typeof etag === 'string' ? { _meta: { etag } } : {}),
    };
  }
  return {
    isError: true,
    content: [
      {
        type: 'text',
        text: `${String(json.code ?? 'internal_error')}: ${String(json.detail ?? '')}\n${text}`,
      },
    ],
    structuredContent: json,
  };
}

/**
 * The SDK's server validates only elicitation answers with its JSON Schema validator, and Herald
 * never asks for elicitation. Without this the default would build an Ajv instance per request,
 * and the Lambda bundle leaves ajv out (lib/operations.ts, `mcp.bundleAliases`).
 */
export const noElicitation: jsonSchemaValidator = {
  getValidator: () => () => ({
    valid: false,
    data: undefined,
    errorMessage: 'Herald does not request elicitation.',
  }),
};

function buildServer({ auth, org }: McpCaller, source: HttpEvent): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: { listChanged: false } },
    jsonSchemaValidator: noElicitation,
    instructions:
      'Herald publishes social posts to connected channels. Typical flow: list_channels, then create_post (a draft, scheduled_at, or publish_now when offered), then get_post to follow delivery. Upload media with create_media_upload → PUT the bytes → complete_media_upload. Errors are tool errors whose text starts with the problem code.',
  });
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const tools = visibleTools(
      { scopes: auth.scopes, hasFeature: (f) => hasFeature(auth.plan, f) },
      org.settings.dangerous_ops === true,
    );
    return { tools };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request) =>
    callTool(request.params.name, request.params.arguments ?? {}, source),
  );
  return server;
}

/** One MCP HTTP exchange (POST only; the caller answers other methods). */
export async function handleMcp(event: HttpEvent, caller: McpCaller): Promise<HttpResult> {
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  const server = buildServer(caller, event);
  await server.connect(transport);
  try {
    const host = event.headers?.host ?? event.requestContext.domainName;
    const body = event.isBase64Encoded
      ? Buffer.from(event.body ?? '', 'base64').toString('utf8')
      : (event.body ?? '');
    const headers = new Headers();
    for (const [k, v] of Object.entries(event.headers ?? {})) if (v !== undefined) headers.set(k, v);
    const response = await transport.handleRequest(
      new Request(`https://${host}${event.rawPath}`, { method: 'POST', headers, body }),
    );
    const out: Record<string, string> = {};
    response.headers.forEach((v, k) => {
      out[k] = v;
    });
    return {
      statusCode: response.status,
      headers: { 'cache-control': 'no-store', ...out },
      body: await response.text(),
    };
  } finally {
    await server.close();
  }
}
