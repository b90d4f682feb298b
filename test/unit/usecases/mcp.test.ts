import { InvokeCommand, type InvokeCommandOutput, LambdaClient } from '@aws-sdk/client-lambda';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { handler } from '#handlers/mcp';
import { mcp, SCOPES } from '#lib/operations';
import { viaOf } from '#shared/envelope';
import { noElicitation, SERVER_INFO } from '#usecases/mcp';
import { clearAuthCache } from '#usecases/support/authenticate';
import {
  apiKey,
  apiKeyItem,
  fixedId,
  type Item,
  lambdaContext,
  MCP_TOOL_NAMES,
  ORG_ID,
  org,
  orgItem,
  problemOf,
  serveItems,
} from '../support/fixtures.ts';

// The MCP server (docs/api/mcp.md) through its real handler: POST only, Origin check, API-key auth
// with WWW-Authenticate, stateless Streamable HTTP with JSON responses, tools filtered per key and
// per workspace toggle, and tool calls run as the REST operation's own Lambda (mocked here).

// The operation functions the MCP server may invoke; getUsage is deliberately missing.
vi.hoisted(() => {
  vi.stubEnv(
    'HERALD_OPERATION_FUNCTIONS',
    JSON.stringify({
      getPost: 'herald-unit-getPost',
      listPosts: 'herald-unit-listPosts',
      createPost: 'herald-unit-createPost',
      publishPost: 'herald-unit-publishPost',
      deletePost: 'herald-unit-deletePost',
      reschedulePost: 'herald-unit-reschedulePost',
    }),
  );
});

const ddb = mockClient(DynamoDBDocumentClient);
const lambda = mockClient(LambdaClient);

const KEY = apiKey({ scopes: [...SCOPES], n: 1 });
const READER = apiKey({ scopes: ['posts:read'], n: 2 });
const FREE_ORG_ID = fixedId('org', 3);
const FREE_KEY = apiKey({ scopes: [...SCOPES], n: 3, orgId: FREE_ORG_ID });
const REVOKED = apiKey({ scopes: [...SCOPES], n: 4, revoked: true });
const UNKNOWN = apiKey({ scopes: [...SCOPES], n: 5 });
const POST_ID = fixedId('post', 7);

const SAFE_TOOLS = MCP_TOOL_NAMES.filter(
  (n) => !['publish_post', 'delete_post', 'unpublish_post', 'reply_to_inbox_item'].includes(n),
);

const ACCEPT = 'application/json, text/event-stream';

function table(dangerousOps: boolean): Item[] {
  return [
    apiKeyItem(KEY),
    apiKeyItem(READER),
    apiKeyItem(FREE_KEY),
    apiKeyItem(REVOKED),
    orgItem(org({ dangerous_ops: dangerousOps })),
    orgItem({ ...org({ dangerous_ops: dangerousOps }, FREE_ORG_ID), plan: 'free' }),
  ];
}

let seq = 0;

/** An HTTP API (payload v2) event for `/api/mcp`, as the front door's buildEvent makes it. */
function mcpEvent(
  opts: { method?: string; headers?: Record<string, string>; body?: string; base64?: boolean } = {},
): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries({ host: 'api.unit', ...opts.headers })) headers[k.toLowerCase()] = v;
  const body =
    opts.body === undefined ? undefined : opts.base64 ? Buffer.from(opts.body).toString('base64') : opts.body;
  const now = Date.now();
  seq += 1;
  return {
    version: '2.0',
    routeKey: `ANY ${mcp.path}`,
    rawPath: mcp.path,
    rawQueryString: '',
    headers,
    requestContext: {
      accountId: '000000000000',
      apiId: 'unit',
      domainName: 'api.unit',
      domainPrefix: 'api',
      http: {
        method: opts.method ?? 'POST',
        path: mcp.path,
        protocol: 'HTTP/1.1',
        sourceIp: '203.0.113.7',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: `req-mcp-${seq}`,
      routeKey: `ANY ${mcp.path}`,
      stage: '$default',
      time: new Date(now).toISOString(),
      timeEpoch: now,
    },
    ...(body !== undefined ? { body } : {}),
    isBase64Encoded: opts.base64 === true,
  };
}

