import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { Context } from 'aws-lambda';
import { ApiError } from '#core/errors';
import { dynamo } from '#shared/clients';
import { IDEMPOTENCY_TTL_SECONDS, type IdempotentCall, type Recorded } from './idempotency.ts';
import { keys } from './keys.ts';
import { TABLE_NAME } from './table.ts';

// The Powertools side of adapters/idempotency.ts, imported on the first keyed call: records under
// `IDEMPOTENCY#<operation>` in the single table with its TTL attribute, keys scoped per organization.

/** Powertools idempotency over the single table, its errors as problems. */
export function powertoolsIdempotent<B, C>(
  operation: string,
  fn: (call: IdempotentCall<B, C>) => Promise<Recorded>,
) {
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
      return await wrapped(call);
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
