import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  CANVAS_PACKAGES,
  type FetchTarball,
  lockedPackage,
  MEDIA_TOOLS,
  resolveToolPackage,
  stageFfmpegLayer,
  stagePdfReader,
} from '#lib/ffmpeg-layer';
import { REPO_ROOT } from '#lib/herald-function';
import { makePdf } from '../../support/media-samples.ts';

// The layer's resolution on an install that lacks the Lambda architecture's packages (what
// `npm ci` leaves on macOS or linux-arm64): a scratch repository with its own lock and an empty
// node_modules, and a fake registry that packs tarballs made here.

let root: string;
let registry: string;
/** name → tarball path, the scratch lock's integrity computed from it. */
const tarballs = new Map<string, string>();

function makePackage(
  name: string,
  version: string,
  tool: string,
  body = `#!/bin/sh\necho ${tool}\n`,
): string {
  const src = join(registry, 'src', name.replace('/', '+'), 'package');
  mkdirSync(src, { recursive: true });
  writeFileSync(join(src, 'package.json'), JSON.stringify({ name, version, license: 'GPLv3' }));
  writeFileSync(join(src, 'README.md'), 'Do not use directly');
  writeFileSync(join(src, tool), body);
  const tgz = join(registry, `${name.replace('/', '+')}-${version}.tgz`);
  execFileSync('tar', ['-czf', tgz, '-C', join(src, '..'), 'package']);
  tarballs.set(name, tgz);
  return `sha512-${createHash('sha512').update(readFileSync(tgz)).digest('base64')}`;
}

function writeLock(entries: Record<string, { version: string; integrity: string }>): void {
  const packages = Object.fromEntries(
    Object.entries(entries).map(([name, e]) => [`node_modules/${name}`, { ...e, optional: true }]),
  );
  writeFileSync(join(root, 'package-lock.json'), JSON.stringify({ lockfileVersion: 3, packages }));
}

const fakeFetch = vi.fn<FetchTarball>((name, version, dir) => {
  const tgz = tarballs.get(name);
  if (!tgz) throw new Error(`404 ${name}@${version}`);
  const out = join(dir, 'fetched.tgz');
  writeFileSync(out, readFileSync(tgz));
  return out;
});

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'herald-layer-root-'));
  registry = mkdtempSync(join(tmpdir(), 'herald-layer-registry-'));
  mkdirSync(join(root, 'node_modules'));
  tarballs.clear();
  fakeFetch.mockClear();
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
  rmSync(registry, { recursive: true, force: true });
});

const opts = () => ({ root, cacheDir: join(root, '.build', 'media-tools'), fetchTarball: fakeFetch });

describe('the ffmpeg layer on an install without the Lambda architecture packages', () => {
  it('fetches exactly the locked version, checks its integrity, unpacks it into the cache', () => {
    writeLock({
      '@ffmpeg-installer/linux-x64': {
        version: '4.1.0',
        integrity: makePackage('@ffmpeg-installer/linux-x64', '4.1.0', 'ffmpeg'),
      },
    });
    const dir = resolveToolPackage('@ffmpeg-installer/linux-x64', opts());
    expect(dir).toBe(join(root, '.build', 'media-tools', '@ffmpeg-installer+linux-x64@4.1.0'));
    expect(fakeFetch).toHaveBeenCalledWith('@ffmpeg-installer/linux-x64', '4.1.0', expect.any(String));
    expect(readFileSync(join(dir, 'ffmpeg'), 'utf8')).toContain('echo ffmpeg');
    // The second synthesis reads the cache.
    expect(resolveToolPackage('@ffmpeg-installer/linux-x64', opts())).toBe(dir);
    expect(fakeFetch).toHaveBeenCalledTimes(1);
  });

  it('refuses a tarball whose integrity is not the lock’s, and caches nothing', () => {
    makePackage('@ffmpeg-installer/linux-x64', '4.1.0', 'ffmpeg');
    writeLock({
      '@ffmpeg-installer/linux-x64': {
        version: '4.1.0',
        integrity: `sha512-${Buffer.alloc(64).toString('base64')}`,
      },
    });
    expect(() => resolveToolPackage('@ffmpeg-installer/linux-x64', opts())).toThrow(
      /integrity sha512-\S+ is not the lock's sha512-AAAA/,
    );
    expect(existsSync(join(root, '.build', 'media-tools', '@ffmpeg-installer+linux-x64@4.1.0'))).toBe(false);
  });

  it('uses node_modules when npm installed the locked version there, and fetches when it holds another', () => {
    const integrity = makePackage('@ffprobe-installer/linux-x64', '5.2.0', 'ffprobe');
    writeLock({ '@ffprobe-installer/linux-x64': { version: '5.2.0', integrity } });
    const installed = join(root, 'node_modules', '@ffprobe-installer', 'linux-x64');
    mkdirSync(installed, { recursive: true });
    writeFileSync(join(installed, 'package.json'), JSON.stringify({ version: '5.2.0' }));
    expect(resolveToolPackage('@ffprobe-installer/linux-x64', opts())).toBe(installed);
    expect(fakeFetch).not.toHaveBeenCalled();
    writeFileSync(join(installed, 'package.json'), JSON.stringify({ version: '5.1.0' }));
    expect(resolveToolPackage('@ffprobe-installer/linux-x64', opts())).not.toBe(installed);
    expect(fakeFetch).toHaveBeenCalledTimes(1);
  });

  it('says which package is missing from the lock, and why a fetch failed', () => {
    writeLock({});
    expect(() => resolveToolPackage('@ffmpeg-installer/linux-arm64', opts())).toThrow(
      /@ffmpeg-installer\/linux-arm64 is not in .*package-lock\.json/,
    );
    writeLock({ '@ffmpeg-installer/linux-arm64': { version: '4.1.4', integrity: 'sha512-x' } });
    expect(() => resolveToolPackage('@ffmpeg-installer/linux-arm64', opts())).toThrow(
      /cannot fetch @ffmpeg-installer\/linux-arm64@4\.1\.4 .*404/,
    );
  });

  it('stages bin/ffmpeg and bin/ffprobe for the Lambda architecture, executable, with the packages’ notes', () => {
    writeLock({
      '@ffmpeg-installer/linux-arm64': {
        version: '4.1.4',
        integrity: makePackage('@ffmpeg-installer/linux-arm64', '4.1.4', 'ffmpeg'),
      },
      '@ffprobe-installer/linux-arm64': {
        version: '5.2.0',
        integrity: makePackage('@ffprobe-installer/linux-arm64', '5.2.0', 'ffprobe'),
      },
    });
    const out = join(root, 'layer');
    const staged = stageFfmpegLayer('arm64', out, opts());
    expect(staged.packages).toEqual([
      { name: '@ffmpeg-installer/linux-arm64', version: '4.1.4' },
      { name: '@ffprobe-installer/linux-arm64', version: '5.2.0' },
    ]);
    for (const tool of ['ffmpeg', 'ffprobe']) {
      expect(statSync(join(out, 'bin', tool)).mode & 0o111).toBe(0o111);
      expect(execFileSync(join(out, 'bin', tool), { encoding: 'utf8' }).trim()).toBe(tool);
    }
    expect(existsSync(join(out, 'licenses', '@ffmpeg-installer+linux-arm64', 'package.json'))).toBe(true);
  });
});

