import { describe, expect, it } from 'vitest';
import { POST_STATUSES } from '#core/constants';
import { contracts, type OperationId } from '#core/contracts';
import { EVENT_TYPES } from '#core/webhooks';
import { apiOperations, type Feature, SCOPES, type Scope } from '#lib/operations';
import {
  allTools,
  findTool,
  IDEMPOTENCY_ARG,
  PUBLISH_NOW,
  type ToolSpec,
  toRequest,
  visibleTools,
} from '#usecases/mcp-tools';
import { MCP_TOOL_NAMES } from '../support/fixtures.ts';

// The MCP tools (docs/api/mcp.md): one per API operation, generated from the manifest and the zod
// contracts, filtered per key, and turned back into the REST request they stand for.

type Json = Record<string, unknown>;
type Schema = Json & { properties: Record<string, Json>; required?: string[] };

const WEBHOOK_TOOLS = MCP_TOOL_NAMES.filter((n) => n.includes('webhook'));

/** The hints of every tool that writes (GET tools follow one rule). */
const WRITE_HINTS: Array<[string, { destructive: boolean; idempotent: boolean; openWorld: boolean }]> = [
  ['create_media_upload', { destructive: false, idempotent: false, openWorld: false }],
  ['complete_media_upload', { destructive: false, idempotent: false, openWorld: false }],
  // Fetches a URL outside Herald; each call imports anew.
  ['import_media', { destructive: false, idempotent: false, openWorld: true }],
  ['delete_media', { destructive: true, idempotent: true, openWorld: false }],
  ['create_post', { destructive: false, idempotent: true, openWorld: true }],
  ['reschedule_post', { destructive: false, idempotent: true, openWorld: false }],
  ['delete_post', { destructive: true, idempotent: true, openWorld: false }],
  ['publish_post', { destructive: true, idempotent: false, openWorld: true }],
  ['update_post', { destructive: false, idempotent: true, openWorld: false }],
  ['unpublish_post', { destructive: true, idempotent: false, openWorld: true }],
  // Posts on the platform; with its idempotency_key, once.
  ['reply_to_inbox_item', { destructive: false, idempotent: true, openWorld: true }],
  // Asks the deployment's model; an Idempotency-Key makes a retry answer the first result.
  ['create_generation', { destructive: false, idempotent: true, openWorld: true }],
  ['create_webhook_endpoint', { destructive: false, idempotent: false, openWorld: false }],
  ['update_webhook_endpoint', { destructive: false, idempotent: true, openWorld: false }],
  ['delete_webhook_endpoint', { destructive: true, idempotent: true, openWorld: false }],
  ['test_webhook_endpoint', { destructive: false, idempotent: false, openWorld: true }],
  ['rotate_webhook_secret', { destructive: true, idempotent: false, openWorld: false }],
  ['create_channel_connection', { destructive: false, idempotent: false, openWorld: true }],
  ['select_channel_account', { destructive: false, idempotent: false, openWorld: false }],
  ['disconnect_channel', { destructive: true, idempotent: true, openWorld: true }],
  // A status: setting it again changes nothing.
  ['update_inbox_item', { destructive: false, idempotent: true, openWorld: false }],
];

function spec(name: string): ToolSpec {
  const found = findTool(name);
  if (!found) throw new Error(`no tool ${name}`);
  return found;
}
/** A tool's input schema, with its properties checked to be there. */
function schemaIn(tool: ToolSpec['tool']): Schema {
  expect(typeof tool.inputSchema.properties).toBe('object');
  return tool.inputSchema as unknown as Schema;
}
const schemaOf = (name: string) => schemaIn(spec(name).tool);
const allScopes: ReadonlySet<Scope> = new Set(SCOPES);
const everyFeature = (_f: Feature) => true;
const names = (tools: Array<{ name: string }>) => tools.map((t) => t.name);

function toolIn(tools: Array<ToolSpec['tool']>, name: string): ToolSpec['tool'] {
  const found = tools.find((t) => t.name === name);
  if (!found) throw new Error(`${name} is not listed`);
  return found;
}

