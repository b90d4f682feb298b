import type { Context } from 'aws-lambda';
import { ApiError } from '#core/errors';

// Idempotency-Key support (SPEC §8.3) on Powertools idempotency, stored in the single table under
// `IDEMPOTENCY#<operation>` with the table's TTL attribute. Keys are scoped per organization.

export const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;
const PRINTABLE_ASCII = /^[\x20-\x7e]{1,255}$/;

export function checkIdempotencyKey(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!PRINTABLE_ASCII.test(value)) {
    throw new ApiError('invalid_request', 'Idempotency-Key must be 1 to 255 printable ASCII characters.');
  }
  return value;
}

export interface IdempotentCall<B, C> {
  org_id: string;
  key: string;
  body: B;
  /** Passed through to the operation, not part of the idempotency key or payload hash. */
  context: C;
}

export interface Recorded {
  status: number;
  /** The response body as sent. */
  json: string;
  replayed?: boolean;
}

/**
 * Wraps an operation so repeated calls with the same (org, key) replay the first recorded result.
 * The Powertools layer (≈ 45 KiB with JMESPath) is loaded on the first keyed call, not at module
 * load: requests without an Idempotency-Key never pay for it (BENCHMARKS.md, cold start).
 */
export function idempotent<B, C>(operation: string, fn: (call: IdempotentCall<B, C>) => Promise<Recorded>) {
  let wrapped: Promise<(call: IdempotentCall<B, C>, context: Context) => Promise<Recorded>> | undefined;
  return async (call: IdempotentCall<B, C>, context: Context): Promise<Recorded> => {
    wrapped ??= import('./idempotency-store.ts').then((m) => m.powertoolsIdempotent(operation, fn));
    // Canonical key order: the same body sent with its fields in another order is the same request.
    return (await wrapped)({ ...call, body: canonical(call.body) as B }, context);
  };
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}
