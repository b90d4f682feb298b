import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import { MCP_TOOL_NAMES } from '../unit/support/fixtures.ts';
import {
  ALL_SCOPES,
  baseUrl,
  dangerous,
  mcpClient,
  mint,
  type Workspace,
  waitForPost,
  workspace,
} from './helpers.ts';

// The MCP server (issue 7) driven by the SDK's own Client and StreamableHTTPClientTransport against
// the local stack: the same keys, scopes, metering and dangerous-operations toggle as REST.

type Json = Record<string, unknown>;

const structured = (r: Awaited<ReturnType<Client['callTool']>>) => r.structuredContent as Json;
const names = async (c: Client) => (await c.listTools()).tools.map((t) => t.name);

const rpc = (body: Json, headers: Record<string, string> = {}) =>
  fetch(`${baseUrl()}/api/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
  });

const initialize = (version: string) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

// Each test has its own workspace and client, so they run concurrently.
describe.concurrent('MCP server at /api/mcp', { timeout: 90_000 }, () => {
  it('answers 401 with WWW-Authenticate without a valid key, 405 to GET, 403 to a foreign Origin', async () => {
    const none = await rpc(initialize('2025-06-18'));
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="herald"');
    expect(((await none.json()) as Json).code).toBe('authentication_required');
    const bad = await rpc(initialize('2025-06-18'), { authorization: 'Bearer svc_live_nope' });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toContain('error="invalid_token"');
    const get = await fetch(`${baseUrl()}/api/mcp`, { headers: { accept: 'text/event-stream' } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const ws = await workspace([]);
    const foreign = await rpc(initialize('2025-06-18'), {
      authorization: `Bearer ${ws.key}`,
      origin: 'https://evil.example',
    });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as Json).code).toBe('origin_not_allowed');
  });

  it.each(['2025-06-18', '2025-11-25'])(
    'initializes statelessly with protocol version %s',
    async (version) => {
      const ws = await workspace([]);
      const res = await rpc(initialize(version), { authorization: `Bearer ${ws.key}` });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('application/json');
      expect(res.headers.get('mcp-session-id')).toBeNull();
      const body = (await res.json()) as {
        result: { protocolVersion: string; serverInfo: Json; capabilities: Json };
      };
      expect(body.result.protocolVersion).toBe(version);
      expect(body.result.serverInfo).toMatchObject({ name: 'herald' });
      expect(body.result.capabilities).toHaveProperty('tools');
    },
  );

  it('lists one tool per operation; publish/delete appear only once dangerous operations are on', async () => {
    const ws = await workspace(['bluesky']);
    // Every scope, the inbox's and AI generation's included.
    const client = await mcpClient(await mint(ws, `${ALL_SCOPES},inbox:read,inbox:write,ai:generate`));
    const off = await client.listTools();
    const offNames = off.tools.map((t) => t.name);
    expect(offNames).not.toContain('publish_post');
    expect(offNames).not.toContain('delete_post');
    expect(offNames).not.toContain('unpublish_post');
    const create = off.tools.find((t) => t.name === 'create_post');
    expect(Object.keys(create?.inputSchema.properties ?? {})).not.toContain('publish_now');
    expect(Object.keys(create?.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining(['variants', 'draft', 'scheduled_at', 'idempotency_key']),
    );
    // Refused if called anyway.
    const refused = await client.callTool({
      name: 'publish_post',
      arguments: { id: 'post_01JD0000000000000000000000' },
    });
    expect(refused.isError).toBe(true);
    expect(structured(refused).code).toBe('dangerous_ops_disabled');

    await dangerous(ws, true);
    const on = await client.listTools();
    expect(on.tools.map((t) => t.name).sort()).toEqual([...MCP_TOOL_NAMES].sort());
    const tools = Object.fromEntries(on.tools.map((t) => [t.name, t]));
    expect(Object.keys(tools.create_post?.inputSchema.properties ?? {})).toContain('publish_now');
    expect(tools.get_post?.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    expect(tools.delete_post?.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
    });
    expect(tools.publish_post?.annotations).toMatchObject({ destructiveHint: true, openWorldHint: true });
    expect(tools.unpublish_post?.annotations).toMatchObject({ destructiveHint: true, openWorldHint: true });
    expect(tools.get_post?.inputSchema).toMatchObject({ type: 'object', required: ['id'] });
    for (const t of on.tools) expect(t.description?.length ?? 0).toBeGreaterThan(60);
  });

  it('creates a draft, lists it, publishes it and reads usage; each tool call is one api_request', async () => {
    const ws: Workspace = await workspace(['bluesky']);
    await dangerous(ws, true);
    const client = await mcpClient(ws.key);
    const draft = await client.callTool({
      name: 'create_post',
      arguments: { variants: [{ channel_id: ws.channels.bluesky, body: `mcp ${Date.now()}` }], draft: true },
    });
    expect(draft.isError).toBeFalsy();
    const post = structured(draft) as { id: string; status: string };
    expect(post.status).toBe('draft');
    expect(JSON.parse((draft.content as Array<{ text: string }>)[0]?.text ?? '{}')).toEqual(post);

    const list = await client.callTool({ name: 'list_posts', arguments: { status: 'draft', limit: 5 } });
    expect((structured(list).data as Json[]).map((p) => p.id)).toContain(post.id);

    const published = await client.callTool({ name: 'publish_post', arguments: { id: post.id } });
    expect(structured(published)).toEqual({ id: post.id, status: 'publishing' });
    await waitForPost(ws.key, post.id, (p) => p.status === 'published');

    const meter = async () => {
      const usage = structured(await client.callTool({ name: 'get_usage', arguments: {} }));
      const meters = usage.meters as Array<{ key: string; used: number }>;
      return meters.find((m) => m.key === 'api_requests')?.used ?? -1;
    };
    const first = await meter();
    await client.listTools(); // protocol traffic is not an API request
    expect(await meter()).toBe(first + 1);
  });

  it('enforces scopes: a read-only key sees no write tools and cannot call them', async () => {
    const ws = await workspace(['bluesky']);
    const readOnly = await mint(ws, 'posts:read,channels:read,inbox:read');
    const client = await mcpClient(readOnly);
    const visible = await names(client);
    expect(visible.sort()).toEqual([
      'get_channel',
      'get_channel_options',
      'get_inbox_item',
      'get_media',
      'get_post',
      'list_channels',
      'list_inbox',
      'list_media',
      'list_posts',
    ]);
    const write = await client.callTool({
      name: 'create_post',
      arguments: { variants: [{ channel_id: ws.channels.bluesky, body: 'nope' }], draft: true },
    });
    expect(write.isError).toBe(true);
    expect(structured(write).code).toBe('insufficient_scope');
    expect((write.content as Array<{ text: string }>)[0]?.text).toMatch(/^insufficient_scope: /);
    const channels = await client.callTool({ name: 'list_channels', arguments: {} });
    expect((structured(channels).data as Json[])[0]).toMatchObject({ platform: 'bluesky' });
  });

  it('returns validation problems as tool errors with their field pointers', async () => {
    const ws = await workspace(['bluesky']);
    const client = await mcpClient(ws.key);
    const res = await client.callTool({ name: 'create_post', arguments: { variants: 'nope', draft: true } });
    expect(res.isError).toBe(true);
    expect(structured(res)).toMatchObject({
      code: 'validation_failed',
      errors: [expect.objectContaining({ pointer: '/variants' })],
    });
    const unknown = await client.callTool({
      name: 'get_post',
      arguments: { id: 'post_01JD0000000000000000000000' },
    });
    expect(structured(unknown).code).toBe('resource_not_found');
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/Unknown tool/);
  });

  it('gates plan features per key: the free plan sees no webhook tools', async () => {
    const ws = await workspace([], 'free');
    const client = await mcpClient(ws.key);
    const visible = await names(client);
    expect(visible.filter((n) => n.includes('webhook'))).toEqual([]);
    expect(visible).toContain('get_usage');
  });
});
