import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { ddb } from '#shared/clients';
import { requireEnv } from '#shared/config';

export const TABLE_NAME = requireEnv('TABLE_NAME');

export type Key = { pk: string; sk: string };
export type Item = Record<string, unknown>;

const KEY_ATTRS = new Set(['pk', 'sk', 'gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk', 'entity', 'ttl', 'write_id']);

/** The record without its table bookkeeping (keys, entity tag, TTL, write id). */
export function fromItem<T>(item: Item): T {
  const out: Item = {};
  for (const [k, v] of Object.entries(item)) if (!KEY_ATTRS.has(k)) out[k] = v;
  return out as T;
}

/**
 * Strongly consistent BatchGetItem: up to 100 keys per request, chunks in parallel, so it is one
 * round trip on the critical path (plus retries of unprocessed keys only when DynamoDB sheds load).
 * Results come back in the order of `keyList`; null where missing.
 */
export async function batchGet(keyList: Key[]): Promise<Array<Item | null>> {
  const found = new Map<string, Item>();
  const id = (k: { pk: unknown; sk: unknown }) => `${k.pk}\u0000${k.sk}`;
  const unique = [...new Map(keyList.map((k) => [id(k), k])).values()];
  const chunks: Key[][] = [];
  for (let i = 0; i < unique.length; i += 100) chunks.push(unique.slice(i, i + 100));
  await Promise.all(
    chunks.map(async (chunk) => {
      let pending = chunk;
      for (let attempt = 0; pending.length > 0; attempt++) {
        if (attempt > 6) throw new Error('BatchGetItem kept returning unprocessed keys');
        if (attempt > 0) await new Promise((r) => setTimeout(r, 25 * 2 ** attempt));
        const res = await ddb.send(
          new BatchGetCommand({ RequestItems: { [TABLE_NAME]: { Keys: pending, ConsistentRead: true } } }),
        );
        for (const item of res.Responses?.[TABLE_NAME] ?? []) found.set(id(item as Key), item);
        pending = (res.UnprocessedKeys?.[TABLE_NAME]?.Keys as Key[] | undefined) ?? [];
      }
    }),
  );
  return keyList.map((k) => found.get(id(k)) ?? null);
}

/** True when a transaction was cancelled by a failed condition (a concurrent change). */
export function isConditionFailure(err: unknown): boolean {
  if (err instanceof TransactionCanceledException) {
    return (err.CancellationReasons ?? []).some((r) => r.Code === 'ConditionalCheckFailed');
  }
  return (err as { name?: string } | null)?.name === 'ConditionalCheckFailedException';
}

/**
 * Which items of a cancelled transaction failed their condition (indexes into TransactItems), so
 * the caller can say which rule refused it; undefined for any other error.
 */
export function failedConditions(err: unknown): number[] | undefined {
  if (!(err instanceof TransactionCanceledException)) return undefined;
  const failed = (err.CancellationReasons ?? []).flatMap((r, i) =>
    r.Code === 'ConditionalCheckFailed' ? [i] : [],
  );
  return failed.length ? failed : undefined;
}

/** Errors DynamoDB answers before it acts on a write: an attempt answered with one applied nothing. */
const REFUSED = new Set([
  'ConditionalCheckFailedException',
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'TransactionConflictException',
  'ValidationException',
]);
/** Failed writes all of whose SDK attempts were refused before DynamoDB acted. */
const neverAppliedErrors = new WeakSet<object>();

/**
 * Sends a single-item write, noting how each SDK attempt ended, so that when it fails
 * `neverApplied(err)` can say whether any attempt can have applied it: a refusal (a failed
 * condition, throttling) applied nothing; a lost answer (a reset connection, a timeout, a 500)
 * may hide an applied write. The last error alone cannot tell: an applied attempt whose answer was
 * lost may be followed by throttled retries.
 */
export async function sendWrite(command: {
  middlewareStack: { add: (middleware: never, options: never) => void };
}): Promise<void> {
  let attempts = 0;
  let unknown = false;
  const attempt =
    (next: (args: unknown) => Promise<unknown>) =>
    async (args: unknown): Promise<unknown> => {
      attempts++;
      try {
        return await next(args);
      } catch (err) {
        if (!REFUSED.has((err as { name?: string } | null)?.name ?? '')) unknown = true;
        throw err;
      }
    };
  // The deserialize step runs inside the retry loop: once per attempt.
  command.middlewareStack.add(attempt as never, { step: 'deserialize', priority: 'high' } as never);
  try {
    await ddb.send(command as never);
  } catch (err) {
    if (attempts > 0 && !unknown && typeof err === 'object' && err !== null) neverAppliedErrors.add(err);
    throw err;
  }
}

