import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { Context } from 'aws-lambda';
import { keys } from '#adapters/keys';
import { TABLE_NAME } from '#adapters/table';
import { ApiError } from '#core/errors';
import { dynamo } from '#shared/clients';

// Idempotency-Key support (docs/idempotency.md) on Powertools idempotency, stored in the single table under
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

/** Wraps an operation so repeated calls with the same (org, key) replay the first recorded result. */
export function idempotent<B, C>(operation: string, fn: (call: IdempotentCall<B, C>) => Promise<Recorded>) {
  const config = new IdempotencyConfig({
    eventKeyJmesPath: '[org_id, key]',
    payloadValidationJmesPath: 'body',
    expiresAfterSeconds: IDEMPOTENCY_TTL_SECONDS,
    throwOnNoIdempotencyKey: true,
    responseHook: (response) => ({ ...(response as object), replayed: true }),
  });
  const persistenceStore = new DynamoDBPersistenceLayer({
    tableName: TABLE_NAME,
    keyAttr: 'pk',
    sortKeyAttr: 'sk',
    staticPkValue: keys.idempotency(operation).pk,
    expiryAttr: 'ttl',
    awsSdkV3Client: dynamo,
  });
  const wrapped = makeIdempotent(fn, { persistenceStore, config, keyPrefix: operation });
  return async (call: IdempotentCall<B, C>, context: Context): Promise<Recorded> => {
    config.registerLambdaContext(context);
    try {
      // Canonical key order: the same body sent with its fields in another order is the same request.
      return await wrapped({ ...call, body: canonical(call.body) as B });
    } catch (err) {
      if (err instanceof IdempotencyAlreadyInProgressError) {
        throw new ApiError(
          'idempotency_in_progress',
          'A request with this Idempotency-Key is still running; retry shortly with the same key.',
        );
      }
      if (err instanceof IdempotencyValidationError) {
        throw new ApiError(
          'idempotency_key_reused',
          'This Idempotency-Key was used with a different request body.',
        );
      }
      throw err;
    }
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
