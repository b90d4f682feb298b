import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { type BuildOptions, build, type Metafile } from 'esbuild';
import { copyConsoleAssetsCommands } from '#lib/console-assets';
import { consolePages, fallback, mcp, operations, workers } from '#lib/operations';
import { BENCH_ENV, fixed, kib, machine, mark, median, packageOf, ROOT, table, today } from './support.ts';

// Cold start, module-init part: every Lambda of the manifest bundled as the CDK bundles it
// (lib/herald-function.ts: esbuild, minified ESM for node22, source maps without sources, the
// createRequire banner, nothing external), then `await import()` of each bundle in fresh Node
// processes — against a floor bundle built in the same run with the same options that only creates
// a DynamoDBClient. Processes run one at a time (2 cores) in rounds over every bundle, the floor
// several times per round, so drift and noise reach the floor and the functions alike.

const run = promisify(execFile);

/** NodejsFunction's bundling options (lib/herald-function.ts), minus the entry and outfile. */
export const HERALD_ESBUILD: BuildOptions = {
  bundle: true,
  platform: 'node',
  target: 'node22',
  format: 'esm',
  minify: true,
  sourcemap: true,
  sourcesContent: false,
  mainFields: ['module', 'main'],
  banner: { js: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);" },
  external: [],
  absWorkingDir: ROOT,
  logLevel: 'silent',
};

/** The profiled builds: minified but for whitespace, so each line belongs to one module. */
const PROFILE_BUILD: BuildOptions = { minify: false, minifyIdentifiers: true, minifySyntax: true };

const FLOOR_SOURCE = `import { DynamoDBClient } from '@aws-sdk/client-dynamodb';\nexport const c = new DynamoDBClient({});\n`;

/** By default, the floor runs after every this many function processes. */
const FLOOR_EVERY = 4;

/** Init target, × the floor's median. */
export const TARGETS = { api: 1.3, heavy: 1.8 } as const;
/** Functions allowed the larger ratio: the MCP server and the media functions. */
export const HEAVY = new Set(['mcpServer', 'createMediaUpload', 'completeMediaUpload']);

export type BundleKind = 'floor' | 'api' | 'public' | 'mcp' | 'worker' | 'console';

export interface PackageBytes {
  name: string;
  bytes: number;
}

export interface BundleResult {
  id: string;
  kind: BundleKind;
  entry: string;
  bytes: number;
  gzipBytes: number;
  /** Module init (ms) of each fresh process, in run order. */
  samples: number[];
  initMs: number;
  /** initMs ÷ the floor's initMs. */
  ratio: number;
  /** Allowed ratio; null: reported without a target (workers, the floor). */
  target: number | null;
  pass: boolean | null;
  /** Bytes in the output by package (ours: `herald`), largest first. */
  packages: PackageBytes[];
  /** Packages with more bytes here than in the floor bundle, by the difference, largest first. */
  overFloor: PackageBytes[];
  /**
   * Misses only: where init CPU goes beyond the floor's, ms per bucket (a package, or V8/Node work
   * such as compiling and the loader), from CPU profiles of a PROFILE_BUILD bundle; largest first.
   */
  initOverFloor?: InitBucket[];
  /** A module loaded on first use (DEFERRED): when, and its load time then (median, ms). */
  deferred?: { when: string; ms: number };
  /** Misses only: the lines of our code that take the most init time. */
  hotLines?: HotLine[];
}

export interface InitBucket {
  name: string;
  ms: number;
}

export interface ColdStartResult {
  machine: string;
  date: string;
  runs: number;
  /** The floor was measured after every this many function processes. */
  floorEvery: number;
  /** Node flags of the measured processes (as Lambda runs them: NODE_OPTIONS=--enable-source-maps). */
  nodeFlags: string[];
  floor: BundleResult;
  functions: BundleResult[];
  /** Least squares over all bundles: init ms ≈ interceptMs + msPerMiB × minified MiB. */
  fit: { interceptMs: number; msPerMiB: number; r2: number };
  buildMs: number;
  /** Profiling the misses' init (PROFILE_BUILD, `profileRuns` profiles each). */
  profileMs: number;
  profileRuns: number;
  measureMs: number;
  durationMs: number;
}

