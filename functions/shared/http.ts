import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy, { type MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import type * as z from 'zod/mini';
import type { Admission, AuthContext, PostsToCount } from '#core/accounts';
import { ApiError } from '#core/errors';
import { buildRequest, type OperationId, type RequestOf, type requests } from '#core/requests';
import { parseOrThrow } from '#core/validation';
import { findOperation, type Operation } from '#lib/operations';
import {
  addResponseHeaders,
  type HeaderBagContext,
  type HttpEvent,
  type HttpResult,
  jsonResponse,
  problemJson,
  rawJsonResponse,
  requestIdHeader,
  requestIdOf,
  viaOf,
} from './envelope.ts';
import { logger } from './logger.ts';

export type { HttpEvent, HttpResult } from './envelope.ts';

// The request pipeline every API handler shares: request id and response headers → problem+json
// errors → API-key auth → burst limit and monthly meter (started here, running concurrently with
// the operation) → scope and plan feature → body/query validation → the operation. Who the key is
// and whether the request is admitted are use cases (usecases/support/request-gate.ts), handed in
// as a RequestGate so this module reaches no data.

/** The use cases the pipeline asks about a request's key. */
export interface RequestGate {
  /** The key presented in the headers (401 when missing or not valid). */
  authenticate(headers: Record<string, string | undefined>): Promise<AuthContext>;
  /** The operation's scope and plan feature (403 otherwise). */
  authorize(auth: AuthContext, op: Operation): void;
  /**
   * Counts the request against the key's burst and the month's meter, or says why not; `posts`:
   * also one post against posts_per_month, in the same write.
   */
  admit(auth: AuthContext, nowMs: number, posts?: PostsToCount): Promise<Admission>;
  /** Gives back the count of an admitted request the operation refused with a 429. */
  unmeter(auth: AuthContext, admission: Admission): Promise<void>;
}

/** Request bodies larger than this are refused; it also keeps every post item under DynamoDB's 400 KB. */
export const MAX_BODY_BYTES = 256 * 1024;

export interface ApiInput<B, Q> {
  body: B;
  query: Q;
  params: Record<string, string>;
  headers: Record<string, string | undefined>;
  auth: AuthContext;
  requestId: string;
  now: Date;
  /** The Lambda context (remaining time feeds the idempotency in-progress expiry). */
  lambda: Context;
  /** Straight to the REST API, or a tool call of the MCP server. */
  via: 'api' | 'mcp';
  /**
   * Resolves once the request is admitted by the burst limit and the monthly meter; rejects with
   * the 429 otherwise. Await it after reading and before writing: the limiter then costs no
   * extra sequential round trip, and a refused request changes nothing. With a deferred admission
   * (apiHandler's `deferAdmission`) the first call starts it, and `posts` asks it to count a post
   * in the same write (`postCounted` says whether it did: a later call gets the first answer). A
   * call without `posts` says the request counts no post: an admission refused only for the post
   * it was asked to count is then made again without it.
   */
  admitted: (posts?: PostsToCount) => Promise<Admission>;
}

export interface ApiResult {
  status: number;
  body?: unknown;
  /** A body already serialized, sent byte for byte (idempotent replays). */
  rawBody?: string;
  headers?: Record<string, string>;
}

interface HeraldContext extends HeaderBagContext {
  herald?: {
    auth?: AuthContext;
    body?: unknown;
    query?: unknown;
    /** The admission, started by the first call (see ApiInput.admitted; `answered`: see rateLimit). */
    admit?: (posts?: PostsToCount, answered?: unknown) => Promise<Admission>;
  };
}

type Middleware = MiddlewareObj<HttpEvent, HttpResult, Error, HeraldContext>;

export const apiKeyAuth = (op: Operation, gate: RequestGate): Middleware => ({
  before: async (request) => {
    if (op.scope === null) return;
    const auth = await gate.authenticate(request.event.headers ?? {});
    logger.appendKeys({ org_id: auth.orgId, key_id: auth.keyId });
    request.context.herald = { ...request.context.herald, auth };
  },
});

/** Errors that outrank a 429 (docs/api/limits.md, order of checks: 401 → 403 scope/feature → 429 → the rest). */
const OUTRANKS_429 = new Set([
  'authentication_required',
  'invalid_api_key',
  'insufficient_scope',
  'feature_not_enabled',
]);

/**
 * Starts the admission (burst + api_requests) as soon as the key is known, without waiting for it,
 * and settles it last: its headers go on every API-key response, and a refusal replaces any
 * lower-ranked outcome with the 429. `deferred`: the operation starts it (ApiInput.admitted) — at
 * once asking the gate to count the post it expects to make count, or after its reads once it
 * knows — so the gate's write carries the post count; one that never does (an early 404, 409 or
 * 400) is admitted here at the end, so every request still passes the gate and is counted or
 * refused exactly as an eager one. A request refused only for the post count that then answers
 * anything but that refusal counted no post: it is admitted again without the count.
 */
export const rateLimit = (gate: RequestGate, deferred = false): Middleware => {
  const settle = async (request: { context: HeraldContext; error?: unknown }) => {
    const admission = request.context.herald?.admit?.(undefined, request.error);
    if (!admission) return undefined;
    const a = await admission;
    addResponseHeaders(request.context, a.headers);
    return a;
  };
  return {
    before: (request) => {
      const auth = request.context.herald?.auth;
      if (!auth) return;
      let admission: Promise<Admission> | undefined;
      const start = (posts?: PostsToCount) => {
        admission = gate.admit(auth, Date.now(), posts);
        admission.catch(() => undefined); // settled in after/onError
        return admission;
      };
      const admit = async (posts?: PostsToCount, answered?: unknown): Promise<Admission> => {
        const first = admission ?? start(posts);
        const a = await first;
        // Refused only for a post this request does not count after all (nor answers that refusal):
        // admitted again without it, once.
        if (!a.allowed && a.postsRefused && !posts && answered !== a.error)
          return admission === first ? start() : (admission as Promise<Admission>);
        return a;
      };
      request.context.herald = { ...request.context.herald, admit };
      if (!deferred) void admit().catch(() => undefined);
    },
    after: async (request) => {
      const a = await settle(request);
      if (a && !a.allowed) throw a.error;
    },
    onError: async (request) => {
      let a: Admission | undefined;
      try {
        a = await settle(request);
      } catch (err) {
        request.error = err as Error;
        return;
      }
      const code = request.error instanceof ApiError ? request.error.code : undefined;
      // A key revoked at the gate is a 401, which outranks everything; a 429 outranks the rest.
      if (a && !a.allowed && (a.error.status === 401 || !(code && OUTRANKS_429.has(code))))
        request.error = a.error;
      // An admitted request the operation refused with a 429 (posts_per_month) is not metered.
      const auth = request.context.herald?.auth;
      if (a?.allowed && auth && request.error instanceof ApiError && request.error.status === 429)
        await gate.unmeter(auth, a);
    },
  };
};

export const authorize = (op: Operation, gate: RequestGate): Middleware => ({
  before: (request) => {
    const auth = request.context.herald?.auth;
    if (auth) gate.authorize(auth, op);
  },
});

function readBody(event: HttpEvent): unknown {
  const raw = event.body ?? '';
  const text = event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
  if (Buffer.byteLength(text, 'utf8') > MAX_BODY_BYTES) {
    throw new ApiError('payload_too_large', `Request bodies are limited to ${MAX_BODY_BYTES} bytes.`);
  }
  const type = (event.headers?.['content-type'] ?? '').toLowerCase();
  const [mime, ...params] = type.split(';').map((s) => s.trim());
  if (mime !== 'application/json' || params.some((p) => p.startsWith('charset=') && p !== 'charset=utf-8')) {
    throw new ApiError('invalid_request', 'Send the body as JSON with `Content-Type: application/json`.');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ApiError('invalid_request', 'The body is not valid JSON.');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ApiError('invalid_request', 'The body must be a JSON object.');
  }
  if (depthExceeds(parsed, MAX_BODY_DEPTH)) {
    throw new ApiError('invalid_request', `The body nests deeper than ${MAX_BODY_DEPTH} levels.`);
  }
  return parsed;
}

/** DynamoDB's own nesting limit; deeper bodies would also overflow recursive canonicalisation. */
export const MAX_BODY_DEPTH = 32;

/** Iterative, so a hostile body cannot overflow the stack while being measured. */
function depthExceeds(root: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop() as [unknown, number];
    if (value === null || typeof value !== 'object') continue;
    if (depth > max) return true;
    for (const child of Object.values(value)) stack.push([child, depth + 1]);
  }
  return false;
}

