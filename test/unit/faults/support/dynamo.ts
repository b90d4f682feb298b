import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { condition, type Item, type Names, update, type Values } from '../../support/expressions.ts';

// A DynamoDB table behind the SDK's HTTP layer. It replaces the request handler of the production
// client (`#shared/clients`), so everything above the socket runs for real: marshalling, the
// document client, the SDK's retry strategy (maxAttempts 3) and its error deserialization. Faults
// are injected per operation, either before DynamoDB acts (throttling, a 500, a reset connection:
// nothing was written) or after it acted (the write is applied, then the answer is lost: the SDK
// retries a write that already happened). Successful writes are kept as a stream (NEW_AND_OLD_IMAGES)
// for the stream relay.

export type { Item } from '../../support/expressions.ts';

export type Operation =
  | 'GetItem'
  | 'PutItem'
  | 'UpdateItem'
  | 'DeleteItem'
  | 'BatchGetItem'
  | 'TransactWriteItems'
  | 'Query';

export type FaultKind =
  | 'ProvisionedThroughputExceededException'
  | 'ThrottlingException'
  | 'RequestLimitExceeded'
  | 'InternalServerError'
  | 'ECONNRESET';

/** What a fault matcher sees of a request: the operation and its items/keys, unmarshalled. */
export interface RequestView {
  op: Operation;
  /** PutItem's item; the items a transaction puts. */
  items: Item[];
  /** GetItem/UpdateItem/DeleteItem's key; the keys a transaction updates, deletes or checks. */
  keys: Item[];
  raw: Record<string, unknown>;
}

export interface Fault {
  /** One operation, or several (a post's writes are PutItem or UpdateItem: POST_WRITES). */
  op: Operation | readonly Operation[];
  kind: FaultKind;
  /** `before` (default): refused, nothing applied. `after`: applied, then the answer was lost. */
  when?: 'before' | 'after';
  /** How many requests to fail (default 1; Infinity for an outage until `heal()`). */
  times?: number;
  match?: (req: RequestView) => boolean;
}

export interface Call {
  op: Operation;
  /** The SDK's attempt number of this request (1, 2, 3). */
  attempt: number;
  outcome: 'ok' | FaultKind | 'ConditionalCheckFailed' | 'TransactionCanceled';
  applied: boolean;
  view: RequestView;
}

type Av = Record<string, AttributeValue>;

class DynamoError extends Error {
  constructor(
    readonly type: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(type);
  }
}

const idOf = (k: Item) => `${String(k.pk)}\u0000${String(k.sk)}`;
const keyOf = (item: Item) => ({ pk: item.pk, sk: item.sk });
const plain = (av: unknown): Item => (av ? unmarshall(av as Av) : {});
const wire = (item: Item): Av => marshall(item, { removeUndefinedValues: true }) as Av;
const conditionFailed = (item: Item | undefined, returnOld: unknown) =>
  new DynamoError('ConditionalCheckFailedException', {
    message: 'The conditional request failed',
    ...(returnOld === 'ALL_OLD' && item ? { Item: wire(item) } : {}),
  });

const FAULTS: Record<FaultKind, { status: number; type: string } | null> = {
  ProvisionedThroughputExceededException: {
    status: 400,
    type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
  },
  ThrottlingException: { status: 400, type: 'com.amazon.coral.availability#ThrottlingException' },
  RequestLimitExceeded: { status: 400, type: 'com.amazonaws.dynamodb.v20120810#RequestLimitExceeded' },
  InternalServerError: { status: 500, type: 'com.amazonaws.dynamodb.v20120810#InternalServerError' },
  ECONNRESET: null,
};

interface HttpRequestLike {
  headers: Record<string, string>;
  body?: unknown;
}

export class FakeDynamo {
  readonly items = new Map<string, Item>();
  readonly calls: Call[] = [];
  private faults: Array<Fault & { left: number }> = [];
  private interposed: Array<{ match: (req: RequestView) => boolean; act: () => void; left: number }> = [];
  private readonly tokens = new Set<string>();
  private stream: DynamoDBRecord[] = [];
  private sequence = 1000;

  /** Puts the table behind `client` (and every DynamoDBDocumentClient built from it). */
  install(client: DynamoDBClient): void {
    const handler = {
      handle: (request: HttpRequestLike) => this.handle(request),
      updateHttpClientConfig: () => undefined,
      httpHandlerConfigs: () => ({}),
      destroy: () => undefined,
    };
    (client.config as unknown as { requestHandler: unknown }).requestHandler = handler;
  }