/** A function of the manifest (or the floor) to bundle. */
export interface BundleTarget {
  id: string;
  kind: BundleKind;
  entry: string;
  /** The function's esbuild aliases (the manifest's bundleAliases), as the CDK passes them. */
  alias?: Record<string, string>;
  /** Files the CDK copies next to the bundle after bundling (the console's assets), by the same commands. */
  afterBundling?: (inputDir: string, outputDir: string) => string[];
}

/**
 * Every function of the manifest: the operations, the $default route, the MCP server, the console's
 * pages, the workers.
 */
export function manifestFunctions(): BundleTarget[] {
  return [
    ...operations.map((op) => ({
      id: op.id,
      kind: (op.scope === null ? 'public' : 'api') as BundleKind,
      entry: op.entry,
    })),
    { id: fallback.id, kind: 'public' as const, entry: fallback.entry },
    { id: mcp.id, kind: 'mcp' as const, entry: mcp.entry, alias: mcp.bundleAliases },
    // The assets function reads its files at load from the folder the stack copies next to it
    // (lib/constructs/api.ts): without them its bundle would look for them outside the bundle.
    ...consolePages.map((page) => ({
      id: page.id,
      kind: 'console' as const,
      entry: page.entry,
      ...(page.bundlesAssets ? { afterBundling: copyConsoleAssetsCommands } : {}),
    })),
    ...workers.map((w) => ({ id: w.id, kind: 'worker' as const, entry: w.entry })),
  ];
}

const targetOf = (t: BundleTarget): number | null =>
  t.kind === 'worker' || t.kind === 'floor' ? null : HEAVY.has(t.id) ? TARGETS.heavy : TARGETS.api;

function packagesOf(meta: Metafile): PackageBytes[] {
  const byPackage = new Map<string, number>();
  for (const out of Object.values(meta.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(out.inputs))
      byPackage.set(packageOf(input), (byPackage.get(packageOf(input)) ?? 0) + bytesInOutput);
  }
  return [...byPackage]
    .map(([name, bytes]) => ({ name, bytes }))
    .filter((p) => p.bytes > 0)
    .sort((a, b) => b.bytes - a.bytes);
}

interface Built {
  target: BundleTarget;
  file: string;
  bytes: number;
  gzipBytes: number;
  packages: PackageBytes[];
}

async function bundle(dir: string, t: BundleTarget, overrides: BuildOptions = {}): Promise<Built> {
  const outfile = join(dir, t.id, 'index.mjs');
  const res = await build({
    ...HERALD_ESBUILD,
    ...overrides,
    ...(t.kind === 'floor'
      ? { stdin: { contents: FLOOR_SOURCE, resolveDir: ROOT, sourcefile: '<stdin>', loader: 'js' as const } }
      : overrides.stdin
        ? {}
        : { entryPoints: [join(ROOT, t.entry)] }),
    ...(t.alias ? { alias: t.alias } : {}),
    outfile,
    metafile: true,
  });
  // As NodejsFunction's afterBundling hook runs them: shell commands, repository → bundle folder.
  for (const command of t.afterBundling?.(ROOT, dirname(outfile)) ?? []) await run('sh', ['-c', command]);
  const code = await readFile(outfile);
  return {
    target: t,
    file: outfile,
    bytes: code.length,
    gzipBytes: gzipSync(code, { level: 9 }).length,
    packages: packagesOf(res.metafile),
  };
}

const PROBE = `const t = performance.now();
const m = await import(process.argv[2]);
const ms = performance.now() - t;
if (typeof m.handler !== 'function' && !('c' in m)) throw new Error('the bundle exports no handler');
let deferredMs;
if (typeof m.__deferred === 'function') {
  const d = performance.now();
  await m.__deferred();
  deferredMs = performance.now() - d;
}
process.stdout.write(JSON.stringify({ ms, deferredMs }));
`;

/**
 * Modules a function loads on first use instead of at init, and when that happens: the bench
 * times that first load too (in the same bundle, right after init), so the deferred cost is
 * reported, not hidden.
 */
export const DEFERRED: Record<string, { module: string; when: string }> = {
  mcpServer: { module: 'functions/adapters/lambda-client.ts', when: 'the first tool call (tools/call)' },
  consoleSignIn: { module: '@simplewebauthn/server', when: 'the first sign-in ceremony' },
  consoleEnroll: { module: '@simplewebauthn/server', when: 'the first enrollment ceremony' },
  consolePasskeys: { module: '@simplewebauthn/server', when: 'the first passkey added' },
  consoleMembers: { module: '@aws-sdk/client-sesv2', when: 'the first invitation e-mailed' },
  deliveryWorker: { module: 'functions/adapters/html-parser.ts', when: 'the first link card read' },
};

