import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';

// A small in-memory DynamoDB table for the fuzz tests: it evaluates the condition expressions the
// adapters write (AND/OR/NOT, parentheses, attribute_exists/attribute_not_exists/begins_with,
// comparisons and IN), so a conditional write that would fail in DynamoDB fails here too, and a
// snapshot before and after a request tells whether the request changed anything.
//
// Updates are not interpreted: an applied UpdateItem marks its item with a write counter, which is
// all the fuzz oracle needs (any applied update is a change).

export type Item = Record<string, unknown>;
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

// ---- condition expressions -------------------------------------------------------------------------

type Token = { t: 'id'; v: string } | { t: 'val'; v: string } | { t: 'op'; v: string };

function tokenize(expr: string): Token[] {
  const out: Token[] = [];
  const re = /\s*(?:(<>|<=|>=|=|<|>|\(|\)|,)|(:[A-Za-z0-9_]+)|([#A-Za-z_][#A-Za-z0-9_.[\]]*))/y;
  let pos = 0;
  while (pos < expr.length) {
    if (/^\s*$/.test(expr.slice(pos))) break;
    re.lastIndex = pos;
    const m = re.exec(expr);
    if (!m) throw new UnsupportedExpression(`cannot tokenize condition at ${pos}: ${expr}`);
    if (m[1]) out.push({ t: 'op', v: m[1] });
    else if (m[2]) out.push({ t: 'val', v: m[2] });
    else if (m[3]) out.push({ t: 'id', v: m[3] });
    pos = re.lastIndex;
  }
  return out;
}

function resolvePath(path: string, names: Record<string, string>): string[] {
  return path.split('.').map((part) => {
    const name = part.startsWith('#') ? names[part] : part;
    if (name === undefined) throw new UnsupportedExpression(`unknown attribute name ${part}`);
    return name;
  });
}

function valueAt(item: Item | undefined, path: string[]): unknown {
  let cur: unknown = item;
  for (const p of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[p];
  }
  return cur;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function compare(op: string, a: unknown, b: unknown): boolean {
  if (op === '=') return a !== undefined && same(a, b);
  if (op === '<>') return a !== undefined && !same(a, b);
  if (a === undefined || b === undefined || typeof a !== typeof b) return false;
  const x = a as number | string;
  const y = b as number | string;
  switch (op) {
    case '<':
      return x < y;
    case '<=':
      return x <= y;
    case '>':
      return x > y;
    case '>=':
      return x >= y;
    default:
      throw new UnsupportedExpression(`unknown comparator ${op}`);
  }
}

/** Evaluates a DynamoDB condition expression against `item` (undefined: no such item). */
export function evaluateCondition(input: ExpressionInput, item: Item | undefined): boolean {
  const expr = input.ConditionExpression;
  if (!expr) return true;
  const names = input.ExpressionAttributeNames ?? {};
  const values = input.ExpressionAttributeValues ?? {};
  const tokens = tokenize(expr);
  let i = 0;
  const peek = () => tokens[i];
  const take = () => {
    const tok = tokens[i++];
    if (!tok) throw new UnsupportedExpression(`unexpected end of condition: ${expr}`);
    return tok;
  };
  const expect = (v: string) => {
    const tok = take();
    if (tok.v !== v) throw new UnsupportedExpression(`expected ${v} in ${expr}`);
  };
  const operand = (): unknown => {
    const tok = take();
    if (tok.t === 'val') {
      if (!(tok.v in values)) throw new UnsupportedExpression(`unknown value ${tok.v}`);
      return values[tok.v];
    }
    if (tok.t === 'id') return valueAt(item, resolvePath(tok.v, names));
    throw new UnsupportedExpression(`unexpected ${tok.v} in ${expr}`);
  };
  const isKeyword = (tok: Token | undefined, word: string) => tok?.t === 'id' && tok.v.toUpperCase() === word;

  function primary(): boolean {
    const tok = peek();
    if (tok?.t === 'op' && tok.v === '(') {
      take();
      const v = orExpr();
      expect(')');
      return v;
    }
    if (isKeyword(tok, 'NOT')) {
      take();
      return !primary();
    }
    if (tok?.t === 'id' && tokens[i + 1]?.v === '(') {
      const fn = take().v;
      take();
      const pathTok = take();
      if (pathTok.t !== 'id') throw new UnsupportedExpression(`bad argument of ${fn} in ${expr}`);
      const path = resolvePath(pathTok.v, names);
      let result: boolean;
      if (fn === 'attribute_exists') result = valueAt(item, path) !== undefined;
      else if (fn === 'attribute_not_exists') result = valueAt(item, path) === undefined;
      else if (fn === 'begins_with') {
        expect(',');
        const prefix = operand();
        const v = valueAt(item, path);
        result = typeof v === 'string' && typeof prefix === 'string' && v.startsWith(prefix);
      } else throw new UnsupportedExpression(`unknown function ${fn} in ${expr}`);
      expect(')');
      return result;
    }
    const left = operand();
    if (isKeyword(peek(), 'IN')) {
      take();
      expect('(');
      const list = [operand()];
      while (peek()?.v === ',') {
        take();
        list.push(operand());
      }
      expect(')');
      return left !== undefined && list.some((v) => same(left, v));
    }
    const op = take();
    if (op.t !== 'op') throw new UnsupportedExpression(`expected a comparator in ${expr}`);
    return compare(op.v, left, operand());
  }
  function andExpr(): boolean {
    let v = primary();
    while (isKeyword(peek(), 'AND')) {
      take();
      const r = primary();
      v = v && r;
    }
    return v;
  }
  function orExpr(): boolean {
    let v = andExpr();
    while (isKeyword(peek(), 'OR')) {
      take();
      const r = andExpr();
      v = v || r;
    }
    return v;
  }
  const result = orExpr();
  if (i !== tokens.length) throw new UnsupportedExpression(`trailing tokens in condition: ${expr}`);
  return result;
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
    const [hashAttr] = resolvePath(hash[1], names);
    const sortAttr = hashAttr === 'pk' ? 'sk' : `${String(hashAttr).replace(/pk$/, '')}sk`;
    const matches = [...this.items.values()].filter((it) =>
      evaluateCondition(
        {
          ConditionExpression: expr,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: input.ExpressionAttributeValues,
        },
        it,
      ),
    );
    matches.sort((a, b) => String(a[sortAttr]).localeCompare(String(b[sortAttr])));
    if (input.ScanIndexForward === false) matches.reverse();
    return matches.slice(0, input.Limit ?? matches.length).map((it) => structuredClone(it));
  }

  private check(kind: WriteAttempt['kind'], key: Key, spec: ExpressionInput): boolean {
    const ok = evaluateCondition(spec, this.items.get(idOf(key)));
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
    const results = plan.map((p) => evaluateCondition(p.spec, this.items.get(idOf(p.key))));
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