describe("the repository's lock", () => {
  it('records both tools for linux-x64 and linux-arm64, each with a sha512 integrity', () => {
    for (const { pkg } of MEDIA_TOOLS)
      for (const arch of ['x64', 'arm64'] as const) {
        const locked = lockedPackage(REPO_ROOT, pkg(arch));
        expect(locked.version, pkg(arch)).toMatch(/^\d+\.\d+\.\d+$/);
        expect(locked.integrity, pkg(arch)).toMatch(/^sha512-[A-Za-z0-9+/]{86}==$/);
      }
  });
});

describe('the PDF reader in the layer', () => {
  it('records the canvas binary for linux-x64 and linux-arm64 (glibc), each with a sha512 integrity', () => {
    for (const arch of ['x64', 'arm64'] as const)
      for (const name of CANVAS_PACKAGES(arch))
        expect(lockedPackage(REPO_ROOT, name).integrity, name).toMatch(/^sha512-[A-Za-z0-9+/]{86}==$/);
  });

  it('stages /opt/pdf for linux-x64: the bundle reads a PDF with only the layer beside it', () => {
    // The host is linux-x64 in CI: the staged binary is then runnable here, as Lambda runs it.
    const out = mkdtempSync(join(tmpdir(), 'herald-pdf-layer-'));
    try {
      const staged = stagePdfReader('x64', out, {
        root: REPO_ROOT,
        cacheDir: join(REPO_ROOT, '.build', 'media-tools'),
      });
      expect(staged.packages.map((p) => p.name)).toEqual([
        'pdfjs-dist',
        '@napi-rs/canvas',
        '@napi-rs/canvas-linux-x64-gnu',
      ]);
      for (const asset of ['render.mjs', 'standard_fonts', 'cmaps', 'wasm'])
        expect(existsSync(join(out, 'pdf', asset)), asset).toBe(true);
      expect(existsSync(join(out, 'licenses', 'pdfjs-dist', 'LICENSE'))).toBe(true);
      expect(existsSync(join(out, 'licenses', '@napi-rs+canvas', 'LICENSE'))).toBe(true);
      if (process.platform !== 'linux' || process.arch !== 'x64') return;
      // Copied out of the repository, so nothing resolves from its node_modules.
      const pdf = join(out, 'deck.pdf');
      writeFileSync(pdf, makePdf(3));
      const answer = execFileSync(
        process.execPath,
        [join(out, 'pdf', 'render.mjs'), pdf, join(out, 'poster.jpg'), '300', join(out, 'pdf')],
        { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' }, cwd: out },
      );
      expect(JSON.parse(answer)).toEqual({ ok: true, pages: 3, poster: { width: 1224, height: 1584 } });
      expect(statSync(join(out, 'poster.jpg')).size).toBeGreaterThan(1000);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 60_000);
});