  reset(items: Item[] = []): void {
    this.items.clear();
    for (const i of items) this.items.set(idOf(i), structuredClone(i));
    this.calls.length = 0;
    this.faults = [];
    this.interposed = [];
    this.tokens.clear();
    this.stream = [];
  }

  seed(...items: Item[]): void {
    for (const i of items) this.items.set(idOf(i), structuredClone(i));
  }

  get<T extends Item = Item>(key: { pk: string; sk: string }): T | undefined {
    const found = this.items.get(idOf(key));
    return found ? (structuredClone(found) as T) : undefined;
  }

  /** Items whose sort key starts with `prefix` (e.g. every `POST#` of an org). */
  all<T extends Item = Item>(skPrefix: string): T[] {
    return [...this.items.values()]
      .filter((i) => String(i.sk).startsWith(skPrefix))
      .map((i) => structuredClone(i) as T);
  }

  fail(fault: Fault): void {
    this.faults.push({ ...fault, left: fault.times ?? 1 });
  }

  /**
   * Runs `act` just before DynamoDB handles each request `match` selects (up to `times`): another
   * writer's change landing between a request's read and its write.
   */
  interpose(match: (req: RequestView) => boolean, act: () => void, times = Number.POSITIVE_INFINITY): void {
    this.interposed.push({ match, act, left: times });
  }

  /** Ends every injected fault (the outage is over). */
  heal(): void {
    this.faults = [];
  }

  callsOf(op: Operation | readonly Operation[], match?: (c: Call) => boolean): Call[] {
    return this.calls.filter((c) => ops(op).includes(c.op) && (!match || match(c)));
  }

  /** Stream records of the writes since the last call, in commit order. */
  takeStream(): DynamoDBRecord[] {
    const out = this.stream;
    this.stream = [];
    return out;
  }

  // ---- the wire -------------------------------------------------------------------------------

  private async handle(request: HttpRequestLike) {
    const op = String(request.headers['x-amz-target']).split('.')[1] as Operation;
    const raw = JSON.parse(new TextDecoder().decode(request.body as Uint8Array)) as Record<string, unknown>;
    const attempt = Number(/attempt=(\d+)/.exec(request.headers['amz-sdk-request'] ?? '')?.[1] ?? 1);
    const view = viewOf(op, raw);
    for (const i of this.interposed)
      if (i.left > 0 && i.match(view)) {
        i.left--;
        i.act();
      }
    const fault = this.faults.find(
      (f) => ops(f.op).includes(op) && f.left > 0 && (!f.match || f.match(view)),
    );
    if (fault) {
      fault.left--;
      if (fault.left <= 0) this.faults = this.faults.filter((f) => f !== fault);
    }
    const record = (outcome: Call['outcome'], applied: boolean) =>
      this.calls.push({ op, attempt, outcome, applied, view });
    if (fault && fault.when !== 'after') {
      record(fault.kind, false);
      return this.faultResponse(fault.kind);
    }
    let status = 200;
    let body: Record<string, unknown>;
    try {
      body = this.execute(op, raw);
    } catch (err) {
      if (!(err instanceof DynamoError)) throw err;
      status = 400;
      body = { __type: `com.amazonaws.dynamodb.v20120810#${err.type}`, ...err.body };
    }
    const outcome: Call['outcome'] =
      status === 200
        ? 'ok'
        : body.__type === 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException'
          ? 'TransactionCanceled'
          : 'ConditionalCheckFailed';
    if (fault) {
      record(fault.kind, status === 200);
      return this.faultResponse(fault.kind);
    }
    record(outcome, status === 200 && op !== 'GetItem' && op !== 'BatchGetItem' && op !== 'Query');
    return respond(status, body);
  }

  private faultResponse(kind: FaultKind) {
    const f = FAULTS[kind];
    if (!f) throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' });
    return respond(f.status, { __type: f.type, message: `injected ${kind}` });
  }

