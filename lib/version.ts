import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// The release a build is of: package.json's `version` (the one number: the OpenAPI document, the
// CHANGELOG and the functions all say this one) and the git commit it was built from. Read once
// per process: a synth makes dozens of functions.

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

let release: string | undefined;
let commit: string | undefined;

/** package.json's `version`, e.g. `1.0.0`. */
export function heraldRelease(): string {
  release ??= (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string })
    .version;
  return release;
}

/**
 * The commit being built: HERALD_COMMIT when the build sets it (a tarball has no .git), else
 * `git rev-parse HEAD`, else `unknown`. Uncommitted changes are not marked: a release is a commit.
 */
export function heraldCommit(): string {
  if (commit !== undefined) return commit;
  const configured = process.env.HERALD_COMMIT?.trim();
  if (configured) commit = configured;
  else {
    try {
      commit =
        execFileSync('git', ['rev-parse', 'HEAD'], {
          cwd: root,
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
        }).trim() || 'unknown';
    } catch {
      commit = 'unknown';
    }
  }
  return commit;
}

/** What every function carries in its environment (functions/shared/version.ts reads them). */
export function versionEnvironment(): { HERALD_VERSION: string; HERALD_COMMIT: string } {
  return { HERALD_VERSION: heraldRelease(), HERALD_COMMIT: heraldCommit() };
}