describe('allTools', () => {
  it('has exactly one tool per API operation, in manifest order, with snake_case names', () => {
    const tools = allTools();
    expect(names(tools.map((t) => t.tool))).toEqual(MCP_TOOL_NAMES);
    expect(tools.map((t) => t.op.id)).toEqual(apiOperations.map((op) => op.id));
    expect(tools).toHaveLength(apiOperations.length);
    for (const t of tools) {
      expect(t.name).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(t.tool.name).toBe(t.name);
    }
  });

  it('builds the tools once per container', () => {
    expect(allTools()).toBe(allTools());
  });

  it.each([
    ['create_post', 'createPost'],
    ['list_webhook_deliveries', 'listWebhookDeliveries'],
    ['get_post', 'getPost'],
  ])('finds %s as the tool of %s', (name, opId) => {
    expect(findTool(name)?.op.id).toBe(opId);
  });

  it('knows no tool by an operation id or an unknown name', () => {
    expect(findTool('createPost')).toBeUndefined();
    expect(findTool('get_open_api')).toBeUndefined();
  });

  it('offers no tool for operations served without an API key', () => {
    expect(findTool('get_openapi')).toBeUndefined();
    expect(allTools().every((t) => t.op.scope !== null)).toBe(true);
  });
});

describe('input schemas', () => {
  it.each(MCP_TOOL_NAMES)('%s takes a closed JSON Schema object with no $ref at the root', (name) => {
    const schema = schemaOf(name);
    expect(schema.type).toBe('object');
    expect(schema.additionalProperties).toBe(false);
    expect(schema).not.toHaveProperty('$ref');
    expect(schema).not.toHaveProperty('$schema');
    expect(typeof schema.properties).toBe('object');
    for (const r of schema.required ?? []) expect(Object.keys(schema.properties)).toContain(r);
    expect(JSON.stringify(schema)).not.toContain('"$ref"');
  });

  it('makes path parameters required strings', () => {
    const withParams = allTools().filter((t) => t.op.path.includes('{'));
    expect(withParams.map((t) => t.name)).toEqual([
      'complete_media_upload',
      'get_media',
      'delete_media',
      'get_post',
      'reschedule_post',
      'delete_post',
      'publish_post',
      'update_post',
      'unpublish_post',
      'reply_to_inbox_item',
      'update_webhook_endpoint',
      'delete_webhook_endpoint',
      'test_webhook_endpoint',
      'rotate_webhook_secret',
      'list_webhook_deliveries',
      'get_channel_connection',
      'select_channel_account',
      'disconnect_channel',
      'get_channel',
      'get_channel_options',
      'get_inbox_item',
      'update_inbox_item',
    ]);
    for (const t of withParams) {
      expect(t.pathParams).toEqual(['id']);
      const schema = schemaIn(t.tool);
      expect(schema.properties.id).toMatchObject({ type: 'string' });
      expect(schema.required).toContain('id');
    }
    expect(schemaOf('get_post')).toEqual({
      type: 'object',
      properties: { id: { type: 'string', description: 'The post id.' } },
      required: ['id'],
      additionalProperties: false,
    });
  });

  it('takes no arguments where the operation has none', () => {
    for (const name of ['list_channels', 'get_analytics', 'get_usage']) {
      expect(schemaOf(name)).toEqual({ type: 'object', properties: {}, additionalProperties: false });
    }
  });

  it.each(['list_media', 'list_webhook_endpoints', 'list_webhook_deliveries'])(
    '%s pages like every list: limit and after',
    (name) => {
      const schema = schemaOf(name);
      expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['limit', 'after']));
      expect(spec(name).queryFields).toEqual(['limit', 'after']);
      expect(schema.properties.limit).toEqual({ type: 'integer', minimum: 1, maximum: 100 });
    },
  );

  it("merges list_posts' query fields", () => {
    const schema = schemaOf('list_posts');
    expect(Object.keys(schema.properties)).toEqual(['limit', 'after', 'status']);
    expect(spec('list_posts').queryFields).toEqual(['limit', 'after', 'status']);
    expect(spec('list_posts').hasBody).toBe(false);
    expect(schema.properties.limit).toEqual({ type: 'integer', minimum: 1, maximum: 100 });
    expect(schema.required).toBeUndefined();
  });

  it("merges create_post's body fields and the Idempotency-Key argument", () => {
    const schema = schemaOf('create_post');
    expect(Object.keys(schema.properties)).toEqual([
      'variants',
      'title',
      'body',
      'draft',
      'scheduled_at',
      'publish_now',
      'idempotency_key',
    ]);
    expect(schema.required).toEqual(['variants']);
    expect(spec('create_post').hasBody).toBe(true);
    expect(spec('create_post').queryFields).toEqual([]);
    expect(schema.properties[IDEMPOTENCY_ARG]).toMatchObject({
      type: 'string',
      minLength: 1,
      maxLength: 255,
    });
    expect(schema.properties.variants).toMatchObject({
      type: 'array',
      items: { type: 'object', required: ['channel_id', 'body'], additionalProperties: false },
    });
  });

  it('offers idempotency_key only where the operation reads an Idempotency-Key', () => {
    const withKey = allTools().filter((t) => IDEMPOTENCY_ARG in (t.tool.inputSchema.properties as Json));
    expect(withKey.map((t) => t.name)).toEqual(['create_post', 'reply_to_inbox_item', 'create_generation']);
  });

  it('merges path parameters with required body fields (reschedule_post)', () => {
    expect(schemaOf('reschedule_post')).toEqual({
      type: 'object',
      properties: {
        id: { type: 'string', description: 'The post id.' },
        scheduled_at: { type: 'string', format: 'date-time' },
        if_match: expect.objectContaining({ type: 'string', minLength: 1, maxLength: 1024 }),
      },
      required: ['id', 'scheduled_at'],
      additionalProperties: false,
    });
  });

  it('describes date-times with format date-time and without the regex zod would add', () => {
    const scheduled = schemaOf('create_post').properties.scheduled_at as { anyOf: Json[] };
    expect(scheduled.anyOf).toEqual([{ type: 'string', format: 'date-time' }, { type: 'null' }]);
    // No date-time carries it; a pattern stays where it is the rule (list_inbox's id filters).
    const patterned: Json[] = [];
    const walk = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object') {
        if ('pattern' in v) patterned.push(v as Json);
        Object.values(v).forEach(walk);
      }
    };
    walk(allTools().map((t) => t.tool.inputSchema));
    expect(patterned.filter((p) => p.format === 'date-time')).toEqual([]);
    expect(patterned.map((p) => p.pattern)).toEqual([
      '^ch_[0-9A-HJKMNP-TV-Z]{26}$',
      '^post_[0-9A-HJKMNP-TV-Z]{26}$',
    ]);
  });

  it("derives list_posts' status from the post statuses", () => {
    expect(schemaOf('list_posts').properties.status).toEqual({ type: 'string', enum: [...POST_STATUSES] });
  });

  it.each(['create_webhook_endpoint', 'update_webhook_endpoint'])(
    "derives %s's event_types from the webhook event types",
    (name) => {
      const eventTypes = schemaOf(name).properties.event_types as { items: { enum: string[] } };
      expect(eventTypes).toMatchObject({ type: 'array', minItems: 1, maxItems: EVENT_TYPES.length });
      expect(eventTypes.items.enum).toEqual([...EVENT_TYPES]);
    },
  );

  it('requires url and event_types to create a webhook endpoint, only the id to update one', () => {
    expect(schemaOf('create_webhook_endpoint').required).toEqual(['url', 'event_types']);
    expect(schemaOf('update_webhook_endpoint').required).toEqual(['id']);
  });
});