export const parseRequest = (spec: {
  body?: z.ZodMiniType;
  query?: z.ZodMiniType;
  optionalBody?: boolean;
}): Middleware => ({
  before: (request) => {
    const query = spec.query
      ? parseOrThrow(spec.query, request.event.queryStringParameters ?? {}, '/query')
      : undefined;
    // Left out: no bytes and no content type. Empty bytes labelled JSON are malformed JSON.
    const omitted = spec.optionalBody && !request.event.body && !request.event.headers?.['content-type'];
    const body = spec.body ? parseOrThrow(spec.body, omitted ? {} : readBody(request.event)) : undefined;
    request.context.herald = { ...request.context.herald, query, body };
  },
});

type BodyOf<K extends OperationId> = RequestOf<K>['body'] extends infer S extends z.ZodMiniType
  ? z.infer<S>
  : undefined;
type QueryOf<K extends OperationId> = RequestOf<K>['query'] extends infer S extends z.ZodMiniType
  ? z.infer<S>
  : undefined;

/**
 * The API handler builder over a gate: builds an operation's Lambda handler from its manifest
 * entry, its request schemas and its use case. Returns the middy-wrapped `handler` (deployed) and
 * the bare `impl` (unit tests).
 */
export const apiHandlers = (gate: RequestGate) =>
  function apiHandler<K extends OperationId>(
    operationId: K,
    /**
     * The operation's entry of `requests` (core/requests.ts), passed by the handler itself so its
     * bundle carries only its own schemas' code. The type admits only that entry's schemas.
     */
    spec: (typeof requests)[K],
    impl: (input: ApiInput<BodyOf<K>, QueryOf<K>>) => Promise<ApiResult>,
    /** `deferAdmission`: the operation starts its admission itself (see rateLimit). */
    options: { deferAdmission?: boolean } = {},
  ) {
    const op = findOperation(operationId);
    // Built here, at load: this operation's schemas only.
    const request = buildRequest(spec);
    const run = async (event: HttpEvent, context: HeraldContext): Promise<HttpResult> => {
      const h = context.herald ?? {};
      const result = await impl({
        body: h.body as BodyOf<K>,
        query: h.query as QueryOf<K>,
        params: (event.pathParameters ?? {}) as Record<string, string>,
        headers: event.headers ?? {},
        auth: h.auth as AuthContext,
        requestId: requestIdOf(event),
        now: new Date(),
        lambda: context,
        via: viaOf(event),
        admitted: async (posts) => {
          if (!h.admit) throw new Error(`${operationId} has no admission to await`);
          const a = await h.admit(posts);
          if (!a.allowed) throw a.error;
          return a;
        },
      });
      return result.rawBody !== undefined
        ? rawJsonResponse(result.status, result.rawBody, result.headers)
        : jsonResponse(result.status, result.body, result.headers);
    };
    const handler = middy<HttpEvent, HttpResult, Error, HeraldContext>(run)
      .use(injectLambdaContext(logger, { resetKeys: true, logEvent: false }))
      .use(requestIdHeader())
      .use(problemJson())
      .use(apiKeyAuth(op, gate))
      .use(rateLimit(gate, options.deferAdmission))
      .use(authorize(op, gate))
      .use(parseRequest(request));
    return { handler, impl, operation: op };
  };
