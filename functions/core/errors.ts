// Every error the API can answer with. Codes are public API: clients branch on them (docs/api/errors.md).

// What each code means is said once, in the API guide's errors page (docs/api/errors.md), whose
// table the problem pages (GET /docs/api/problems/{code}) show; a test keeps its table and this
// catalog the same set.
export const PROBLEMS = {
  invalid_request: { status: 400, title: 'Malformed request' },
  validation_failed: { status: 400, title: 'Validation failed' },
  authentication_required: { status: 401, title: 'Authentication required' },
  invalid_api_key: { status: 401, title: 'Invalid API key' },
  insufficient_scope: { status: 403, title: 'Insufficient scope' },
  feature_not_enabled: { status: 403, title: 'Feature not enabled' },
  dangerous_ops_disabled: { status: 403, title: 'Dangerous operations disabled' },
  origin_not_allowed: { status: 403, title: 'Origin not allowed' },
  resource_not_found: { status: 404, title: 'Resource not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  resource_conflict: { status: 409, title: 'Resource conflict' },
  idempotency_in_progress: { status: 409, title: 'Idempotent request in progress' },
  platform_not_configured: { status: 409, title: 'Platform not configured' },
  reply_unsupported: { status: 409, title: 'Reply not supported' },
  precondition_failed: { status: 412, title: 'Precondition failed' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  idempotency_key_reused: { status: 422, title: 'Idempotency key reused' },
  rate_limited: { status: 429, title: 'Rate limited' },
  quota_exhausted: { status: 429, title: 'Quota exhausted' },
  internal_error: { status: 500, title: 'Internal server error' },
  platform_unavailable: { status: 502, title: 'Platform unavailable' },
  generation_failed: { status: 502, title: 'Generation failed' },
  service_unavailable: { status: 503, title: 'Service unavailable' },
  model_unavailable: { status: 503, title: 'Model unavailable' },
} as const satisfies Record<string, { status: number; title: string }>;

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
