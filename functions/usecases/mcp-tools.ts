import * as z from 'zod/mini';
import { once } from '#core/once';
import { type OperationDoc, operationDocs } from '#core/operation-docs';
import { type OperationId, requestSchemas } from '#core/requests';
import type { Feature, Scope } from '#core/vocabulary';
import { apiOperations, type Operation } from '#lib/operations';

// The MCP tools: one per API operation, generated from the operations manifest and the very zod
// schemas the REST handlers validate with (docs/api/mcp.md). A tool's input is the operation's path
// parameters, query parameters and body fields in one object; its result is the REST answer.

type Json = Record<string, unknown>;

export interface ToolSpec {
  name: string;
  op: Operation;
  /** Path parameters (taken out of the arguments), query fields, body fields. */
  pathParams: string[];
  queryFields: string[];
  hasBody: boolean;
  scope: Scope;
  feature: Feature | undefined;
  /** Needs the workspace's Dangerous AI operations toggle (publish, delete). */
  dangerous: boolean;
  tool: {
    name: string;
    title: string;
    description: string;
    inputSchema: Json & { type: 'object' };
    annotations: {
      title: string;
      readOnlyHint: boolean;
      destructiveHint: boolean;
      idempotentHint: boolean;
      openWorldHint: boolean;
    };
  };
}

/** createPost's Idempotency-Key header, as an argument. */
export const IDEMPOTENCY_ARG = 'idempotency_key';
/** The If-Match header of the post writes, as an argument (the ETag get_post's result carries in `_meta`). */
export const IF_MATCH_ARG = 'if_match';
/** createPost's field that needs the toggle; hidden from the schema while it is off. */
export const PUBLISH_NOW = 'publish_now';

const snake = (id: string) => id.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

// Date-times carry `format: date-time`; zod's equivalent regex only adds noise for an agent.
const override = (ctx: { jsonSchema: Json }) => {
  if (ctx.jsonSchema.format === 'date-time') delete ctx.jsonSchema.pattern;
};

/** JSON Schema of a zod schema with a registered root inlined (no `$ref` at the top). */
function jsonSchema(
  schema: z.ZodMiniType,
): Json & { properties?: Record<string, Json>; required?: string[] } {
  const json = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io: 'input',
    unrepresentable: 'any',
    override,
  }) as Json & { $ref?: string; $defs?: Record<string, Json> };
  delete json.$schema;
  const ref = json.$ref?.startsWith('#/$defs/') ? json.$ref.slice(8) : undefined;
  if (!ref || !json.$defs?.[ref]) return json;
  const { [ref]: root, ...rest } = json.$defs;
  return { ...root, ...(Object.keys(rest).length ? { $defs: rest } : {}) };
}

const DANGEROUS: ReadonlySet<string> = new Set([
  'publishPost',
  'deletePost',
  'unpublishPost',
  'replyToInboxItem',
]);
const READ_ONLY_POSTS: ReadonlySet<string> = new Set(['validatePost']);
/** Operations that reach outside Herald (platforms, webhook receivers, S3 uploads, imported URLs). */
const OPEN_WORLD: ReadonlySet<string> = new Set([
  'importMedia',
  'publishPost',
  'unpublishPost',
  'createPost',
  'testWebhookEndpoint',
  'createChannelConnection',
  'disconnectChannel',
  // Its choices are read live from the channel's platform.
  'getChannelOptions',
  // The deployment's model (Bedrock, an OpenAI-compatible endpoint) writes the suggestions.
  'createGeneration',
  'replyToInboxItem',
]);
const DESTRUCTIVE: ReadonlySet<string> = new Set([
  'deleteMedia',
  'deletePost',
  'unpublishPost',
  'publishPost',
  'deleteWebhookEndpoint',
  'rotateWebhookSecret',
  'disconnectChannel',
]);

