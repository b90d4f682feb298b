// Every error the API can answer with. Codes are public API: clients branch on them (docs/api/errors.md).

// `meaning` is what the problem's page (GET /docs/api/problems/{code}) says; the API guide's errors
// page has the details, and a test keeps its table and this catalog the same set.
export const PROBLEMS = {
  invalid_request: {
    status: 400,
    title: 'Malformed request',
    meaning:
      'The request cannot be read: the body is not a JSON object (or is nested too deep), the Content-Type is not JSON, a cursor or Idempotency-Key is not one Herald accepts, or the OAuth callback carries no valid state. Fix the request; retrying it unchanged fails again.',
  },
  validation_failed: {
    status: 400,
    title: 'Validation failed',
    meaning:
      'A body field or query parameter breaks a rule. `errors` lists each failed field with a JSON Pointer, a field-level code and a message.',
  },
  authentication_required: {
    status: 401,
    title: 'Authentication required',
    meaning: 'No API key was sent. Send it as `Authorization: Bearer <key>` or `x-api-key: <key>`.',
  },
  invalid_api_key: {
    status: 401,
    title: 'Invalid API key',
    meaning:
      'The key is not a Herald key, is unknown or has been revoked; or an Authorization header in another scheme than Bearer was sent without x-api-key.',
  },
  insufficient_scope: {
    status: 403,
    title: 'Insufficient scope',
    meaning: "The key lacks the operation's scope. An owner or admin can issue a key that has it.",
  },
  feature_not_enabled: {
    status: 403,
    title: 'Feature not enabled',
    meaning: "The organization's plan does not include the feature this operation needs.",
  },
  dangerous_ops_disabled: {
    status: 403,
    title: 'Dangerous operations disabled',
    meaning:
      'Publishing now and deleting posts are off for this organization until an owner turns on Dangerous AI operations.',
  },
  origin_not_allowed: {
    status: 403,
    title: 'Origin not allowed',
    meaning:
      'The request carries a browser Origin (or a landing address) that this deployment does not allow.',
  },
  resource_not_found: {
    status: 404,
    title: 'Resource not found',
    meaning:
      'The id in the path is unknown, malformed or belongs to another organization; or no route matches the path.',
  },
  method_not_allowed: {
    status: 405,
    title: 'Method not allowed',
    meaning: 'The path exists, but not with this method; the Allow header lists the methods it takes.',
  },
  resource_conflict: {
    status: 409,
    title: 'Resource conflict',
    meaning:
      "The resource's state forbids the request (a published post cannot be rescheduled, for instance), or it kept changing under concurrent writers. Read it again and decide.",
  },
  idempotency_in_progress: {
    status: 409,
    title: 'Idempotent request in progress',
    meaning: 'A request with the same Idempotency-Key is still running. Retry the same request shortly.',
  },
  platform_not_configured: {
    status: 409,
    title: 'Platform not configured',
    meaning: "The operator has not registered this deployment's app with the platform yet.",
  },
  payload_too_large: {
    status: 413,
    title: 'Payload too large',
    meaning: 'The request body exceeds 262,144 bytes (256 KiB).',
  },
  idempotency_key_reused: {
    status: 422,
    title: 'Idempotency key reused',
    meaning: 'The Idempotency-Key was used with a different body in the last 24 hours. Use a new key.',
  },
  rate_limited: {
    status: 429,
    title: 'Rate limited',
    meaning:
      "The key reached its burst limit this minute, or the organization sent too many requests at the same instant. Wait the Retry-After header's seconds.",
  },
  quota_exhausted: {
    status: 429,
    title: 'Quota exhausted',
    meaning:
      'The organization used its monthly allowance (API requests, or posts on the operations that create or schedule them). Retry-After is the time to the next UTC month.',
  },
  internal_error: {
    status: 500,
    title: 'Internal server error',
    meaning: 'Herald failed. Retry later, and quote the request_id if it persists.',
  },
  platform_unavailable: {
    status: 502,
    title: 'Platform unavailable',
    meaning:
      'The platform (or the Mastodon instance, or the Bluesky PDS) could not be reached, or did not answer as one. Retry later.',
  },
} as const satisfies Record<string, { status: number; title: string; meaning: string }>;

export type ProblemCode = keyof typeof PROBLEMS;

/** One field-level failure of a validation_failed problem. */
export interface FieldError {
  /** RFC 6901 JSON Pointer; '' is the whole body, `/query/<name>` a query parameter. */
  pointer: string;
  code: string;
  message: string;
}

export class ApiError extends Error {
  readonly code: ProblemCode;
  readonly status: number;
  readonly errors: FieldError[] | undefined;
  readonly headers: Record<string, string>;

  constructor(
    code: ProblemCode,
    detail: string,
    opts: { errors?: FieldError[]; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = 'ApiError';
    this.code = code;
    this.status = PROBLEMS[code].status;
    this.errors = opts.errors;
    this.headers = opts.headers ?? {};
  }
}

export class ValidationError extends ApiError {
  constructor(errors: FieldError[], detail = 'The request has invalid fields; see errors.') {
    super('validation_failed', detail, { errors });
    this.name = 'ValidationError';
  }
}

export const notFound = (what: string) => new ApiError('resource_not_found', `No ${what} with that id.`);
export const conflict = (detail: string) => new ApiError('resource_conflict', detail);
export const dangerousOpsDisabled = () =>
  new ApiError(
    'dangerous_ops_disabled',
    'Publishing now and deleting posts are off for this workspace until an owner turns on Dangerous AI operations.',
  );

/** A code as its page's path segment and `type` URI end: `validation-failed`. */
export const problemSlug = (code: ProblemCode): string => code.replaceAll('_', '-');

/** The code a page's path segment names (either spelling), or undefined. */
export function problemCodeOf(slug: string): ProblemCode | undefined {
  const code = slug.replaceAll('-', '_');
  return Object.hasOwn(PROBLEMS, code) ? (code as ProblemCode) : undefined;
}

/** `{docsUrl}/api/problems/validation-failed`, where docsUrl is the API guide's base (`https://…/docs`). */
export function problemType(docsUrl: string, code: ProblemCode): string {
  return `${docsUrl}/api/problems/${problemSlug(code)}`;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  code: ProblemCode;
  detail: string;
  request_id: string;
  errors?: FieldError[];
}

export function toProblem(err: ApiError, requestId: string, docsUrl: string): Problem {
  const problem: Problem = {
    type: problemType(docsUrl, err.code),
    title: PROBLEMS[err.code].title,
    status: err.status,
    code: err.code,
    detail: err.message,
    request_id: requestId,
  };
  if (err.errors) problem.errors = err.errors;
  return problem;
}