  private execute(op: Operation, r: Record<string, unknown>): Record<string, unknown> {
    switch (op) {
      case 'GetItem': {
        const found = this.items.get(idOf(plain(r.Key)));
        return found ? { Item: wire(found) } : {};
      }
      case 'BatchGetItem': {
        const responses: Record<string, Av[]> = {};
        for (const [table, req] of Object.entries(r.RequestItems as Record<string, { Keys: Av[] }>)) {
          responses[table] = req.Keys.flatMap((k) => {
            const found = this.items.get(idOf(plain(k)));
            return found ? [wire(found)] : [];
          });
        }
        return { Responses: responses, UnprocessedKeys: {} };
      }
      case 'PutItem': {
        const item = plain(r.Item);
        this.check(r, keyOf(item));
        this.write(item);
        return {};
      }
      case 'UpdateItem': {
        const key = plain(r.Key);
        const before = this.check(r, key);
        const { next, touched } = update(
          { ...before, ...key },
          String(r.UpdateExpression),
          r.ExpressionAttributeNames as Names,
          values(r),
        );
        this.write(next);
        const rv = r.ReturnValues;
        if (rv === 'ALL_NEW') return { Attributes: wire(next) };
        if (rv === 'ALL_OLD') return before ? { Attributes: wire(before) } : {};
        if (rv === 'UPDATED_NEW')
          return { Attributes: wire(Object.fromEntries([...touched].map((a) => [a, next[a]]))) };
        return {};
      }
      case 'DeleteItem': {
        const key = plain(r.Key);
        const before = this.check(r, key);
        this.remove(key);
        return r.ReturnValues === 'ALL_OLD' && before ? { Attributes: wire(before) } : {};
      }
      case 'TransactWriteItems':
        return this.transact(r);
      case 'Query':
        return this.query(r);
    }
  }

  /** The item at `key` when the request's condition holds on it; ConditionalCheckFailed otherwise. */
  private check(r: Record<string, unknown>, key: Item): Item | undefined {
    const current = this.items.get(idOf(key));
    if (r.ConditionExpression) {
      const holds = condition(
        String(r.ConditionExpression),
        r.ExpressionAttributeNames as Names,
        values(r),
      )(current ?? {});
      if (!holds) throw conditionFailed(current, r.ReturnValuesOnConditionCheckFailure);
    }
    return current ? structuredClone(current) : undefined;
  }