/** A DEFERRED module as an import specifier: our files by path, packages by name. */
const specifierOf = (module: string) => (module.startsWith('functions/') ? join(ROOT, module) : module);

/**
 * Module init of `file` in a fresh process, and the first load of the bundle's `__deferred` module
 * when it has one (ms); a bundle that throws at load fails the bench.
 */
async function initProbe(
  probe: string,
  file: string,
  flags: string[],
  id: string,
): Promise<{ ms: number; deferredMs?: number }> {
  try {
    const { stdout } = await run(process.execPath, [...flags, probe, pathToFileURL(file).href], {
      env: { ...BENCH_ENV, PATH: process.env.PATH ?? '' },
      cwd: join(file, '..'),
      timeout: 30_000,
    });
    return JSON.parse(stdout) as { ms: number; deferredMs?: number };
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`cold-start: the ${id} bundle failed at load:\n${e.stderr || e.message}`);
  }
}

function leastSquares(points: Array<[number, number]>): ColdStartResult['fit'] {
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxy = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  const syy = points.reduce((s, [, y]) => s + (y - my) ** 2, 0);
  const slope = sxx ? sxy / sxx : 0;
  return { interceptMs: my - slope * mx, msPerMiB: slope, r2: sxx && syy ? sxy ** 2 / (sxx * syy) : 0 };
}

// ---- where init time goes: CPU profiles of a build that keeps whitespace ---------------------------

/** The source of the bundle's lines before its first module: esbuild's runtime helpers. */
const HELPERS = '(esbuild runtime helpers)';

/** For each line of a whitespace-kept esbuild bundle, the source it came from (esbuild's `// path` comments). */
function lineSources(code: string): string[] {
  let current = HELPERS;
  return code.split('\n').map((line) => {
    // Packages may sit outside the repository (a worktree's node_modules linked to another
    // checkout's): esbuild names them by a relative path, `../main/node_modules/…`.
    const m = /^\/\/ ((?:\S*node_modules|functions|lib|bin)\/\S+)$/.exec(line);
    if (m?.[1]) current = m[1];
    return current;
  });
}

/** A package, or for our own code the file (`functions/core/contracts.ts`). */
const bucketOf = (source: string) => (source.includes('node_modules/') ? packageOf(source) : source);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
  positionTicks?: Array<{ line: number; ticks: number }>;
}

/**
 * A profile's samples, in ms, by bucket (a package of the bundle, or the V8/Node work around it),
 * and the samples of our own code by line of the bundle.
 */
function initBuckets(
  profile: { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[] },
  bundleUrl: string,
  sources: string[],
): { buckets: Map<string, number>; ownLines: Map<number, number> } {
  const msPerSample = (profile.endTime - profile.startTime) / 1000 / Math.max(1, profile.samples.length);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const total = (n: ProfileNode): number =>
    (n.hitCount ?? 0) + (n.children ?? []).reduce((s, c) => s + total(byId.get(c) as ProfileNode), 0);
  const out = new Map<string, number>();
  const ownLines = new Map<number, number>();
  const add = (bucket: string, hits: number, line?: number) => {
    if (!hits) return;
    out.set(bucket, (out.get(bucket) ?? 0) + hits * msPerSample);
    if (line !== undefined && OWN.test(bucket))
      ownLines.set(line, (ownLines.get(line) ?? 0) + hits * msPerSample);
  };
  const sourceAt = (line: number) => {
    const source = sources[line] ?? '';
    return source.startsWith('(') ? source : bucketOf(source);
  };
  for (const n of profile.nodes) {
    const { url, functionName, lineNumber } = n.callFrame;
    const hits = n.hitCount ?? 0;
    if (!hits) continue;
    if (url === bundleUrl) {
      // esbuild's runtime helpers (the lazy-module wrappers): their self time is compiling and
      // starting the module they wrap, so it goes to their heaviest callee's source.
      const attribute = (line: number, ticks: number) => {
        if (sourceAt(line) !== HELPERS) return add(sourceAt(line), ticks, line);
        const kid = (n.children ?? [])
          .map((c) => byId.get(c) as ProfileNode)
          .filter((k) => k.callFrame.url === bundleUrl)
          .sort((x, y) => total(y) - total(x))[0];
        if (kid) add(sourceAt(kid.callFrame.lineNumber), ticks, kid.callFrame.lineNumber);
        else add(HELPERS, ticks);
      };
      if (n.positionTicks?.length) for (const t of n.positionTicks) attribute(t.line - 1, t.ticks);
      else attribute(lineNumber, hits);
    } else if (url.startsWith('node:internal/modules/') || url.startsWith('node:internal/vm'))
      add('V8 compile + ESM loader', hits);
    else if (url.startsWith('node:internal/source_map/')) add('source maps (--enable-source-maps)', hits);
    else if (url.startsWith('node:')) add('Node built-in modules and startup', hits);
    else if (!url) add(functionName === '(garbage collector)' ? 'GC' : 'V8 (program, native)', hits);
  }
  return { buckets: out, ownLines };
}