/** True when `err` failed a sendWrite all of whose attempts were refused before DynamoDB acted. */
export function neverApplied(err: unknown): boolean {
  return typeof err === 'object' && err !== null && neverAppliedErrors.has(err);
}

/**
 * The item a failed condition returned (ReturnValuesOnConditionCheckFailure: ALL_OLD), as a plain
 * object: the document client leaves it in wire format. Undefined for any other error. Lets a
 * writer recognise its own write that an earlier SDK attempt applied but whose answer was lost.
 */
export function conditionFailureItem(err: unknown): Item | undefined {
  if (!isConditionFailure(err)) return undefined;
  const item = (err as { Item?: Record<string, unknown> }).Item;
  if (!item) return undefined;
  const wire = typeof item.pk === 'object' && item.pk !== null;
  return wire ? (unmarshall(item as never) as Item) : item;
}

/**
 * `#f0 = :v0, #f1 = :v1, …` for an UpdateItem's SET, adding the placeholders to `names` and
 * `values` (so attribute names never collide with reserved words).
 */
export function setClause(
  fields: Record<string, unknown>,
  names: Record<string, string>,
  values: Record<string, unknown>,
): string {
  return Object.entries(fields)
    .map(([k, v], i) => {
      names[`#f${i}`] = k;
      values[`:v${i}`] = v;
      return `#f${i} = :v${i}`;
    })
    .join(', ');
}

type QueryInput = Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey'>;

/** A query's pages, following LastEvaluatedKey: the one paginated Query loop of the adapters. */
export async function* pages(input: QueryInput) {
  let start: Record<string, unknown> | undefined;
  do {
    const res = await ddb.send(
      new QueryCommand({ ...input, TableName: TABLE_NAME, ExclusiveStartKey: start }),
    );
    yield res;
    start = res.LastEvaluatedKey;
  } while (start);
}

/** Every item a query matches. */
export async function queryAll(input: QueryInput): Promise<Item[]> {
  const out: Item[] = [];
  for await (const page of pages(input)) out.push(...((page.Items ?? []) as Item[]));
  return out;
}

/** How many items a query matches (Select: COUNT, every page). */
export async function countAll(input: QueryInput): Promise<number> {
  let count = 0;
  for await (const page of pages({ ...input, Select: 'COUNT' })) count += page.Count ?? 0;
  return count;
}

/**
 * One page of a query, newest first: at most `limit` items after `after` (an item's key), and
 * whether another page exists (one extra item is read to tell, not a second request).
 */
export async function queryPage<T>(
  input: QueryInput,
  limit: number,
  after: Record<string, unknown> | undefined,
): Promise<{ items: T[]; hasMore: boolean }> {
  const res = await ddb.send(
    new QueryCommand({
      ScanIndexForward: false,
      ...input,
      TableName: TABLE_NAME,
      Limit: limit + 1,
      ExclusiveStartKey: after,
    }),
  );
  const items = res.Items ?? [];
  return { items: items.slice(0, limit).map((i) => fromItem<T>(i)), hasMore: items.length > limit };
}

/** Runs a conditional write; null when its condition failed (someone else changed the item). */
export async function ifConditionHolds<T>(write: () => Promise<T>): Promise<T | null> {
  try {
    return await write();
  } catch (err) {
    if (isConditionFailure(err)) return null;
    throw err;
  }
}

/** A conditional UpdateItem: false when its condition failed (someone else changed the item). */
export async function updateIf(input: Omit<UpdateCommandInput, 'TableName'>): Promise<boolean> {
  try {
    await ddb.send(new UpdateCommand({ ...input, TableName: TABLE_NAME }));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/**
 * Moves a cursor item's `through` forward to `to` (never back: runs that overlap may finish out of
 * order); a move that would go back writes nothing. `also`: attributes written with the move.
 */
export function advanceThrough(
  key: Key,
  entity: string,
  to: number | string,
  also: Readonly<Record<string, number | string>> = {},
): Promise<boolean> {
  const extra = Object.keys(also);
  return updateIf({
    Key: key,
    UpdateExpression: `SET #through = :t, entity = :e${extra.map((_, i) => `, #a${i} = :a${i}`).join('')}`,
    ConditionExpression: 'attribute_not_exists(#through) OR #through < :t',
    ExpressionAttributeNames: {
      '#through': 'through',
      ...Object.fromEntries(extra.map((k, i) => [`#a${i}`, k])),
    },
    ExpressionAttributeValues: {
      ':t': to,
      ':e': entity,
      ...Object.fromEntries(extra.map((k, i) => [`:a${i}`, also[k]])),
    },
  });
}

export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** A TransactWriteItems that is all or nothing: false when a condition failed (nothing written). */
export async function transactIf(
  items: NonNullable<TransactWriteCommandInput['TransactItems']>,
): Promise<boolean> {
  try {
    await ddb.send(new TransactWriteCommand({ TransactItems: items }));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}
