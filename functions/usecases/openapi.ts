import * as z from 'zod/mini';
import { type Contract, contracts, type OperationId } from '#core/contracts';
import { PROBLEMS, type ProblemCode, problemType } from '#core/errors';
import { SCOPES } from '#core/vocabulary';
import { type Operation, operations } from '#lib/operations';
import '#core/schemas';

// OpenAPI 3.1 generated from the operations manifest, the contracts and the zod schemas: the
// document cannot drift from what the handlers validate and answer.

type Json = Record<string, unknown>;

const ALWAYS: ProblemCode[] = [
  'authentication_required',
  'invalid_api_key',
  'rate_limited',
  'quota_exhausted',
  'internal_error',
];

/** What the request pipeline itself may refuse an API-key operation with (shared/http.ts). */
const pipelineCodes = (op: Operation, contract: Contract): ProblemCode[] => [
  ...(contract.body || contract.query ? (['validation_failed'] as const) : []),
  'insufficient_scope',
  ...(op.feature ? (['feature_not_enabled'] as const) : []),
];

const REF = '#/components/schemas/';

// Date-times carry `format: date-time`; zod's equivalent regex only adds noise to the document.
const override = (ctx: { jsonSchema: Json }) => {
  if (ctx.jsonSchema.format === 'date-time') delete ctx.jsonSchema.pattern;
};

function components(): Record<string, Json> {
  const { schemas } = z.toJSONSchema(z.globalRegistry, {
    target: 'draft-2020-12',
    uri: (id) => `${REF}${id}`,
    override,
  }) as { schemas: Record<string, Json> };
  for (const schema of Object.values(schemas)) {
    delete schema.$schema;
    delete schema.$id;
  }
  return schemas;
}

/** A registered schema becomes a $ref to its component; anything else is inlined. */
function inline(schema: z.ZodMiniType): Json {
  const id = z.globalRegistry.get(schema)?.id;
  if (id) return { $ref: `${REF}${id}` };
  const json = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    metadata: z.globalRegistry,
    override,
  }) as Json;
  delete json.$schema;
  delete json.$defs;
  return JSON.parse(JSON.stringify(json).replaceAll('"#/$defs/', `"${REF}`)) as Json;
}

function queryParameters(schema: z.ZodMiniType | undefined, id?: OperationId): Json[] {
  if (!schema) return [];
  const json = inline(schema) as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, s]) => ({
    name,
    in: 'query',
    required: json.required?.includes(name) ?? false,
    description: (id && OPERATION_QUERY_DOCS[id]?.[name]) ?? QUERY_DOCS[name] ?? name,
    schema: s,
  }));
}

const QUERY_DOCS: Record<string, string> = {
  limit: 'Page size, 1 to 100 (default 25).',
  after: 'Opaque cursor: the `next_cursor` of the previous page, unchanged.',
  status: 'Only posts in this status.',
};

/** Query parameters an operation describes its own way (listInbox's `status` is an item's). */
const OPERATION_QUERY_DOCS: Partial<Record<OperationId, Record<string, string>>> = {
  listInbox: {
    status: 'Only items in this status (unread, read, archived); without it, every status.',
    kind: 'Only items of this kind (comment, mention, message).',
    channel_id: 'Only items of this channel.',
    post_id: 'Only the items that answer this Herald post.',
  },
};

const requestIdHeader = {
  'X-Request-Id': {
    description: 'Request id; equals `request_id` in problem bodies.',
    schema: { type: 'string' },
  },
};

const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': {
    description:
      'The per-key burst policy as an RFC 9651 structured field, e.g. `"per-key-minute";q=120;w=60`.',
    schema: { type: 'string' },
  },
  RateLimit: {
    description:
      'Remaining requests in the current window and seconds until it resets, e.g. `"per-key-minute";r=119;t=42`.',
    schema: { type: 'string' },
  },
  'X-RateLimit-Limit': { description: 'Requests allowed per key per minute.', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': {
    description: 'Requests left in the current minute.',
    schema: { type: 'integer' },
  },
  'X-RateLimit-Reset': {
    description: 'Seconds until the current window resets.',
    schema: { type: 'integer' },
  },
};