const invoke = (event: APIGatewayProxyEventV2) =>
  handler(event, lambdaContext(mcp.id, event.requestContext.requestId));

/** One JSON-RPC message POSTed the way an MCP client does. */
function post(message: unknown, headers: Record<string, string> = {}) {
  return invoke(
    mcpEvent({
      headers: {
        'content-type': 'application/json',
        accept: ACCEPT,
        'user-agent': 'unit-agent/1.0',
        ...headers,
      },
      body: JSON.stringify(message),
    }),
  );
}

const auth = (key = KEY) => ({ authorization: `Bearer ${key.key}` });

interface RpcResponse<R> {
  jsonrpc: '2.0';
  id: number | null;
  result?: R;
  error?: { code: number; message: string };
}
const rpcOf = <R>(res: { body?: string | undefined }) => JSON.parse(res.body ?? '') as RpcResponse<R>;

const initialize = (version: string) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'unit', version: '1' } },
});

interface ListedTool {
  name: string;
  inputSchema: { type: string; properties: Record<string, unknown> };
  annotations: Record<string, unknown>;
}
async function listTools(key = KEY, id = 2): Promise<ListedTool[]> {
  const res = await post({ jsonrpc: '2.0', id, method: 'tools/list' }, auth(key));
  expect(res.statusCode).toBe(200);
  const rpc = rpcOf<{ tools: ListedTool[] }>(res);
  expect(rpc.error).toBeUndefined();
  return rpc.result?.tools ?? [];
}

interface ToolResult {
  content: Array<{ type: string; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}
const callTool = (name: string, args: Record<string, unknown>, headers: Record<string, string> = auth()) =>
  post({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: args } }, headers);

type Blob = NonNullable<InvokeCommandOutput['Payload']>;
const blob = (value: unknown) => Buffer.from(JSON.stringify(value)) as unknown as Blob;

/** The operation's Lambda answers with this API Gateway result. */
function restAnswers(statusCode: number, body: unknown, contentType = 'application/json; charset=utf-8') {
  lambda.on(InvokeCommand).resolves({
    StatusCode: 200,
    Payload: blob({
      statusCode,
      headers: { 'content-type': contentType, 'x-request-id': 'req-rest' },
      body: JSON.stringify(body),
    }),
  });
}

/** What the MCP server invoked: function names and the events they were given. */
function invocations() {
  return lambda.commandCalls(InvokeCommand).map((c) => ({
    fn: c.args[0].input.FunctionName,
    event: JSON.parse(
      Buffer.from(c.args[0].input.Payload as Uint8Array).toString('utf8'),
    ) as APIGatewayProxyEventV2,
  }));
}

function onlyInvocation() {
  const calls = invocations();
  expect(calls).toHaveLength(1);
  return calls[0] as (typeof calls)[number];
}

const POST_JSON = {
  id: POST_ID,
  status: 'draft',
  title: null,
  variants: [{ id: fixedId('variant', 1), channel_id: fixedId('channel', 1), body: 'Hello' }],
};

beforeEach(() => {
  ddb.reset();
  lambda.reset();
  clearAuthCache();
  serveItems(ddb, table(false));
});

afterEach(() => {
  vi.stubEnv('HERALD_MCP_ALLOWED_ORIGINS', undefined);
});