function toolOf(op: Operation): ToolSpec {
  const id = op.id as OperationId;
  const contract: OperationDoc & { body?: z.ZodMiniType; query?: z.ZodMiniType } = {
    ...operationDocs[id],
    ...requestSchemas(id),
  };
  const pathParams = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string);
  const properties: Record<string, Json> = {};
  const required: string[] = [];
  for (const p of pathParams) {
    const what = op.tag === 'Inbox' ? 'inbox item' : op.tag.toLowerCase().replace(/s$/, '');
    properties[p] = { type: 'string', description: `The ${what} id.` };
    required.push(p);
  }
  const query = contract.query ? jsonSchema(contract.query) : undefined;
  const queryFields = Object.keys(query?.properties ?? {});
  Object.assign(properties, query?.properties);
  required.push(...(query?.required ?? []));
  const body = contract.body ? jsonSchema(contract.body) : undefined;
  Object.assign(properties, body?.properties);
  required.push(...(body?.required ?? []));
  if (contract.idempotent) {
    properties[IDEMPOTENCY_ARG] = {
      type: 'string',
      minLength: 1,
      maxLength: 255,
      description:
        'Optional Idempotency-Key: retrying with the same key and arguments within 24 h returns the first result instead of creating a second post.',
    };
  }
  // validatePost checks a body and writes nothing: read-only for an agent, though it is a POST.
  if (contract.ifMatch) {
    properties[IF_MATCH_ARG] = {
      type: 'string',
      minLength: 1,
      maxLength: 1024,
      description:
        op.tag === 'Inbox'
          ? 'Optional: the item\'s ETag as get_inbox_item gave it (its result\'s _meta.etag, like "7"). The call then acts only on the item as you read it; an item changed since answers precondition_failed and is left as it is.'
          : 'Optional: the post\'s ETag as get_post gave it (its result\'s _meta.etag, like "7"). The call then acts only on the post as you read it; a post changed since answers precondition_failed and is left as it is.',
    };
  }
  const readOnly = op.method === 'GET' || READ_ONLY_POSTS.has(op.id);
  const name = snake(op.id);
  const title = op.summary;
  const body$ = body as (Json & { description?: string; $defs?: Json }) | undefined;
  return {
    name,
    op,
    pathParams,
    queryFields,
    hasBody: contract.body !== undefined,
    scope: op.scope as Scope,
    feature: op.feature,
    dangerous: DANGEROUS.has(op.id),
    tool: {
      name,
      title,
      description: [
        `${op.summary}. ${contract.description}`,
        body$?.description ? `Arguments: ${body$.description}` : '',
        `Needs the ${op.scope} scope${op.feature ? ` and a plan with ${op.feature}` : ''}. Errors come back as a tool error whose text starts with the problem code (e.g. validation_failed, resource_not_found).`,
      ]
        .filter(Boolean)
        .join('\n'),
      inputSchema: {
        type: 'object',
        properties,
        ...(required.length ? { required: [...new Set(required)] } : {}),
        additionalProperties: false,
        ...(body$?.$defs ? { $defs: body$.$defs } : {}),
      },
      annotations: {
        title,
        readOnlyHint: readOnly,
        destructiveHint: DESTRUCTIVE.has(op.id),
        idempotentHint:
          readOnly ||
          op.method === 'DELETE' ||
          op.method === 'PUT' ||
          op.method === 'PATCH' ||
          contract.idempotent === true,
        openWorldHint: OPEN_WORLD.has(op.id),
      },
    },
  };
}

/** Every tool, in manifest order (built once per container). */
export const allTools = once(() => apiOperations.map(toolOf));

export function findTool(name: string): ToolSpec | undefined {
  return allTools().find((t) => t.name === name);
}

/**
 * The tools a key may see: its scopes, its plan's features, and the dangerous ones only while the
 * workspace's toggle is on (create_post then also offers publish_now).
 */
export function visibleTools(
  ctx: { scopes: ReadonlySet<Scope>; hasFeature: (f: Feature) => boolean },
  dangerousOps: boolean,
): ToolSpec['tool'][] {
  return allTools()
    .filter((t) => ctx.scopes.has(t.scope) && (!t.feature || ctx.hasFeature(t.feature)))
    .filter((t) => dangerousOps || !t.dangerous)
    .map((t) => {
      if (dangerousOps || !(PUBLISH_NOW in (t.tool.inputSchema.properties as Json))) return t.tool;
      const { [PUBLISH_NOW]: _hidden, ...properties } = t.tool.inputSchema.properties as Json;
      return { ...t.tool, inputSchema: { ...t.tool.inputSchema, properties } };
    });
}

/** The REST request a tool call stands for: path, query string, JSON body, extra headers. */
export function toRequest(
  spec: ToolSpec,
  args: Json,
): { path: string; query: Record<string, string>; body: Json | undefined; headers: Record<string, string> } {
  const rest: Json = { ...args };
  let path = spec.op.path;
  for (const p of spec.pathParams) {
    path = path.replace(`{${p}}`, encodeURIComponent(String(rest[p] ?? '')));
    delete rest[p];
  }
  const headers: Record<string, string> = {};
  // Passed on as given (not only strings): the REST pipeline validates the header.
  const key = rest[IDEMPOTENCY_ARG];
  if (key !== undefined && key !== null) headers['idempotency-key'] = String(key);
  delete rest[IDEMPOTENCY_ARG];
  const ifMatch = rest[IF_MATCH_ARG];
  if (ifMatch !== undefined && ifMatch !== null) headers['if-match'] = String(ifMatch);
  delete rest[IF_MATCH_ARG];
  const query: Record<string, string> = {};
  if (!spec.hasBody) {
    for (const [k, v] of Object.entries(rest)) if (v !== undefined && v !== null) query[k] = String(v);
    return { path, query, body: undefined, headers };
  }
  return { path, query, body: rest, headers };
}