const readsOnly = (t: ToolSpec) => t.op.method === 'GET' || t.name === 'validate_post';

describe('annotations', () => {
  it.each(allTools().filter(readsOnly))(
    '$name (GET, or validate_post) is read-only, not destructive, idempotent',
    (t) => {
      expect(t.tool.annotations).toEqual({
        title: t.op.summary,
        readOnlyHint: true,
        destructiveHint: false,
        idempotentHint: true,
        // get_channel_options reads its choices from the channel's platform.
        openWorldHint: t.name === 'get_channel_options',
      });
    },
  );

  it.each(WRITE_HINTS)('%s writes: %o', (name, hints) => {
    expect(spec(name).tool.annotations).toEqual({
      title: spec(name).op.summary,
      readOnlyHint: false,
      destructiveHint: hints.destructive,
      idempotentHint: hints.idempotent,
      openWorldHint: hints.openWorld,
    });
  });

  it('covers every tool with the GET rule or the table above', () => {
    const gets = allTools()
      .filter(readsOnly)
      .map((t) => t.name);
    expect([...gets, ...WRITE_HINTS.map(([n]) => n)].sort()).toEqual([...MCP_TOOL_NAMES].sort());
  });

  it('marks exactly publish_post, delete_post, unpublish_post and reply_to_inbox_item as needing the dangerous-operations toggle', () => {
    expect(
      allTools()
        .filter((t) => t.dangerous)
        .map((t) => t.name),
    ).toEqual(['delete_post', 'publish_post', 'unpublish_post', 'reply_to_inbox_item']);
  });
});

