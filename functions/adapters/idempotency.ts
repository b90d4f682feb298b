import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyItemNotFoundError,
  IdempotencyRecordStatus,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { IdempotencyRecord } from '@aws-lambda-powertools/idempotency/persistence';
import { ConditionalCheckFailedException, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { Context } from 'aws-lambda';
import { keys } from '#adapters/keys';
import { TABLE_NAME } from '#adapters/table';
import { ApiError } from '#core/errors';
import { dynamo } from '#shared/clients';

// Idempotency-Key support (docs/api/idempotency.md) on Powertools idempotency, stored in the single table
// with the table's TTL attribute, one partition per organization (`ORG#<org>#IDEMPOTENCY`, sort key
// `<operation>#<hash of org and key>`): one tenant's retries never heat another's, and another
// organization's identical key is another record.
//
// Before this, every organization's records of an operation shared `IDEMPOTENCY#<operation>`. A key
// first used there must still replay after the upgrade, so for a bounded time after this deployment
// first wrote a per-organization record (the switch item, written once) the legacy record is
// consulted too:
// - the first CLAIM_MS: the legacy record is claimed as well (Powertools, nested), so a request still
//   answered by the previous code during the deploy sees the key as used and cannot run it twice;
// - until LEGACY_MS: read (concurrently with the per-organization claim); a live legacy record
//   answers (replay, 409 while in progress, 422 for another body) and is copied to the new record;
// - after that every legacy record has expired (24 h TTL), and nothing reads them again.

export const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;
/** How long the previous code may still answer after the first per-organization record (a deploy). */
export const CLAIM_MS = 15 * 60_000;
/** A legacy record written before the claim window closed has expired by then. */
export const LEGACY_MS = IDEMPOTENCY_TTL_SECONDS * 1000 + CLAIM_MS;
/** Per-organization persistence layers kept per container (a layer is a few small objects). */
const MAX_ORG_LAYERS = 500;
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

type Phase = 'claim' | 'read' | 'done';

/** What the legacy partition has to say about one call; not part of the key or the payload hash. */
interface Legacy {
  phase: Phase | Promise<Phase>;
  /** Started with the per-organization claim when the phase was known to be `read`. */
  lookup?: Promise<IdempotencyRecord | undefined>;
}

type Keyed<B, C> = IdempotentCall<B, C> & { legacy: Legacy };

/** Powertools' JSON type (its commons package is not a dependency of ours). */
type JSONValue = Parameters<DynamoDBPersistenceLayer['getRecord']>[0];

const layerOptions = { tableName: TABLE_NAME, keyAttr: 'pk', sortKeyAttr: 'sk', expiryAttr: 'ttl' };

/** The shared partition of the previous version, read-only but for the claim window. */
class LegacyPersistenceLayer extends DynamoDBPersistenceLayer {
  /** The live record of this call, if any (an expired or abandoned one no longer holds the key). */
  async lookUp(call: object): Promise<IdempotencyRecord | undefined> {
    // Only the key's and the body's paths of the call are read (hashed), as Powertools does.
    const data = call as JSONValue;
    let record: IdempotencyRecord;
    try {
      record = await this._getRecord(this.getHashedIdempotencyKey(data));
    } catch (err) {
      if (err instanceof IdempotencyItemNotFoundError) return undefined;
      throw err;
    }
    if (record.isExpired()) return undefined;
    const abandoned =
      record.getStatus() === IdempotencyRecordStatus.INPROGRESS &&
      record.inProgressExpiryTimestamp !== undefined &&
      record.inProgressExpiryTimestamp < Date.now();
    if (abandoned) return undefined;
    return this.processExistingRecord(record, data); // IdempotencyValidationError for another body
  }
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
  const legacy = new LegacyPersistenceLayer({
    ...layerOptions,
    staticPkValue: keys.legacyIdempotency(operation).pk,
    awsSdkV3Client: dynamo,
  });
  legacy.configure({ config, keyPrefix: operation });
  const claimingLegacy = makeIdempotent(fn, { persistenceStore: legacy, config, keyPrefix: operation });

  const run = async (call: Keyed<B, C>): Promise<Recorded> => {
    const phase = await call.legacy.phase;
    if (phase === 'claim') return claimingLegacy(call);
    if (phase === 'read') {
      const old = await (call.legacy.lookup ?? legacy.lookUp(call));
      if (old?.getStatus() === IdempotencyRecordStatus.INPROGRESS)
        throw new IdempotencyAlreadyInProgressError('in progress under the previous version');
      if (old) return { ...(old.getResponse() as unknown as Recorded), replayed: true };
    }
    return fn(call);
  };

  // One persistence layer per organization (its partition key is fixed per layer), most recent last.
  const layers = new Map<string, (call: Keyed<B, C>) => Promise<Recorded>>();
  const forOrg = (orgId: string) => {
    let wrapped = layers.get(orgId);
    if (wrapped) layers.delete(orgId);
    else {
      const persistenceStore = new DynamoDBPersistenceLayer({
        ...layerOptions,
        staticPkValue: keys.idempotency(orgId).pk,
        awsSdkV3Client: dynamo,
      });
      wrapped = makeIdempotent(run, { persistenceStore, config, keyPrefix: operation });
      if (layers.size >= MAX_ORG_LAYERS) layers.delete(layers.keys().next().value as string);
    }
    layers.set(orgId, wrapped);
    return wrapped;
  };

  return async (call: IdempotentCall<B, C>, context: Context): Promise<Recorded> => {
    config.registerLambdaContext(context);
    // Canonical key order: the same body sent with its fields in another order is the same request.
    const canonicalCall = { ...call, body: canonical(call.body) as B };
    const phase = legacyPhase();
    const lookup = phase === 'read' ? legacy.lookUp(canonicalCall) : undefined;
    lookup?.catch(() => undefined); // unused when the per-organization record answers
    try {
      return await forOrg(call.org_id)({
        ...canonicalCall,
        legacy: { phase, ...(lookup ? { lookup } : {}) },
      });
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

// When the deployment switched to per-organization records (epoch ms), once known; `legacyDone`
// once LEGACY_MS have passed since, for the rest of the container's life.
let switchedAt: number | undefined;
let reading: Promise<number> | undefined;
let legacyDone = false;

function phaseAt(since: number): Phase {
  const age = Date.now() - since;
  if (age >= LEGACY_MS) {
    legacyDone = true;
    return 'done';
  }
  return age < CLAIM_MS ? 'claim' : 'read';
}

/** The phase now; a promise on a container's first keyed call (one read of the switch item). */
function legacyPhase(): Phase | Promise<Phase> {
  if (legacyDone) return 'done';
  if (switchedAt !== undefined) return phaseAt(switchedAt);
  reading ??= readSwitch().then(
    (at) => {
      switchedAt = at;
      return at;
    },
    (err: unknown) => {
      reading = undefined;
      throw err;
    },
  );
  const phase = reading.then(phaseAt);
  phase.catch(() => undefined); // unused when the per-organization record answers; retried next call
  return phase;
}

/** The switch item's time, written now if this is the deployment's first per-organization record. */
async function readSwitch(): Promise<number> {
  const Key = marshall(keys.idempotencySwitch());
  const got = await dynamo.send(new GetItemCommand({ TableName: TABLE_NAME, Key, ConsistentRead: true }));
  if (got.Item?.since?.N) return Number(got.Item.since.N);
  const now = Date.now();
  try {
    await dynamo.send(
      new PutItemCommand({
        TableName: TABLE_NAME,
        Item: { ...Key, since: { N: String(now) }, since_iso: { S: new Date(now).toISOString() } },
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return now;
  } catch (err) {
    // Another container wrote it first: its time is the switch.
    if (err instanceof ConditionalCheckFailedException && err.Item?.since?.N) return Number(err.Item.since.N);
    throw err;
  }
}

/** Forgets the switch time (tests: a fresh container). */
export function clearIdempotencySwitch(): void {
  switchedAt = undefined;
  reading = undefined;
  legacyDone = false;
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