function problemResponse(codes: ProblemCode[], docsUrl: string, rateLimited: boolean): Json {
  const examples = Object.fromEntries(
    codes.map((code) => [
      code,
      {
        summary: PROBLEMS[code].title,
        value: {
          type: problemType(docsUrl, code),
          title: PROBLEMS[code].title,
          status: PROBLEMS[code].status,
          code,
          detail: PROBLEMS[code].title,
          request_id: 'req_example',
          ...(code === 'validation_failed'
            ? {
                errors: [
                  {
                    pointer: '/variants/0/channel_id',
                    code: 'unknown_channel',
                    message: 'No connected channel with this id.',
                  },
                ],
              }
            : {}),
        },
      },
    ]),
  );
  const headers: Json = { ...requestIdHeader, ...(rateLimited ? RATE_LIMIT_HEADERS : {}) };
  if (codes.some((c) => c === 'rate_limited' || c === 'quota_exhausted')) {
    headers['Retry-After'] = { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } };
  }
  return {
    description: codes.map((c) => `\`${c}\``).join(', '),
    headers,
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' }, examples } },
  };
}

const PATH_PARAMETER_DOCS: Record<string, string> = {
  platform: 'The platform (x, linkedin, …).',
  page: "The guide page's name (posts, errors, …).",
  code: 'The problem code, as its `type` URI ends (validation-failed).',
};