describe('HTTP: methods, Origin, authentication', () => {
  it.each(['GET', 'DELETE', 'PUT'])(
    'answers %s with 405 problem+json and Allow: POST, before auth',
    async (method) => {
      const res = await invoke(mcpEvent({ method, headers: { accept: 'text/event-stream', ...auth() } }));
      expect(res.statusCode).toBe(405);
      expect(res.headers).toMatchObject({ allow: 'POST', 'content-type': 'application/problem+json' });
      expect(problemOf(res)).toMatchObject({ status: 405, code: 'method_not_allowed' });
      expect(ddb.calls()).toHaveLength(0);
    },
  );

  it('answers a POST without a key with 401 and a bare Bearer challenge', async () => {
    const res = await post(initialize('2025-06-18'));
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="herald"');
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(problemOf(res)).toMatchObject({ status: 401, code: 'authentication_required' });
  });

  it.each([
    ['a malformed key', 'Bearer svc_live_nope'],
    ['an unknown key', `Bearer ${UNKNOWN.key}`],
    ['a revoked key', `Bearer ${REVOKED.key}`],
    ['another scheme', 'Basic Zm9vOmJhcg=='],
  ])('answers %s with 401 and error="invalid_token"', async (_what, authorization) => {
    const res = await post(initialize('2025-06-18'), { authorization });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="herald", error="invalid_token"');
    expect(problemOf(res).code).toBe('invalid_api_key');
    expect(lambda.calls()).toHaveLength(0);
  });

  it('accepts the key as x-api-key too', async () => {
    const res = await post(initialize('2025-06-18'), { 'x-api-key': KEY.key });
    expect(res.statusCode).toBe(200);
    expect(rpcOf<{ protocolVersion: string }>(res).result?.protocolVersion).toBe('2025-06-18');
  });

  it('refuses a browser Origin when none is configured, before reading any key', async () => {
    const res = await post(initialize('2025-06-18'), { ...auth(), origin: 'https://evil.example' });
    expect(res.statusCode).toBe(403);
    expect(problemOf(res)).toMatchObject({ status: 403, code: 'origin_not_allowed' });
    expect(problemOf(res).detail).toContain('https://evil.example');
    expect(ddb.calls()).toHaveLength(0);
  });

  it('accepts a listed Origin, refuses others, and reads the list on every request', async () => {
    vi.stubEnv('HERALD_MCP_ALLOWED_ORIGINS', 'https://app.example, https://claude.ai');
    const listed = await post(initialize('2025-06-18'), { ...auth(), origin: 'https://claude.ai' });
    expect(listed.statusCode).toBe(200);
    const other = await post(initialize('2025-06-18'), {
      ...auth(),
      origin: 'https://claude.ai.evil.example',
    });
    expect(other.statusCode).toBe(403);
    expect(problemOf(other).code).toBe('origin_not_allowed');

    vi.stubEnv('HERALD_MCP_ALLOWED_ORIGINS', 'https://app.example');
    const delisted = await post(initialize('2025-06-18'), { ...auth(), origin: 'https://claude.ai' });
    expect(delisted.statusCode).toBe(403);
  });

  it('lets requests without an Origin through (non-browser clients)', async () => {
    const res = await post(initialize('2025-06-18'), auth());
    expect(res.statusCode).toBe(200);
  });
});

