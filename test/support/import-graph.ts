// The import graph of functions/ and the manifest (lib/operations.ts): every static, re-export and
// dynamic import of every module, resolved to files, so the architecture test can check the
// direction of each edge.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');

const ALIASES: Record<string, string> = {
  '#core/': 'functions/core/',
  '#adapters/': 'functions/adapters/',
  '#shared/': 'functions/shared/',
  '#handlers/': 'functions/handlers/',
  '#usecases/': 'functions/usecases/',
  '#lib/': 'lib/',
};

export interface Edge {
  from: string;
  to: string;
  /** The specifier as written. */
  spec: string;
  typeOnly: boolean;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

const IMPORT =
  /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Resolves a specifier to a repository path; packages stay as written (`pkg:<name>`). */
export function resolveSpec(from: string, spec: string): string {
  for (const [alias, dir] of Object.entries(ALIASES)) {
    if (spec.startsWith(alias))
      return `${dir}${spec.slice(alias.length)}${spec.endsWith('.ts') ? '' : '.ts'}`;
  }
  if (spec.startsWith('.')) return relative(ROOT, resolve(ROOT, dirname(from), spec));
  return `pkg:${spec}`;
}

/** The imports of one module's source text (`from` is its repository path). */
export function importsOf(from: string, text: string): Edge[] {
  return [...text.matchAll(IMPORT)].map((m) => {
    const spec = (m[3] ?? m[4]) as string;
    return { from, to: resolveSpec(from, spec), spec, typeOnly: Boolean(m[2]) };
  });
}

/** The manifest: the stack's list of operations, pages, queues and workers, which the runtime reads too. */
export const MANIFEST = 'lib/operations.ts';

/** The one module of functions/ the manifest may import: a leaf of shared words. */
export const VOCABULARY = 'functions/core/vocabulary.ts';

export function importGraph(dir = 'functions'): Edge[] {
  return [...sourceFiles(dir), MANIFEST].flatMap((from) =>
    importsOf(from, readFileSync(join(ROOT, from), 'utf8')),
  );
}

/** The layer of a repository path, lowest first; undefined for packages and files outside them. */
export function layerOf(path: string): Layer | undefined {
  if (path === MANIFEST) return 'manifest';
  const m = /^functions\/(core|shared|adapters|usecases|handlers)\//.exec(path);
  return m?.[1] as Layer | undefined;
}

export type Layer = 'manifest' | 'core' | 'shared' | 'adapters' | 'usecases' | 'handlers';

/**
 * What each layer may import: dependencies point one way, down. The manifest reads only the
 * vocabulary; core and adapters never read the manifest (what they need of it is in the
 * vocabulary), so no cycle can pass through lib/. The runtime's route table, console pages and
 * MCP spec are the manifest's entries: shared, use cases and handlers may read those.
 */
export const MAY_IMPORT: Record<Layer, readonly Layer[]> = {
  manifest: [],
  core: ['core'],
  shared: ['core', 'shared', 'manifest'],
  adapters: ['core', 'shared', 'adapters'],
  usecases: ['core', 'shared', 'adapters', 'usecases', 'manifest'],
  handlers: ['core', 'shared', 'usecases', 'handlers', 'manifest'],
};

/**
 * The layers that may not depend on the AWS SDK, and why. Adapters may (the table, queues, buckets,
 * keys), and so may shared/, whose client modules build each client once per container. A
 * type-only import counts: an SDK type in a use case ties it to the SDK as much as a call does.
 */
export const SDK_REFUSED: Partial<Record<Layer, string>> = {
  core: 'core does no I/O',
  usecases: 'use cases reach AWS through adapters',
  handlers: 'handlers reach AWS through use cases',
};

const SDK = /^pkg:@(aws-sdk|smithy)\//;

/**
 * Edges that break the direction, import modules outside functions/ (lib/ other than the manifest),
 * give the vocabulary or the manifest an import, or give the SDK to a layer refused it.
 */
export function violations(edges: readonly Edge[]): string[] {
  const out: string[] = [];
  for (const e of edges) {
    const from = layerOf(e.from);
    if (from === undefined) continue;
    if (e.from === VOCABULARY) {
      out.push(`${e.from} → ${e.spec} (the vocabulary is a leaf: it imports nothing)`);
      continue;
    }
    if (from === 'manifest') {
      if (e.to !== VOCABULARY) out.push(`${e.from} → ${e.spec} (the manifest imports only ${VOCABULARY})`);
      continue;
    }
    if (e.to.startsWith('pkg:')) {
      const refused = SDK.test(e.to) ? SDK_REFUSED[from] : undefined;
      if (refused) out.push(`${e.from} → ${e.spec} (${refused})`);
      continue;
    }
    const to = layerOf(e.to);
    if (to === undefined) out.push(`${e.from} → ${e.spec} (outside functions/ and the manifest)`);
    else if (!MAY_IMPORT[from].includes(to)) out.push(`${e.from} → ${e.spec} (${from} may not import ${to})`);
  }
  return out;
}

/** Import cycles between modules (strongly connected components of more than one file). */
export function cycles(edges: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) {
    if (e.to.startsWith('pkg:')) continue;
    next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  }
  // Tarjan's algorithm.
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of next.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v) as number, idx.get(w) as number));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) found.push(scc.sort());
    }
  };
  for (const v of next.keys()) if (!idx.has(v)) visit(v);
  return found;
}