function operationObject(id: OperationId, docsUrl: string): Json {
  const op = operations.find((o) => o.id === id)!;
  const contract: Contract = contracts[id];
  const security = op.scope === null ? [] : [{ bearerAuth: [op.scope] }, { apiKeyHeader: [op.scope] }];
  const parameters: Json[] = [];
  for (const [, name] of op.path.matchAll(/\{(\w+)\}/g)) {
    parameters.push({
      name,
      in: 'path',
      required: true,
      description: PATH_PARAMETER_DOCS[name ?? ''] ?? 'Resource id.',
      schema: { type: 'string' },
    });
  }
  parameters.push(...queryParameters(contract.query, id));
  if (contract.idempotent) {
    parameters.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description:
        'Makes retries safe: within 24 h the same key and body replay the first response (with `Idempotency-Replayed: true`); another body answers 422. A UUID is recommended.',
      schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$' },
    });
  }

  if (contract.ifMatch) {
    parameters.push({
      name: 'If-Match',
      in: 'header',
      required: false,
      description:
        op.tag === 'Inbox'
          ? "Acts only on the item as you read it: getInboxItem's `ETag` (or a list of them; `*` matches any existing item). An item changed since answers 412 precondition_failed and is left as it is."
          : "Acts only on the post as you read it: getPost's `ETag` (or a list of them; `*` matches any existing post). A post changed since answers 412 precondition_failed and is left as it is.",
      schema: { type: 'string', maxLength: 1024 },
    });
  }

  const successHeaders: Json = { ...requestIdHeader, ...(op.scope ? RATE_LIMIT_HEADERS : {}) };
  if (contract.etag) {
    successHeaders.ETag = {
      description: `This version of the ${op.tag === 'Inbox' ? 'item' : 'post'} (a strong tag, e.g. \`"7"\`); send it as \`If-Match\` to act only on it.`,
      schema: { type: 'string' },
    };
  }
  if (contract.idempotent) {
    successHeaders['Idempotency-Replayed'] = {
      description:
        '`true` when this response is a replay of an earlier request with the same Idempotency-Key.',
      schema: { type: 'string', enum: ['true'] },
    };
  }
  const responses: Json =
    contract.success.status === 303
      ? {
          // A browser redirect (the OAuth callback): where to, or a page when there is nowhere to go.
          '303': {
            description: contract.success.description,
            headers: {
              ...successHeaders,
              Location: { description: 'Where the browser goes next.', schema: { type: 'string' } },
            },
          },
          '200': {
            description: 'The outcome as a short HTML page (the session had no redirect_uri).',
            headers: successHeaders,
            content: { 'text/html': { schema: { type: 'string' } } },
          },
        }
      : {
          [String(contract.success.status)]: {
            description: contract.success.description,
            headers: successHeaders,
            content: contract.success.html
              ? { 'text/html': { schema: { type: 'string' } } }
              : {
                  [contract.success.mediaType ?? 'application/json']: {
                    schema: contract.success.schema ? inline(contract.success.schema) : { type: 'object' },
                  },
                },
          },
        };
  // A no-content answer (deleteMedia's 204) has no body to describe.
  if (contract.success.status === 204) delete (responses['204'] as Json).content;
  const unhealthy = contract.success.unhealthy ?? contract.success.alternate;
  if (unhealthy && contract.success.schema)
    responses[String(unhealthy.status)] = {
      description: unhealthy.description,
      headers: successHeaders,
      content: {
        [contract.success.mediaType ?? 'application/json']: { schema: inline(contract.success.schema) },
      },
    };
  const codes: ProblemCode[] =
    op.scope === null
      ? [...contract.errors, 'internal_error']
      : [...pipelineCodes(op, contract), ...contract.errors, ...ALWAYS];
  const byStatus = new Map<number, ProblemCode[]>();
  for (const code of codes)
    byStatus.set(PROBLEMS[code].status, [...(byStatus.get(PROBLEMS[code].status) ?? []), code]);
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b))
    responses[String(status)] = problemResponse(list, docsUrl, op.scope !== null && status !== 401);

  const body = contract.body
    ? {
        requestBody: {
          required: !contract.optionalBody,
          content: { 'application/json': { schema: inline(contract.body) } },
        },
      }
    : {};
  return {
    operationId: id,
    summary: op.summary,
    description: `${contract.description}${op.scope ? `\n\nRequired scope: \`${op.scope}\`.` : ''}`,
    tags: [op.tag],
    security,
    ...(parameters.length ? { parameters } : {}),
    ...body,
    responses,
  };
}

/**
 * The document. `version` is the release (package.json's, one number for the API and the code);
 * `commit`, when given (the served document), is the build's git commit as `info.x-herald-commit`:
 * the committed docs/openapi.json leaves it out so it does not change with every commit.
 */
export function buildOpenApi(opts: {
  docsUrl: string;
  serverUrl?: string;
  version: string;
  commit?: string;
}): Json {
  const paths: Record<string, Json> = {};
  for (const op of operations) {
    paths[op.path] ??= {};
    (paths[op.path] as Json)[op.method.toLowerCase()] = operationObject(op.id as OperationId, opts.docsUrl);
  }
  const tags = [...new Set(operations.map((o) => o.tag))].map((name) => ({
    name,
    description: TAG_DOCS[name] ?? name,
  }));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Herald Social Publishing API',
      version: opts.version,
      ...(opts.commit ? { 'x-herald-commit': opts.commit } : {}),
      summary: 'Schedule, publish and measure social posts across connected channels.',
      description:
        "A versioned REST API over HTTPS with JSON bodies. Authenticate with an organization API key (`svc_live_…`) as `Authorization: Bearer <key>` or `x-api-key: <key>`. Errors are RFC 9457 problem+json with a stable `code`. Every API-key response carries the per-key burst limit in `RateLimit-Policy`/`RateLimit` (RFC 9651 structured fields) and `X-RateLimit-*`; a 429 carries `Retry-After` in seconds (`rate_limited`: until the minute window resets, or 1 while more requests arrive at once than the organization's request gate absorbs; `quota_exhausted`: until the UTC calendar month ends).",
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: opts.serverUrl ?? '/', description: 'This deployment' }],
    tags,
    security: [{ bearerAuth: [] }, { apiKeyHeader: [] }],
    paths,
    components: {
      schemas: components(),
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description: `API key as a bearer token. Scopes: ${SCOPES.join(', ')}.`,
        },
        apiKeyHeader: {
          type: 'apiKey',
          in: 'header',
          name: 'x-api-key',
          description: 'API key in the x-api-key header.',
        },
      },
    },
  };
}

const TAG_DOCS: Record<string, string> = {
  Channels: 'Connected social accounts.',
  Posts: 'Drafts, scheduled and published posts and their deliveries.',
  Usage: 'The plan and its usage meters.',
  Inbox: 'The comments, mentions and direct messages that come back to connected channels.',
  Meta: "This API described (the OpenAPI document, the guide with a page per problem code, the operator's guide) and the deployment's health.",
};
