import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildOptions } from 'esbuild';

// The PDF reader (pdf-render-child.ts) as one ESM file with pdf.js inside: what the probe layer
// carries (/opt/pdf/render.mjs, lib/ffmpeg-layer.ts) and what runs outside Lambda, so tests run the
// very bundle Lambda runs. @napi-rs/canvas stays outside: it is native, loaded from the
// node_modules beside or above the bundle.

export const PDF_READER_ENTRY = fileURLToPath(new URL('./pdf-render-child.ts', import.meta.url));

export function pdfReaderBuildOptions(outfile: string): BuildOptions {
  return {
    entryPoints: [PDF_READER_ENTRY],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    minify: true,
    external: ['@napi-rs/canvas'],
    logLevel: 'error',
  };
}

// esbuild through a renamed require, like the ffmpeg installers (media-tools.ts): bundlers leave
// it alone, so no function bundle carries esbuild.
const loadPackage = createRequire(import.meta.url);

/**
 * The reader bundled under the repository's `.build/pdf-reader/` (inside the repository, so that
 * the bundle finds node_modules/@napi-rs/canvas), rebuilt when its source or pdf.js changes.
 */
export function localPdfReader(): string {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const pdfjs = readFileSync(loadPackage.resolve('pdfjs-dist/package.json'));
  const digest = createHash('sha256').update(readFileSync(PDF_READER_ENTRY)).update(pdfjs).digest('hex');
  const out = join(root, '.build', 'pdf-reader', `render-${digest.slice(0, 16)}.mjs`);
  if (existsSync(out)) return out;
  mkdirSync(dirname(out), { recursive: true });
  // Built beside, then renamed: test workers building at once never run a half-written file.
  const partial = `${out}.${process.pid}.partial.mjs`;
  (loadPackage('esbuild') as typeof import('esbuild')).buildSync(pdfReaderBuildOptions(partial));
  renameSync(partial, out);
  return out;
}
