// DynamoDB condition and update expressions, evaluated over plain (unmarshalled) items: just the
// grammar Herald and Powertools use — comparisons, AND/OR/NOT, IN, attribute_exists,
// attribute_not_exists, begins_with; SET (with +/-, if_not_exists, list_append), REMOVE, ADD, DELETE
// on nested paths. Missing attributes compare false, as DynamoDB does.

export type Item = Record<string, unknown>;
export type Names = Record<string, string> | undefined;
export type Values = Record<string, unknown> | undefined;

type Token = { t: 'name' | 'value' | 'ident' | 'punct'; v: string };

const KEYWORDS = new Set(['AND', 'OR', 'NOT', 'IN', 'SET', 'REMOVE', 'ADD', 'DELETE']);

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

type Path = string[];
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
    const parts: string[] = [];
    for (;;) {
      const t = this.tokens[this.i++];
      if (!t || (t.t !== 'name' && t.t !== 'ident'))
        throw new Error(`expression: expected a path at ${JSON.stringify(t)}`);
      const part = t.t === 'name' ? this.names?.[t.v] : t.v;
      if (part === undefined) throw new Error(`expression: no name for ${t.v}`);
      parts.push(part);
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
    const op = this.tokens[this.i++];
    const right = this.operand();
    return (item) => compare(op?.v ?? '', left(item), right(item));
  }

  private operand(): Operand {
    const t = this.peek();
    if (t?.t === 'value') {
      const v = this.value();
      return () => v;
    }
    const p = this.path();
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

export function at(item: Item | undefined, path: Path): unknown {
  let cur: unknown = item;
  for (const part of path) {
    if (cur === null || typeof cur !== 'object' || cur instanceof Set) return undefined;
    cur = (cur as Record<string, unknown>)[part];
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

function compare(op: string, a: unknown, b: unknown): boolean {
  if (op === '<>') return a === undefined || b === undefined || !same(a, b);
  if (a === undefined || b === undefined) return false;
  if (op === '=') return same(a, b);
  if (typeof a !== typeof b || (typeof a !== 'number' && typeof a !== 'string')) return false;
  const x = a as number | string;
  const y = b as number | string;
  if (op === '<') return x < y;
  if (op === '<=') return x <= y;
  if (op === '>') return x > y;
  if (op === '>=') return x >= y;
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
  let cur = item;
  for (const part of path.slice(0, -1)) {
    const next = cur[part];
    if (next === null || typeof next !== 'object') cur[part] = {};
    cur = cur[part] as Item;
  }
  cur[path.at(-1) as string] = value;
}

function removeAt(item: Item, path: Path): void {
  const parent = at(item, path.slice(0, -1));
  if (parent && typeof parent === 'object') delete (parent as Item)[path.at(-1) as string];
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
        writes.push((next) => removeAt(next, path));
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
  return { next, touched };
}
