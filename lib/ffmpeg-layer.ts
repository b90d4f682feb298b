import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { pdfReaderBuildOptions } from '../functions/adapters/pdf-reader-bundle.ts';

// The ffmpeg/ffprobe layer's contents, chosen for the probe function's Lambda architecture rather
// than the machine that synthesizes. The binaries come from the per-platform packages of
// @ffmpeg-installer / @ffprobe-installer, which package-lock.json records for every platform (with
// their sha512 integrity) but `npm ci` installs only for the host's. So:
//   1. node_modules/<pkg> at exactly the locked version: npm ci verified it against the lock;
//   2. else the cache (.build/media-tools/<pkg>@<version>), filled once by `npm pack` of exactly
//      the locked version, its tarball checked against the lock's integrity before it is unpacked.
// A mismatch, a package missing from the lock or a failed download stops synthesis with the reason.

/** Lambda's architectures, as the installer packages name them (linux-x64, linux-arm64). */
export type LambdaArch = 'x64' | 'arm64';

/** The layer's two tools and the package each comes from, per architecture. */
export const MEDIA_TOOLS = [
  { tool: 'ffmpeg', pkg: (arch: LambdaArch) => `@ffmpeg-installer/linux-${arch}` },
  { tool: 'ffprobe', pkg: (arch: LambdaArch) => `@ffprobe-installer/linux-${arch}` },
] as const;

export interface LockedPackage {
  name: string;
  version: string;
  /** `sha512-<base64>`, as package-lock.json records it. */
  integrity: string;
}

/** Fetches `<name>@<version>`'s tarball into `dir` and returns its path (npm pack by default). */
export type FetchTarball = (name: string, version: string, dir: string) => string;

export interface ResolveOptions {
  /** The repository root: its package-lock.json and node_modules. */
  root: string;
  /** Where fetched packages are kept (under the repository's ignored build directory). */
  cacheDir: string;
  fetchTarball?: FetchTarball;
}

/** The lock's entry of a package (any platform: the lock records them all). */
export function lockedPackage(root: string, name: string): LockedPackage {
  const lockFile = join(root, 'package-lock.json');
  const lock = JSON.parse(readFileSync(lockFile, 'utf8')) as {
    packages?: Record<string, { version?: string; integrity?: string }>;
  };
  const entry = lock.packages?.[`node_modules/${name}`];
  if (!entry?.version || !entry.integrity?.startsWith('sha512-'))
    throw new Error(`${name} is not in ${lockFile} with a version and a sha512 integrity`);
  return { name, version: entry.version, integrity: entry.integrity };
}

/** npm's own client, so the registry, proxy and auth settings are the user's. */
export const npmPack: FetchTarball = (name, version, dir) => {
  const out = execFileSync('npm', ['pack', `${name}@${version}`, '--json', '--pack-destination', dir], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const [packed] = JSON.parse(out) as { filename: string }[];
  if (!packed) throw new Error(`npm pack ${name}@${version} printed no tarball`);
  return join(dir, packed.filename);
};

function installedVersion(dir: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

/**
 * The directory of a tool package at the locked version: node_modules when npm installed it there
 * (another platform's install has none), else the verified cache, filled on first use.
 */
export function resolveToolPackage(name: string, opts: ResolveOptions): string {
  const locked = lockedPackage(opts.root, name);
  const installed = join(opts.root, 'node_modules', name);
  if (installedVersion(installed) === locked.version) return installed;

  const cached = join(opts.cacheDir, `${name.replace('/', '+')}@${locked.version}`);
  const marker = join(cached, '.herald-integrity');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === locked.integrity) return cached;

  rmSync(cached, { recursive: true, force: true });
  const work = `${cached}.partial`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, 'unpacked'), { recursive: true });
  const fetch = opts.fetchTarball ?? npmPack;
  let tarball: string;
  try {
    tarball = fetch(name, locked.version, work);
  } catch (err) {
    throw new Error(
      `cannot fetch ${name}@${locked.version} for the ffmpeg layer (it is not installed for this platform): ${(err as Error).message}`,
      { cause: err },
    );
  }
  const digest = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  if (digest !== locked.integrity)
    throw new Error(
      `${name}@${locked.version}: the fetched tarball's integrity ${digest} is not the lock's ${locked.integrity}`,
    );
  execFileSync('tar', ['-xzf', tarball, '-C', join(work, 'unpacked'), '--strip-components=1']);
  const version = installedVersion(join(work, 'unpacked'));
  if (version !== locked.version)
    throw new Error(`${name}: the tarball holds version ${version}, the lock says ${locked.version}`);
  renameSync(join(work, 'unpacked'), cached);
  rmSync(work, { recursive: true, force: true });
  // Written last: a cache entry without it (an interrupted run) is fetched again.
  writeFileSync(marker, locked.integrity);
  return cached;
}