/** Our own sources (not packages, not V8/Node buckets). */
const OWN = /^(functions|lib|bin)\//;

/** A line of our code and its init time (ms, mean per process). */
export interface HotLine {
  /** `functions/core/platforms.ts:46` */
  where: string;
  text: string;
  ms: number;
}

/** Mean init ms per bucket over `runs` profiled processes of `file` (a PROFILE_BUILD bundle), and our hottest lines. */
async function profileInit(
  probe: string,
  file: string,
  flags: string[],
  id: string,
  runs: number,
): Promise<{ buckets: Map<string, number>; hotLines: HotLine[] }> {
  const sources = lineSources(await readFile(file, 'utf8'));
  const code = (await readFile(file, 'utf8')).split('\n');
  const map = new SourceMap(JSON.parse(await readFile(`${file}.map`, 'utf8')));
  const dir = join(file, '..', 'cpu');
  await mkdir(dir, { recursive: true });
  const sum = new Map<string, number>();
  const lines = new Map<string, number>();
  for (let i = 0; i < runs; i++) {
    await initProbe(
      probe,
      file,
      [...flags, '--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=100'],
      id,
    );
    const [name] = await readdir(dir);
    if (!name) throw new Error(`cold-start: no CPU profile for ${id}`);
    const profile = JSON.parse(await readFile(join(dir, name), 'utf8'));
    await rm(join(dir, name));
    const { buckets, ownLines } = initBuckets(profile, pathToFileURL(file).href, sources);
    for (const [k, v] of buckets) sum.set(k, (sum.get(k) ?? 0) + v);
    for (const [line, ms] of ownLines) {
      const column = (code[line] ?? '').search(/\S/);
      const entry = map.findEntry(line, Math.max(0, column));
      if (!('originalSource' in entry)) continue;
      const src = relative(ROOT, resolve(dirname(file), entry.originalSource.replace(/^file:\/\//, '')));
      const where = `${src}:${entry.originalLine + 1}`;
      lines.set(where, (lines.get(where) ?? 0) + ms);
    }
  }
  const hotLines: HotLine[] = [];
  for (const [where, ms] of [...lines].sort((x, y) => y[1] - x[1]).slice(0, 3)) {
    const [src = '', line = '0'] = where.split(':');
    const text =
      (await readFile(join(ROOT, src), 'utf8').catch(() => '')).split('\n')[Number(line) - 1] ?? '';
    hotLines.push({ where, text: text.trim(), ms: ms / runs });
  }
  return { buckets: new Map([...sum].map(([k, v]) => [k, v / runs])), hotLines };
}

export async function benchColdStart(
  opts: {
    runs?: number;
    floorEvery?: number;
    nodeFlags?: string[];
    profileRuns?: number;
    /** Only these functions (by id) against the floor: a quick look at a few. Default: every one. */
    only?: readonly string[];
  } = {},
): Promise<ColdStartResult> {
  const runs = opts.runs ?? 21;
  const profileRuns = opts.profileRuns ?? 3;
  const floorEvery = opts.floorEvery ?? FLOOR_EVERY;
  const nodeFlags = opts.nodeFlags ?? ['--enable-source-maps'];
  const started = performance.now();
  const dir = await mkdtemp(join(tmpdir(), 'herald-cold-start-'));
  try {
    const floorTarget: BundleTarget = { id: 'floor', kind: 'floor', entry: '(DynamoDBClient only)' };
    const targets = manifestFunctions().filter((t) => !opts.only || opts.only.includes(t.id));
    const built = await Promise.all([floorTarget, ...targets].map((t) => bundle(dir, t)));
    const buildMs = performance.now() - started;
    const probe = join(dir, 'probe.mjs');
    await writeFile(probe, PROBE);

    // Rounds over every bundle; the floor first and after every `floorEvery` functions. The start
    // rotates each round so no function always follows the floor.
    const [floor, ...fns] = built as [Built, ...Built[]];
    const samples = new Map<string, number[]>(built.map((b) => [b.target.id, []]));
    const measure = async (b: Built) => {
      const { ms } = await initProbe(probe, b.file, nodeFlags, b.target.id);
      samples.get(b.target.id)?.push(ms);
    };
    const measureStart = performance.now();
    for (let r = 0; r < runs; r++) {
      const order = fns.map((_, i) => fns[(i + r * 3) % fns.length] as Built);
      for (let i = 0; i < order.length; i++) {
        if (i % floorEvery === 0) await measure(floor);
        await measure(order[i] as Built);
      }
    }
    await measure(floor);
    const measureMs = performance.now() - measureStart;
    // The deferred modules: the same bundle plus an export that loads the module, timed after init.
    const deferredMs = new Map<string, number>();
    for (const [id, d] of Object.entries(DEFERRED)) {
      const t = targets.find((x) => x.id === id);
      if (!t) continue;
      const source = `export * from ${JSON.stringify(join(ROOT, t.entry))};\nexport const __deferred = () => import(${JSON.stringify(specifierOf(d.module))});\n`;
      const b = await bundle(
        dir,
        { ...t, id: `${id}.deferred` },
        { stdin: { contents: source, resolveDir: ROOT, sourcefile: `${id}.deferred.ts`, loader: 'ts' } },
      );
      const times: number[] = [];
      for (let i = 0; i < runs; i++) {
        const r = await initProbe(probe, b.file, nodeFlags, b.target.id);
        if (r.deferredMs === undefined)
          throw new Error(`cold-start: ${id}.deferred has no __deferred export`);
        times.push(r.deferredMs);
      }
      deferredMs.set(id, median(times));
    }
    const floorMs = median(samples.get('floor') ?? []);
    const floorBytes = new Map(floor.packages.map((p) => [p.name, p.bytes]));
    const result = (b: Built): BundleResult => {
      const s = samples.get(b.target.id) ?? [];
      const initMs = median(s);
      const target = targetOf(b.target);
      const ratio = initMs / floorMs;
      return {
        id: b.target.id,
        kind: b.target.kind,
        entry: b.target.entry,
        bytes: b.bytes,
        gzipBytes: b.gzipBytes,
        samples: s,
        initMs,
        ratio,
        target,
        pass: target === null ? null : ratio <= target,
        ...(DEFERRED[b.target.id] && deferredMs.has(b.target.id)
          ? { deferred: { when: DEFERRED[b.target.id]?.when ?? '', ms: deferredMs.get(b.target.id) ?? 0 } }
          : {}),
        packages: b.packages,
        overFloor: b.packages
          .map((p) => ({ name: p.name, bytes: p.bytes - (floorBytes.get(p.name) ?? 0) }))
          .filter((p) => p.bytes > 0)
          .sort((a, c) => c.bytes - a.bytes),
      };
    };
    const all = built.map(result);

    // Why the misses miss: profile the init of a PROFILE_BUILD bundle of each, and of the floor.
    const profileStart = performance.now();
    const misses = all.filter((b) => b.pass === false);
    if (misses.length) {
      const profiled = await Promise.all(
        [floorTarget, ...targets.filter((t) => misses.some((m) => m.id === t.id))].map((t) =>
          bundle(dir, { ...t, id: `${t.id}.profile` }, PROFILE_BUILD),
        ),
      );
      const [floorBuild, ...missBuilds] = profiled as [Built, ...Built[]];
      const floorInit = (await profileInit(probe, floorBuild.file, nodeFlags, 'floor', profileRuns)).buckets;
      for (const mb of missBuilds) {
        const init = await profileInit(probe, mb.file, nodeFlags, mb.target.id, profileRuns);
        const miss = all.find((b) => `${b.id}.profile` === mb.target.id);
        if (!miss) continue;
        miss.hotLines = init.hotLines;
        miss.initOverFloor = [...init.buckets]
          .map(([name, ms]) => ({ name, ms: ms - (floorInit.get(name) ?? 0) }))
          .filter((x) => x.ms > 0)
          .sort((a, b) => b.ms - a.ms);
      }
    }
    const profileMs = performance.now() - profileStart;
    return {
      machine: machine(),
      date: today(),
      runs,
      floorEvery,
      nodeFlags,
      floor: all[0] as BundleResult,
      functions: all.slice(1),
      fit: leastSquares(all.map((b) => [b.bytes / 1024 / 1024, b.initMs])),
      buildMs,
      measureMs,
      profileMs,
      profileRuns,
      durationMs: performance.now() - started,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const top = (list: PackageBytes[], n = 3) =>
  list
    .slice(0, n)
    .map((p) => `${p.name} ${kib(p.bytes)}`)
    .join(', ');

/** Our code's hottest lines at load across the misses: in how many, and the median ms. */
function hotLinesNote(misses: BundleResult[]): string {
  const byLine = new Map<string, { text: string; ms: number[] }>();
  for (const m of misses)
    for (const h of m.hotLines ?? []) {
      const e = byLine.get(h.where) ?? { text: h.text, ms: [] };
      e.ms.push(h.ms);
      byLine.set(h.where, e);
    }
  const hot = [...byLine]
    .filter(([, e]) => median(e.ms) >= 1 && e.ms.length >= Math.min(2, misses.length))
    .sort((a, b) => b[1].ms.length * median(b[1].ms) - a[1].ms.length * median(a[1].ms))
    .slice(0, 3);
  if (!hot.length) return '';
  return `Our own code's most expensive lines at load (same profiles; in how many of the ${misses.length} misses, median ms):
${hot
  .map(
    ([where, e]) =>
      `- \`${where}\` \`${e.text.length > 90 ? `${e.text.slice(0, 87)}…` : e.text}\`: ${e.ms.length}×, ${fixed(median(e.ms))} ms`,
  )
  .join('\n')}

Work like this, done on import, is paid by every cold start, including the requests that never use it.

`;
}

export function coldStartSection(r: ColdStartResult): string {
  const f = r.floor;
  const label = (b: BundleResult) =>
    b.kind === 'mcp'
      ? `${b.id} (MCP)`
      : b.kind === 'worker'
        ? `${b.id} (worker)`
        : b.kind === 'public'
          ? `${b.id} (no key)`
          : b.kind === 'console'
            ? `${b.id} (console)`
            : b.id;
  const rows = r.functions.map((b) => [
    label(b),
    kib(b.bytes),
    kib(b.gzipBytes),
    fixed(b.initMs),
    `${b.ratio.toFixed(2)}×`,
    b.target === null ? '–' : `≤ ${b.target}×`,
    mark(b.pass),
  ]);
  const misses = r.functions.filter((b) => b.pass === false);
  const MiB = 1024 * 1024;
  const missRows = misses.map((b) => {
    const limitMs = (b.target ?? 0) * f.initMs;
    const gapMs = b.initMs - f.initMs;
    const sizeMs = (r.fit.msPerMiB * (b.bytes - f.bytes)) / MiB;
    return [
      b.id,
      `${fixed(b.initMs - limitMs)} ms`,
      top(b.packages),
      top(b.overFloor),
      b.initOverFloor
        ? b.initOverFloor
            .slice(0, 3)
            .map((x) => `${x.name} +${fixed(x.ms)} ms`)
            .join(', ')
        : '–',
      `${fixed(Math.max(0, sizeMs))} of ${fixed(gapMs)} ms`,
      r.fit.msPerMiB > 0 ? kib(((b.initMs - limitMs) / r.fit.msPerMiB) * MiB) : '–',
    ];
  });
  const missNotes = misses.length
    ? `**Misses.** "Largest packages" and "bytes beyond the floor": the esbuild metafile. "Init CPU beyond
the floor": where module init spends its time beyond the floor's, from V8 CPU profiles
(\`--cpu-prof\`, 100 µs, mean of ${r.profileRuns} processes) of a build with the same options but whitespace kept
(one module per line range), each sample attributed to the package (for our code: the file) whose
code it ran, or to V8/Node work (compiling and linking the bundle, source maps, built-in modules;
compiling is somewhat overstated, the text being larger); zod's share is zod's own load and the
schemas our modules build with it at load, counted where zod's code runs. "Size explains" = this
run's fit (ms per MiB) × the bytes beyond the floor, against the whole gap to the floor: the rest
is work done at load, not code size. "Cut" = the bytes that would have to go at the fitted rate, if size alone were cut.

${table(
  [
    'Function',
    'Over target',
    'Largest packages',
    'Bytes beyond the floor',
    'Init CPU beyond the floor',
    'Size explains',
    'Cut ≈',
  ],
  ['l', 'r', 'l', 'l', 'l', 'r', 'r'],
  missRows,
)}

${hotLinesNote(misses)}What would meet it: less beyond the floor at load — packages only some requests need loaded on
first use (dynamic \`import()\`), and load-time work (schema and client construction) deferred or
avoided.`
    : 'Every function with a target meets it.';
  return `### Cold start: bundle size and module init

Measured ${r.date} on ${r.machine} by \`test/bench/cold-start.ts\`. Method: every function of the
manifest bundled in this run with esbuild's API and the options of lib/herald-function.ts (bundle,
minify, ESM, target node22, source maps without sources, the createRequire banner, nothing
external), and a **floor** bundle with the same options that only does \`new DynamoDBClient({})\`.
Init = \`await import()\` of the bundle in a fresh \`node ${r.nodeFlags.join(' ')}\` process (as Lambda runs
it: NODE_OPTIONS=--enable-source-maps), timed inside the process, median of ${r.runs}; the processes run
one at a time, in rounds over all bundles, with the floor measured ${f.samples.length} times spread over
the rounds (after every ${r.floorEvery} functions). Node ${process.version} here; Lambda runs Node 22 on arm64 (only the ratios carry over).
Targets: API functions and the console's pages ≤ ${TARGETS.api}× the floor's init, the MCP server and
the media functions ≤ ${TARGETS.heavy}×, workers reported without one. consoleAssets is measured with
its static files copied next to its bundle by the stack's own commands (lib/console-assets.ts), as
deployed: it reads them at load. Bundling took ${fixed(r.buildMs / 1000)} s, the
measurements ${fixed(r.measureMs / 1000)} s.

Floor: ${kib(f.bytes)} (gzip ${kib(f.gzipBytes)}), init **${fixed(f.initMs)} ms** (median of ${f.samples.length}).
Across all bundles, init ≈ ${fixed(r.fit.interceptMs)} ms + ${fixed(r.fit.msPerMiB)} ms per MiB of
minified code (least squares, r² = ${r.fit.r2.toFixed(2)}).

${table(
  ['Function', 'Minified', 'gzip', 'Init ms', '× floor', 'Target', 'Verdict'],
  ['l', 'r', 'r', 'r', 'r', 'r', 'c'],
  rows,
)}

${deferredNote(r)}${noiseNote(r)}

${missNotes}
`;
}

/** What the functions load on first use instead of at init, and what that first load costs. */
function deferredNote(r: ColdStartResult): string {
  const d = r.functions.filter((b) => b.deferred);
  if (!d.length) return '';
  const lines = d.map((b) => {
    const ms = b.deferred?.ms ?? 0;
    return `- ${b.id}: \`${DEFERRED[b.id]?.module}\` at ${b.deferred?.when}: +${fixed(ms)} ms then (init + that = ${((b.initMs + ms) / r.floor.initMs).toFixed(2)}× the floor).`;
  });
  return `**Loaded on first use, not at init** (median of ${r.runs} processes, each timing the first load right after init):\n${lines.join('\n')}\n\n`;
}

/** How noisy this machine's process starts are: the floor bundle, identical every time. */
function noiseNote(r: ColdStartResult): string {
  const s = [...r.floor.samples].sort((a, b) => a - b);
  const q = (p: number) => s[Math.floor((s.length - 1) * p)] ?? 0;
  return `**Noise.** The floor bundle, identical in every process, took ${fixed(q(0))}–${fixed(q(1))} ms (quartiles ${fixed(q(0.25))} and ${fixed(q(0.75))} ms): a median of ${r.runs} processes moves by a few percent between runs, so ratios within ≈ 0.05 of a target can land on either side of it from one run to the next.`;
}