describe('Streamable HTTP, stateless, JSON responses', () => {
  it.each(['2025-06-18', '2025-11-25'])('initializes with protocol version %s', async (version) => {
    const res = await post(initialize(version), auth());
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-request-id']).toBe(`req-mcp-${seq}`);
    expect(res.headers).not.toHaveProperty('mcp-session-id');
    const rpc = rpcOf<{
      protocolVersion: string;
      serverInfo: unknown;
      capabilities: Record<string, unknown>;
      instructions: string;
    }>(res);
    expect(rpc.id).toBe(1);
    expect(rpc.result?.protocolVersion).toBe(version);
    expect(rpc.result?.serverInfo).toEqual(SERVER_INFO);
    expect(rpc.result?.capabilities.tools).toEqual({ listChanged: false });
    expect(rpc.result?.instructions).toContain('create_post');
  });

  it('answers an unknown protocol version with its latest one', async () => {
    const res = await post(initialize('2099-01-01'), auth());
    expect(rpcOf<{ protocolVersion: string }>(res).result?.protocolVersion).toBe(LATEST_PROTOCOL_VERSION);
  });

  it('answers tools/list without a prior initialize (each request stands alone)', async () => {
    const tools = await listTools(KEY, 42);
    expect(tools.map((t) => t.name)).toEqual(SAFE_TOOLS);
  });

  it('accepts a notification with 202 and no body', async () => {
    const res = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, auth());
    expect(res.statusCode).toBe(202);
    expect(res.body).toBe('');
  });

  it('decodes a base64 body', async () => {
    const res = await invoke(
      mcpEvent({
        headers: { 'content-type': 'application/json', accept: ACCEPT, ...auth() },
        body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' }),
        base64: true,
      }),
    );
    expect(res.statusCode).toBe(200);
    expect(rpcOf<{ tools: unknown[] }>(res).result?.tools).toHaveLength(SAFE_TOOLS.length);
  });

  it('passes the client headers on: an Accept without text/event-stream is 406', async () => {
    const res = await post(initialize('2025-06-18'), { ...auth(), accept: 'application/json' });
    expect(res.statusCode).toBe(406);
    expect(rpcOf(res).error?.code).toBe(-32000);
  });

  it('passes the client headers on: a non-JSON content type is 415', async () => {
    const res = await post(initialize('2025-06-18'), { ...auth(), 'content-type': 'text/plain' });
    expect(res.statusCode).toBe(415);
  });

  it('refuses an unsupported MCP-Protocol-Version header with 400', async () => {
    const res = await post(
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { ...auth(), 'mcp-protocol-version': '1999-01-01' },
    );
    expect(res.statusCode).toBe(400);
    expect(rpcOf(res).error?.message).toContain('Unsupported protocol version');
  });

  it('answers malformed JSON with a JSON-RPC parse error', async () => {
    const res = await invoke(
      mcpEvent({
        headers: { 'content-type': 'application/json', accept: ACCEPT, ...auth() },
        body: '{"jsonrpc":',
      }),
    );
    expect(res.statusCode).toBe(400);
    expect(rpcOf(res).error?.code).toBe(-32700);
  });
});