  private transact(r: Record<string, unknown>): Record<string, unknown> {
    const token = r.ClientRequestToken as string | undefined;
    // DynamoDB answers a repeated ClientRequestToken (the SDK's retry of the same call) with success
    // and does not apply it again.
    if (token && this.tokens.has(token)) return {};
    const actions = r.TransactItems as Array<Record<string, Record<string, unknown>>>;
    const reasons = actions.map((a) => {
      const [kind, spec] = Object.entries(a)[0] as [string, Record<string, unknown>];
      const key = kind === 'Put' ? keyOf(plain(spec.Item)) : plain(spec.Key);
      try {
        this.check(spec, key);
        return { Code: 'None' };
      } catch (err) {
        if (!(err instanceof DynamoError)) throw err;
        return { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' };
      }
    });
    if (reasons.some((x) => x.Code !== 'None')) {
      throw new DynamoError('TransactionCanceledException', {
        Message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((x) => x.Code).join(', ')}]`,
        CancellationReasons: reasons,
      });
    }
    for (const a of actions) {
      const [kind, spec] = Object.entries(a)[0] as [string, Record<string, unknown>];
      if (kind === 'Put') this.write(plain(spec.Item));
      else if (kind === 'Delete') this.remove(plain(spec.Key));
      else if (kind === 'Update') {
        const key = plain(spec.Key);
        const before = this.items.get(idOf(key)) ?? {};
        const { next } = update(
          { ...before, ...key },
          String(spec.UpdateExpression),
          spec.ExpressionAttributeNames as Names,
          values(spec),
        );
        this.write(next);
      }
    }
    if (token) this.tokens.add(token);
    return {};
  }

  private query(r: Record<string, unknown>): Record<string, unknown> {
    const names = r.ExpressionAttributeNames as Names;
    const vals = values(r);
    const keyCond = condition(String(r.KeyConditionExpression), names, vals);
    const index = r.IndexName as string | undefined;
    const sortAttr = index ? `${index}sk` : 'sk';
    let rows = [...this.items.values()]
      .filter(keyCond)
      .sort((a, b) => String(a[sortAttr]).localeCompare(String(b[sortAttr])));
    if (r.ScanIndexForward === false) rows.reverse();
    const start = r.ExclusiveStartKey ? idOf(plain(r.ExclusiveStartKey)) : undefined;
    if (start) rows = rows.slice(rows.findIndex((i) => idOf(i) === start) + 1);
    const limit = typeof r.Limit === 'number' ? r.Limit : rows.length;
    const page = rows.slice(0, limit);
    const filter = r.FilterExpression ? condition(String(r.FilterExpression), names, vals) : () => true;
    const last = page.at(-1);
    const lastKey =
      rows.length > limit && last
        ? wire({
            ...keyOf(last),
            ...(index ? { [`${index}pk`]: last[`${index}pk`], [sortAttr]: last[sortAttr] } : {}),
          })
        : undefined;
    const items = page.filter(filter).map(wire);
    return { Items: items, Count: items.length, ...(lastKey ? { LastEvaluatedKey: lastKey } : {}) };
  }

  private write(item: Item): void {
    const id = idOf(item);
    const old = this.items.get(id);
    this.items.set(id, structuredClone(item));
    this.record(old, item);
  }

  private remove(key: Item): void {
    const id = idOf(key);
    const old = this.items.get(id);
    if (!old) return;
    this.items.delete(id);
    this.record(old, undefined);
  }

  private record(old: Item | undefined, next: Item | undefined): void {
    const keyed = (next ?? old) as Item;
    this.sequence += 1;
    this.stream.push({
      eventID: `stream-${this.sequence}`,
      eventName: old && next ? 'MODIFY' : next ? 'INSERT' : 'REMOVE',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'us-east-1',
      eventSourceARN: 'arn:aws:dynamodb:us-east-1:000000000000:table/herald-test/stream/2030',
      dynamodb: {
        ApproximateCreationDateTime: Math.floor(Date.now() / 1000),
        Keys: wire(keyOf(keyed)) as never,
        ...(old ? { OldImage: wire(old) as never } : {}),
        ...(next ? { NewImage: wire(next) as never } : {}),
        SequenceNumber: String(this.sequence).padStart(21, '0'),
        SizeBytes: 100,
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
    });
  }
}

/** The operations that write a post: the whole item (PutItem) or one delivery of it (UpdateItem). */
export const POST_WRITES: readonly Operation[] = ['PutItem', 'UpdateItem'];

const ops = (op: Operation | readonly Operation[]): readonly Operation[] =>
  typeof op === 'string' ? [op] : op;

/**
 * The deliveries a post write carries: a PutItem's item's, or the delivery an UpdateItem sets
 * (writeDelivery's `deliveries.<channel>`). Empty for any other request.
 */
export function deliveriesWritten(v: RequestView): Array<Record<string, unknown>> {
  if (v.op === 'PutItem')
    return Object.values((v.items[0]?.deliveries ?? {}) as Record<string, Record<string, unknown>>);
  if (v.op !== 'UpdateItem' || !v.raw.ExpressionAttributeValues) return [];
  return Object.values(plain(v.raw.ExpressionAttributeValues)).filter(
    (x): x is Record<string, unknown> =>
      typeof x === 'object' &&
      x !== null &&
      typeof (x as { channel_id?: unknown }).channel_id === 'string' &&
      typeof (x as { stage?: unknown }).stage === 'string',
  );
}

function values(r: Record<string, unknown>): Values {
  return r.ExpressionAttributeValues ? plain(r.ExpressionAttributeValues) : undefined;
}

function viewOf(op: Operation, r: Record<string, unknown>): RequestView {
  const items: Item[] = [];
  const keys: Item[] = [];
  if (op === 'PutItem') items.push(plain(r.Item));
  if (op === 'GetItem' || op === 'UpdateItem' || op === 'DeleteItem') keys.push(plain(r.Key));
  if (op === 'TransactWriteItems') {
    for (const a of r.TransactItems as Array<Record<string, Record<string, unknown>>>) {
      const [kind, spec] = Object.entries(a)[0] as [string, Record<string, unknown>];
      if (kind === 'Put') items.push(plain(spec.Item));
      else keys.push(plain(spec.Key));
    }
  }
  return { op, items, keys, raw: r };
}

function respond(status: number, body: Record<string, unknown>) {
  return {
    response: {
      statusCode: status,
      headers: { 'content-type': 'application/x-amz-json-1.0' },
      body: new TextEncoder().encode(JSON.stringify(body)),
    },
  };
}