describe('descriptions', () => {
  it.each(allTools())('$name explains itself, its scope and its errors', (t) => {
    const d = t.tool.description;
    expect(d.length).toBeGreaterThan(60);
    expect(d.startsWith(`${t.op.summary}. `)).toBe(true);
    expect(d).toContain(contracts[t.op.id as OperationId].description);
    expect(d).toContain(`Needs the ${t.op.scope} scope`);
    expect(d).toContain('starts with the problem code');
    expect(t.tool.title).toBe(t.op.summary);
  });

  it('names the plan feature a tool needs', () => {
    for (const name of WEBHOOK_TOOLS) expect(spec(name).tool.description).toContain('a plan with webhooks');
    expect(spec('get_analytics').tool.description).toContain(
      'Needs the analytics:read scope and a plan with analytics',
    );
    expect(spec('get_usage').tool.description).not.toContain('a plan with');
  });

  it("carries the body's own description as the arguments' explanation", () => {
    expect(spec('create_post').tool.description).toContain(
      'Arguments: Exactly one mode: draft: true, scheduled_at (a future time) or publish_now: true',
    );
    expect(spec('get_post').tool.description).not.toContain('Arguments:');
  });
});

describe('visibleTools', () => {
  const visible = (
    scopes: Scope[] | ReadonlySet<Scope>,
    dangerous: boolean,
    hasFeature: (f: Feature) => boolean = everyFeature,
  ) => visibleTools({ scopes: scopes instanceof Set ? scopes : new Set(scopes), hasFeature }, dangerous);

  it('shows every tool to a key with every scope and plan feature once dangerous operations are on', () => {
    expect(names(visible(allScopes, true))).toEqual(MCP_TOOL_NAMES);
  });

  it('filters by the key scopes', () => {
    expect(names(visible(['posts:read'], true))).toEqual([
      'list_media',
      'get_media',
      'list_posts',
      'get_post',
    ]);
    expect(names(visible(['posts:write'], false))).toEqual([
      'create_media_upload',
      'complete_media_upload',
      'import_media',
      'delete_media',
      'create_post',
      'reschedule_post',
      'update_post',
      'validate_post',
    ]);
    expect(names(visible(['webhooks:read', 'channels:read'], true))).toEqual([
      'list_channels',
      'list_webhook_endpoints',
      'list_webhook_deliveries',
      'get_channel',
      'get_channel_options',
    ]);
    expect(visible([], true)).toEqual([]);
  });

  it("hides the 7 webhook tools when the plan lacks 'webhooks'", () => {
    const asked: Feature[] = [];
    const tools = visible(allScopes, true, (f) => {
      asked.push(f);
      return f !== 'webhooks';
    });
    expect(WEBHOOK_TOOLS).toHaveLength(7);
    expect(names(tools)).toEqual(MCP_TOOL_NAMES.filter((n) => !WEBHOOK_TOOLS.includes(n)));
    expect(new Set(asked)).toEqual(new Set(['webhooks', 'analytics', 'inbox', 'ai']));
  });

  it("hides get_analytics, not get_usage, when the plan lacks 'analytics'", () => {
    const shown = names(visible(allScopes, true, (f) => f !== 'analytics'));
    expect(shown).not.toContain('get_analytics');
    expect(shown).toContain('get_usage');
    expect(shown).toHaveLength(MCP_TOOL_NAMES.length - 1);
  });

  it('hides publish_post, delete_post, unpublish_post and reply_to_inbox_item, and publish_now from create_post, while the toggle is off', () => {
    const tools = visible(allScopes, false);
    expect(names(tools)).toEqual(
      MCP_TOOL_NAMES.filter(
        (n) => !['publish_post', 'delete_post', 'unpublish_post', 'reply_to_inbox_item'].includes(n),
      ),
    );
    const create = toolIn(tools, 'create_post');
    const schema = schemaIn(create);
    expect(Object.keys(schema.properties)).toEqual([
      'variants',
      'title',
      'body',
      'draft',
      'scheduled_at',
      'idempotency_key',
    ]);
    expect(schema.required).toEqual(['variants']);
    expect(schema.additionalProperties).toBe(false);
    expect(create.annotations).toEqual(spec('create_post').tool.annotations);
    expect(create.description).toBe(spec('create_post').tool.description);
  });

  it('shows them, with publish_now, while the toggle is on', () => {
    const tools = visible(allScopes, true);
    expect(names(tools)).toContain('publish_post');
    expect(names(tools)).toContain('delete_post');
    const create = schemaIn(toolIn(tools, 'create_post'));
    expect(create.properties[PUBLISH_NOW]).toEqual({ type: 'boolean' });
  });

  it.each([
    ['off, on, off', [false, true, false]],
    ['on, off, on', [true, false, true]],
  ])('does not alter the cached tools (%s)', (_order, toggles) => {
    for (const on of toggles) {
      const create = toolIn(visible(['posts:write'], on), 'create_post');
      expect(PUBLISH_NOW in schemaIn(create).properties).toBe(on);
      expect(names(visible(['posts:write'], on)).includes('publish_post')).toBe(on);
    }
    expect(PUBLISH_NOW in schemaOf('create_post').properties).toBe(true);
    expect(allTools().map((t) => t.name)).toEqual(MCP_TOOL_NAMES);
  });
});

