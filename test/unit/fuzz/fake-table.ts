import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { condition, type Item } from '../support/expressions.ts';

// A small in-memory DynamoDB table for the fuzz tests: it evaluates the condition expressions the
// adapters write with the unit tests' shared evaluator (test/unit/support/expressions.ts), so a
// conditional write that would fail in DynamoDB fails here too, and a snapshot before and after a
// request tells whether the request changed anything.
//
// Updates are not interpreted: an applied UpdateItem marks its item with a write counter, which is
// all the fuzz oracle needs (any applied update is a change).

export type { Item } from '../support/expressions.ts';
export type Key = Record<string, unknown>;

interface ExpressionInput {
  ConditionExpression?: string | undefined;
  ExpressionAttributeNames?: Record<string, string> | undefined;
  ExpressionAttributeValues?: Record<string, unknown> | undefined;
}

export class UnsupportedExpression extends Error {
  override readonly name = 'UnsupportedExpression';
}

const idOf = (key: Key) => `${String(key.pk)}\u0000${String(key.sk)}`;
const keyOf = (item: Item): Key => ({ pk: item.pk, sk: item.sk });

/** Evaluates a condition expression against `item` (undefined: no such item); none always holds. */
function holds(input: ExpressionInput, item: Item | undefined): boolean {
  if (!input.ConditionExpression) return true;
  return condition(
    input.ConditionExpression,
    input.ExpressionAttributeNames,
    input.ExpressionAttributeValues,
  )(item ?? {});
}

// ---- the table ---------------------------------------------------------------------------------------

export interface WriteAttempt {
  kind: 'Put' | 'Update' | 'Delete' | 'ConditionCheck' | 'BatchPut' | 'BatchDelete';
  key: Key;
  applied: boolean;
  condition?: string | undefined;
}

export interface PutSpec extends ExpressionInput {
  Item: Item;
}
export interface KeySpec extends ExpressionInput {
  Key: Key;
}
export type TransactSpec = {
  Put?: PutSpec;
  Update?: KeySpec;
  Delete?: KeySpec;
  ConditionCheck?: KeySpec;
};

const conditionFailed = () =>
  new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });

export class FakeTable {
  private items = new Map<string, Item>();
  private seed: Map<string, Item>;
  /** Every write the code sent since the last reset, applied or refused by its condition. */
  attempts: WriteAttempt[] = [];
  private writes = 0;

  constructor(seed: Item[]) {
    this.seed = new Map(seed.map((it) => [idOf(keyOf(it)), structuredClone(it)]));
    this.reset();
  }

  /** Back to the seeded items, with no recorded attempts. */
  reset(): void {
    this.items = new Map([...this.seed].map(([k, v]) => [k, structuredClone(v)]));
    this.attempts = [];
  }