describe('tools/list', () => {
  it('hides publish_post, delete_post, unpublish_post and publish_now while dangerous operations are off', async () => {
    const tools = await listTools();
    expect(tools.map((t) => t.name)).toEqual(SAFE_TOOLS);
    const create = tools.find((t) => t.name === 'create_post');
    expect(Object.keys(create?.inputSchema.properties ?? {})).toEqual([
      'variants',
      'title',
      'body',
      'draft',
      'scheduled_at',
      'idempotency_key',
    ]);
  });

  it('lists every tool, create_post with publish_now, once they are on', async () => {
    ddb.reset();
    serveItems(ddb, table(true));
    const tools = await listTools();
    expect(tools.map((t) => t.name)).toEqual(MCP_TOOL_NAMES);
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(Object.keys(byName.create_post?.inputSchema.properties ?? {})).toContain('publish_now');
    expect(byName.delete_post?.annotations).toMatchObject({ destructiveHint: true, idempotentHint: true });
    expect(byName.get_post?.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
  });

  it('reads the key and its org fresh on every request: the toggle current, no cache', async () => {
    expect((await listTools()).map((t) => t.name)).not.toContain('publish_post');
    ddb.reset();
    serveItems(ddb, table(true));
    expect((await listTools()).map((t) => t.name)).toContain('publish_post');
    // Protocol traffic passes no request gate: the key and the org were read again, consistently.
    const reads = ddb.commandCalls(GetCommand).map((c) => c.args[0].input);
    expect(reads).toEqual([
      expect.objectContaining({ Key: { pk: `APIKEY#${KEY.hash}`, sk: 'APIKEY' }, ConsistentRead: true }),
      expect.objectContaining({ Key: { pk: `ORG#${ORG_ID}`, sk: 'ORG' }, ConsistentRead: true }),
    ]);
  });

  it('refuses a key revoked since its last request at once (401), whatever the cache held', async () => {
    // Arrange: the key worked a moment ago.
    expect((await listTools()).length).toBeGreaterThan(0);
    ddb.reset();
    serveItems(
      ddb,
      table(true).map((i) =>
        i.pk === `APIKEY#${KEY.hash}` ? { ...i, revoked_at: '2030-01-02T00:00:00.000Z' } : i,
      ),
    );

    // Act
    const res = await post({ jsonrpc: '2.0', id: 3, method: 'tools/list' }, auth(KEY));

    // Assert
    expect(res.statusCode).toBe(401);
    expect(problemOf(res).code).toBe('invalid_api_key');
  });

  it("lists only the tools of the key's scopes", async () => {
    ddb.reset();
    serveItems(ddb, table(true));
    expect((await listTools(READER)).map((t) => t.name)).toEqual([
      'list_media',
      'get_media',
      'list_posts',
      'get_post',
    ]);
  });

  it('lists no webhook, inbox or AI tools on a plan without webhooks, the inbox and ai', async () => {
    ddb.reset();
    serveItems(ddb, table(true));
    const names = (await listTools(FREE_KEY)).map((t) => t.name);
    expect(names).toEqual(
      MCP_TOOL_NAMES.filter(
        (n) => !n.includes('webhook') && !n.includes('inbox') && n !== 'create_generation',
      ),
    );
  });
});

describe('tools/call', () => {
  it("invokes getPost's function with the event of GET /v1/posts/{id}", async () => {
    restAnswers(200, POST_JSON);
    const res = await callTool('get_post', { id: POST_ID });
    expect(res.statusCode).toBe(200);

    const { fn, event } = onlyInvocation();
    expect(fn).toBe('herald-unit-getPost');
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: 'GET /v1/posts/{id}',
      rawPath: `/v1/posts/${POST_ID}`,
      rawQueryString: '',
      pathParameters: { id: POST_ID },
      isBase64Encoded: false,
    });
    expect(event).not.toHaveProperty('body');
    expect(event).not.toHaveProperty('queryStringParameters');
    // Only the caller's credentials and user agent travel on; the MCP request's own headers do not.
    expect(event.headers).toEqual({
      accept: 'application/json',
      authorization: `Bearer ${KEY.key}`,
      'user-agent': 'unit-agent/1.0',
    });
    expect(event.requestContext).toMatchObject({
      routeKey: 'GET /v1/posts/{id}',
      http: { method: 'GET', path: `/v1/posts/${POST_ID}`, sourceIp: '203.0.113.7' },
      domainName: 'api.unit',
    });
    expect(event.requestContext.requestId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);
    expect(event.requestContext.requestId).not.toBe(`req-mcp-${seq}`);
    // Marked as the MCP server's: the operation records that it came through MCP.
    expect(viaOf(event)).toBe('mcp');
  });

  it('maps a 2xx REST answer to text and structuredContent', async () => {
    restAnswers(200, POST_JSON);
    const rpc = rpcOf<ToolResult>(await callTool('get_post', { id: POST_ID }));
    expect(rpc.id).toBe(7);
    expect(rpc.result).toEqual({
      content: [{ type: 'text', text: JSON.stringify(POST_JSON) }],
      structuredContent: POST_JSON,
    });
  });

  it("carries the post's ETag in _meta, and sends if_match as the If-Match header", async () => {
    lambda.on(InvokeCommand).resolves({
      StatusCode: 200,
      Payload: blob({
        statusCode: 200,
        headers: { 'content-type': 'application/json; charset=utf-8', etag: '"7"' },
        body: JSON.stringify(POST_JSON),
      }),
    });
    const read = rpcOf<ToolResult & { _meta?: unknown }>(await callTool('get_post', { id: POST_ID }));
    expect(read.result?._meta).toEqual({ etag: '"7"' });

    await callTool('reschedule_post', { id: POST_ID, scheduled_at: '2030-01-02T09:00:00Z', if_match: '"7"' });
    const last = invocations().at(-1);
    expect(last?.fn).toBe('herald-unit-reschedulePost');
    expect(last?.event.headers).toMatchObject({ 'if-match': '"7"' });
    expect(JSON.parse(last?.event.body ?? '')).toEqual({ scheduled_at: '2030-01-02T09:00:00Z' });
  });

  it('sends list_posts arguments as the query string', async () => {
    restAnswers(200, { data: [], has_more: false, next_cursor: null });
    await callTool('list_posts', { limit: 10, status: 'scheduled' });
    const { fn, event } = onlyInvocation();
    expect(fn).toBe('herald-unit-listPosts');
    expect(event).toMatchObject({
      routeKey: 'GET /v1/posts',
      rawPath: '/v1/posts',
      rawQueryString: 'limit=10&status=scheduled',
      queryStringParameters: { limit: '10', status: 'scheduled' },
    });
    expect(event).not.toHaveProperty('pathParameters');
  });

  it('sends create_post arguments as the JSON body and idempotency_key as the header', async () => {
    const variants = [{ channel_id: fixedId('channel', 1), body: 'Hello' }];
    restAnswers(201, POST_JSON);
    const rpc = rpcOf<ToolResult>(
      await callTool('create_post', { variants, draft: true, idempotency_key: 'idem-1' }),
    );
    expect(rpc.result?.isError).toBeUndefined();
    expect(rpc.result?.structuredContent).toEqual(POST_JSON);

    const { fn, event } = onlyInvocation();
    expect(fn).toBe('herald-unit-createPost');
    expect(event).toMatchObject({ routeKey: 'POST /v1/posts', rawPath: '/v1/posts', rawQueryString: '' });
    expect(JSON.parse(event.body ?? '')).toEqual({ variants, draft: true });
    expect(event.headers).toEqual({
      accept: 'application/json',
      authorization: `Bearer ${KEY.key}`,
      'user-agent': 'unit-agent/1.0',
      'content-type': 'application/json',
      'idempotency-key': 'idem-1',
    });
    expect(event.requestContext.http.method).toBe('POST');
  });

  it('sends reschedule_post as PATCH with the id in the path and the rest in the body', async () => {
    restAnswers(200, POST_JSON);
    await callTool('reschedule_post', { id: POST_ID, scheduled_at: '2030-01-01T09:00:00Z' });
    const { fn, event } = onlyInvocation();
    expect(fn).toBe('herald-unit-reschedulePost');
    expect(event).toMatchObject({
      routeKey: 'PATCH /v1/posts/{id}',
      rawPath: `/v1/posts/${POST_ID}`,
      pathParameters: { id: POST_ID },
      body: JSON.stringify({ scheduled_at: '2030-01-01T09:00:00Z' }),
    });
  });

  it('forwards x-api-key when that is how the client authenticated', async () => {
    restAnswers(200, POST_JSON);
    await callTool('get_post', { id: POST_ID }, { 'x-api-key': KEY.key });
    const { event } = onlyInvocation();
    expect(event.headers['x-api-key']).toBe(KEY.key);
    expect(event.headers).not.toHaveProperty('authorization');
  });

  it('maps a problem answer to a tool error whose text starts with the problem code', async () => {
    const problem = {
      type: 'https://docs.example/problems/insufficient_scope',
      title: 'Insufficient scope',
      status: 403,
      code: 'insufficient_scope',
      detail: 'This API key lacks the posts:write scope.',
      request_id: 'req-rest',
    };
    restAnswers(403, problem, 'application/problem+json');
    const res = await callTool('create_post', { variants: [], draft: true }, auth(READER));
    expect(res.statusCode).toBe(200);
    const rpc = rpcOf<ToolResult>(res);
    expect(rpc.error).toBeUndefined();
    expect(rpc.result?.isError).toBe(true);
    expect(rpc.result?.content).toHaveLength(1);
    expect(rpc.result?.content[0]?.type).toBe('text');
    expect(rpc.result?.content[0]?.text).toBe(
      `insufficient_scope: This API key lacks the posts:write scope.\n${JSON.stringify(problem)}`,
    );
    expect(rpc.result?.structuredContent).toEqual(problem);
    // The REST function decides: the MCP server forwarded the reader's own key.
    expect(onlyInvocation().event.headers.authorization).toBe(`Bearer ${READER.key}`);
  });

  it('forwards a hidden dangerous tool to its function, which refuses it while the toggle is off', async () => {
    restAnswers(403, {
      status: 403,
      code: 'dangerous_ops_disabled',
      detail: 'Dangerous AI operations are turned off for this workspace.',
    });
    const rpc = rpcOf<ToolResult>(await callTool('publish_post', { id: POST_ID }));
    expect(rpc.result?.isError).toBe(true);
    expect(rpc.result?.content[0]?.text.startsWith('dangerous_ops_disabled: ')).toBe(true);
    const { fn, event } = onlyInvocation();
    expect(fn).toBe('herald-unit-publishPost');
    expect(event).toMatchObject({
      routeKey: 'POST /v1/posts/{id}/publish',
      rawPath: `/v1/posts/${POST_ID}/publish`,
    });
    expect(event).not.toHaveProperty('body');
    expect(event.headers).not.toHaveProperty('content-type');
  });

  it('answers an unknown tool with a JSON-RPC error and invokes nothing', async () => {
    const res = await callTool('drop_tables', {});
    expect(res.statusCode).toBe(200);
    const rpc = rpcOf<ToolResult>(res);
    expect(rpc.result).toBeUndefined();
    expect(rpc.error?.code).toBe(-32602);
    expect(rpc.error?.message).toContain('Unknown tool: drop_tables');
    expect(lambda.calls()).toHaveLength(0);
  });

  it('answers a crashed operation function with a JSON-RPC error, not a result', async () => {
    lambda.on(InvokeCommand).resolves({
      StatusCode: 200,
      FunctionError: 'Unhandled',
      Payload: blob({ errorType: 'Error', errorMessage: 'boom', trace: ['Error: boom', '    at x'] }),
    });
    const res = await callTool('get_post', { id: POST_ID });
    expect(res.statusCode).toBe(200);
    const rpc = rpcOf<ToolResult>(res);
    expect(rpc.result).toBeUndefined();
    expect(rpc.id).toBe(7);
    expect(rpc.error?.code).toBe(-32603);
    // Nothing of the crash reaches the client.
    expect(rpc.error?.message).toBe('MCP error -32603: The operation failed; retry later.');
    expect(JSON.stringify(rpc)).not.toContain('boom');
  });

  it('answers a failed Lambda invocation with a JSON-RPC error', async () => {
    lambda.on(InvokeCommand).rejects(new Error('Rate exceeded'));
    const rpc = rpcOf<ToolResult>(await callTool('get_post', { id: POST_ID }));
    expect(rpc.result).toBeUndefined();
    expect(rpc.error?.code).toBe(-32603);
    expect(JSON.stringify(rpc)).not.toContain('Rate exceeded');
  });

  it('answers a tool whose operation has no function with a JSON-RPC error', async () => {
    const rpc = rpcOf<ToolResult>(await callTool('get_usage', {}));
    expect(rpc.result).toBeUndefined();
    expect(rpc.error?.code).toBe(-32603);
    expect(lambda.calls()).toHaveLength(0);
  });
});

describe('bundle-sized choices', () => {
  it('refuses elicitation answers: Herald never elicits, and ajv is not in the Lambda bundle', () => {
    const validate = noElicitation.getValidator({ type: 'object' });
    expect(validate({})).toEqual({
      valid: false,
      data: undefined,
      errorMessage: 'Herald does not request elicitation.',
    });
  });

  it('the ajv stand-in of the bundle fails loudly if anything ever calls it', async () => {
    const { default: notBundled } = await import('#shared/not-bundled');
    expect(() => notBundled()).toThrow(/not part of the Lambda bundle/);
  });
});