describe('toRequest', () => {
  it('substitutes path parameters and removes them from the rest', () => {
    expect(toRequest(spec('get_post'), { id: 'post_01JD0000000000000000000001' })).toEqual({
      path: '/v1/posts/post_01JD0000000000000000000001',
      query: {},
      body: undefined,
      headers: {},
    });
    expect(toRequest(spec('list_webhook_deliveries'), { id: 'wh_1' }).path).toBe(
      '/v1/webhook-endpoints/wh_1/deliveries',
    );
  });

  it('URL-encodes path parameters', () => {
    const req = toRequest(spec('delete_post'), { id: '../a b/c?d#e' });
    expect(req.path).toBe('/v1/posts/..%2Fa%20b%2Fc%3Fd%23e');
    expect(req.query).toEqual({});
    expect(req.body).toBeUndefined();
  });

  it('leaves an empty segment for a missing path parameter', () => {
    expect(toRequest(spec('get_post'), {}).path).toBe('/v1/posts/');
  });

  it('turns GET arguments into query strings: numbers stringified, null and undefined dropped', () => {
    const req = toRequest(spec('list_posts'), { limit: 25, status: 'scheduled', after: null, x: undefined });
    expect(req).toEqual({
      path: '/v1/posts',
      query: { limit: '25', status: 'scheduled' },
      body: undefined,
      headers: {},
    });
  });

  it('turns DELETE arguments other than the path parameters into query strings', () => {
    expect(toRequest(spec('delete_webhook_endpoint'), { id: 'wh_9', dry: false })).toEqual({
      path: '/v1/webhook-endpoints/wh_9',
      query: { dry: 'false' },
      body: undefined,
      headers: {},
    });
  });

  it('sends no body for a POST operation without one (publish_post)', () => {
    expect(toRequest(spec('publish_post'), { id: 'post_1' })).toEqual({
      path: '/v1/posts/post_1/publish',
      query: {},
      body: undefined,
      headers: {},
    });
  });

  it('turns POST arguments into the JSON body, nulls kept', () => {
    const variants = [{ channel_id: 'ch_1', body: 'Hello' }];
    expect(toRequest(spec('create_post'), { variants, draft: true, title: null })).toEqual({
      path: '/v1/posts',
      query: {},
      body: { variants, draft: true, title: null },
      headers: {},
    });
  });

  it('turns PATCH arguments other than the path parameters into the JSON body', () => {
    expect(
      toRequest(spec('reschedule_post'), { id: 'post_2', scheduled_at: '2030-01-01T09:00:00Z' }),
    ).toEqual({
      path: '/v1/posts/post_2',
      query: {},
      body: { scheduled_at: '2030-01-01T09:00:00Z' },
      headers: {},
    });
    expect(toRequest(spec('update_webhook_endpoint'), { id: 'wh_1', enabled: false }).body).toEqual({
      enabled: false,
    });
  });

  it('sends idempotency_key as the Idempotency-Key header, not in the body', () => {
    const req = toRequest(spec('create_post'), { variants: [], draft: true, idempotency_key: 'retry-42' });
    expect(req.headers).toEqual({ 'idempotency-key': 'retry-42' });
    expect(req.body).toEqual({ variants: [], draft: true });
  });

  it('sends if_match as the If-Match header of the post writes that honour it, and offers it on those only', () => {
    const put = toRequest(spec('update_post'), { id: 'post_3', variants: [], if_match: '"7"' });
    expect(put).toEqual({
      path: '/v1/posts/post_3',
      query: {},
      body: { variants: [] },
      headers: { 'if-match': '"7"' },
    });
    const del = toRequest(spec('delete_post'), { id: 'post_3', if_match: '*' });
    expect(del).toEqual({
      path: '/v1/posts/post_3',
      query: {},
      body: undefined,
      headers: { 'if-match': '*' },
    });
    const offered = allTools()
      .filter((t) => 'if_match' in (t.tool.inputSchema.properties as Record<string, unknown>))
      .map((t) => t.name);
    expect(offered).toEqual([
      'reschedule_post',
      'delete_post',
      'publish_post',
      'update_post',
      'update_inbox_item',
    ]);
  });

  it('leaves the arguments it was given untouched', () => {
    const args = { id: 'post_3', scheduled_at: '2030-01-01T09:00:00Z' };
    toRequest(spec('reschedule_post'), args);
    expect(args).toEqual({ id: 'post_3', scheduled_at: '2030-01-01T09:00:00Z' });
  });
});