  /** A canonical text of the whole table, for before/after comparisons. */
  snapshot(): string {
    return JSON.stringify([...this.items].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }

  get(key: Key): Item | undefined {
    const found = this.items.get(idOf(key));
    return found ? structuredClone(found) : undefined;
  }

  /** Items whose attributes match a `a = :v [AND begins_with(b, :w)]` key condition, sorted. */
  query(input: {
    KeyConditionExpression?: string | undefined;
    ExpressionAttributeNames?: Record<string, string> | undefined;
    ExpressionAttributeValues?: Record<string, unknown> | undefined;
    ScanIndexForward?: boolean | undefined;
    Limit?: number | undefined;
  }): Item[] {
    const expr = input.KeyConditionExpression ?? '';
    const hash = /^([#\w]+) = (:\w+)/.exec(expr);
    if (!hash?.[1] || !hash[2]) throw new UnsupportedExpression(`unsupported key condition ${expr}`);
    const names = input.ExpressionAttributeNames ?? {};
    const hashAttr = hash[1].startsWith('#') ? names[hash[1]] : hash[1];
    if (hashAttr === undefined) throw new UnsupportedExpression(`unknown attribute name ${hash[1]}`);
    const sortAttr = hashAttr === 'pk' ? 'sk' : `${hashAttr.replace(/pk$/, '')}sk`;
    const matches = [...this.items.values()].filter(condition(expr, names, input.ExpressionAttributeValues));
    matches.sort((a, b) => String(a[sortAttr]).localeCompare(String(b[sortAttr])));
    if (input.ScanIndexForward === false) matches.reverse();
    return matches.slice(0, input.Limit ?? matches.length).map((it) => structuredClone(it));
  }

  private check(kind: WriteAttempt['kind'], key: Key, spec: ExpressionInput): boolean {
    const ok = holds(spec, this.items.get(idOf(key)));
    this.attempts.push({ kind, key, applied: ok, condition: spec.ConditionExpression });
    return ok;
  }

  private apply(kind: 'Put' | 'Update' | 'Delete', key: Key, item?: Item): void {
    const id = idOf(key);
    if (kind === 'Delete') this.items.delete(id);
    else if (kind === 'Put' && item) this.items.set(id, structuredClone(item));
    else this.items.set(id, { ...(this.items.get(id) ?? key), __fuzz_writes: ++this.writes });
  }

  put(spec: PutSpec): void {
    const key = keyOf(spec.Item);
    if (!this.check('Put', key, spec)) throw conditionFailed();
    this.apply('Put', key, spec.Item);
  }

  /** Applies an UpdateItem; answers the item as it is after the write (ALL_NEW). */
  update(spec: KeySpec): Item {
    if (!this.check('Update', spec.Key, spec)) throw conditionFailed();
    this.apply('Update', spec.Key);
    return this.get(spec.Key) ?? {};
  }

  delete(spec: KeySpec): void {
    if (!this.check('Delete', spec.Key, spec)) throw conditionFailed();
    this.apply('Delete', spec.Key);
  }

  /** All or nothing, like TransactWriteItems: any failed condition cancels every item. */
  transact(specs: TransactSpec[]): void {
    const plan = specs.map((s) => {
      if (s.Put) return { kind: 'Put' as const, key: keyOf(s.Put.Item), spec: s.Put, item: s.Put.Item };
      if (s.Update) return { kind: 'Update' as const, key: s.Update.Key, spec: s.Update };
      if (s.Delete) return { kind: 'Delete' as const, key: s.Delete.Key, spec: s.Delete };
      if (s.ConditionCheck)
        return { kind: 'ConditionCheck' as const, key: s.ConditionCheck.Key, spec: s.ConditionCheck };
      throw new UnsupportedExpression('unknown transaction item');
    });
    const results = plan.map((p) => holds(p.spec, this.items.get(idOf(p.key))));
    const ok = results.every(Boolean);
    plan.forEach((p) => {
      this.attempts.push({ kind: p.kind, key: p.key, applied: ok, condition: p.spec.ConditionExpression });
    });
    if (!ok) {
      throw new TransactionCanceledException({
        message: 'Transaction cancelled',
        $metadata: {},
        CancellationReasons: results.map((r) => ({ Code: r ? 'None' : 'ConditionalCheckFailed' })),
      });
    }
    for (const p of plan) {
      if (p.kind !== 'ConditionCheck') this.apply(p.kind, p.key, 'item' in p ? p.item : undefined);
    }
  }

  batchWrite(requests: Array<{ PutRequest?: { Item: Item }; DeleteRequest?: { Key: Key } }>): void {
    for (const r of requests) {
      if (r.PutRequest) {
        const key = keyOf(r.PutRequest.Item);
        this.attempts.push({ kind: 'BatchPut', key, applied: true });
        this.apply('Put', key, r.PutRequest.Item);
      } else if (r.DeleteRequest) {
        this.attempts.push({ kind: 'BatchDelete', key: r.DeleteRequest.Key, applied: true });
        this.apply('Delete', r.DeleteRequest.Key);
      }
    }
  }
}