/** What the layer holds: `<dir>/bin/<tool>` for each tool, and the packages' versions. */
export interface StagedLayer {
  dir: string;
  packages: { name: string; version: string }[];
}

/**
 * Stages the layer for `arch` into `dir` (a layer's /opt): bin/ffmpeg, bin/ffprobe, and each
 * package's licence and readme under licenses/<package>/ when it ships them.
 */
export function stageFfmpegLayer(arch: LambdaArch, dir: string, opts: ResolveOptions): StagedLayer {
  mkdirSync(join(dir, 'bin'), { recursive: true });
  const packages: StagedLayer['packages'] = [];
  for (const { tool, pkg } of MEDIA_TOOLS) {
    const name = pkg(arch);
    const from = resolveToolPackage(name, opts);
    const binary = join(from, tool);
    if (!existsSync(binary)) throw new Error(`${name} has no ${tool} binary at ${binary}`);
    copyFileSync(binary, join(dir, 'bin', tool));
    chmodSync(join(dir, 'bin', tool), 0o755);
    const notes = join(dir, 'licenses', name.replace('/', '+'));
    mkdirSync(notes, { recursive: true });
    for (const file of ['LICENSE', 'LICENSE.md', 'LICENSE.txt', 'README.md', 'package.json'])
      if (existsSync(join(from, file))) copyFileSync(join(from, file), join(notes, file));
    packages.push({ name, version: installedVersion(from) ?? '' });
  }
  return { dir, packages };
}

// ---- the PDF reader --------------------------------------------------------------------------
// The same layer carries the probe's PDF reader (functions/adapters/pdf-reader-bundle.ts) under
// /opt/pdf: its bundle (pdf.js inside, host-independent JavaScript), pdf.js's fonts, CMaps and
// WebAssembly decoders, and @napi-rs/canvas with the native binary of the Lambda architecture,
// resolved like the ffmpeg packages (the lock records every platform's; npm installs the host's).

/** The canvas packages: the JavaScript loader and the per-architecture skia binary it requires. */
export const CANVAS_PACKAGES = (arch: LambdaArch) => ['@napi-rs/canvas', `@napi-rs/canvas-linux-${arch}-gnu`];

/** pdf.js's data the reader loads at run time (standardFontDataUrl, cMapUrl, wasmUrl). */
const PDFJS_ASSETS = ['standard_fonts', 'cmaps', 'wasm'] as const;

/**
 * Stages /opt/pdf into `dir`/pdf: render.mjs, pdf.js's assets beside it, and
 * node_modules/@napi-rs/{canvas, canvas-linux-<arch>-gnu}; licences under licenses/.
 */
export function stagePdfReader(arch: LambdaArch, dir: string, opts: ResolveOptions): StagedLayer {
  const pdf = join(dir, 'pdf');
  mkdirSync(pdf, { recursive: true });
  const packages: StagedLayer['packages'] = [];
  const pdfjs = join(opts.root, 'node_modules', 'pdfjs-dist');
  const pdfjsVersion = installedVersion(pdfjs);
  if (pdfjsVersion !== lockedPackage(opts.root, 'pdfjs-dist').version)
    throw new Error(`pdfjs-dist is not installed at its locked version (found ${pdfjsVersion ?? 'none'})`);
  buildSync(pdfReaderBuildOptions(join(pdf, 'render.mjs')));

  for (const asset of PDFJS_ASSETS) cpSync(join(pdfjs, asset), join(pdf, asset), { recursive: true });
  packages.push({ name: 'pdfjs-dist', version: pdfjsVersion });
  notices(dir, 'pdfjs-dist', pdfjs);
  for (const name of CANVAS_PACKAGES(arch)) {
    const from = resolveToolPackage(name, opts);
    const to = join(pdf, 'node_modules', name);
    cpSync(from, to, { recursive: true, filter: (src) => !src.endsWith('.herald-integrity') });
    packages.push({ name, version: installedVersion(from) ?? '' });
    notices(dir, name, from);
  }
  const binary = join(
    pdf,
    'node_modules',
    `@napi-rs/canvas-linux-${arch}-gnu`,
    `skia.linux-${arch}-gnu.node`,
  );
  if (!existsSync(binary)) throw new Error(`@napi-rs/canvas-linux-${arch}-gnu has no binary at ${binary}`);
  return { dir, packages };
}

function notices(dir: string, name: string, from: string): void {
  const to = join(dir, 'licenses', name.replace('/', '+'));
  mkdirSync(to, { recursive: true });
  for (const file of ['LICENSE', 'LICENSE.md', 'LICENSE.txt', 'README.md', 'package.json'])
    if (existsSync(join(from, file))) copyFileSync(join(from, file), join(to, file));
}
