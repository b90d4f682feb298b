import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  API_GUIDE_BUNDLE_DIR,
  API_GUIDE_SOURCE,
  OPERATOR_GUIDE_BUNDLE_DIR,
  OPERATOR_GUIDE_SOURCE,
} from '#core/vocabulary';

// The guides' markdown (the API guide, the operator's guide), read once per container. In Lambda
// the pages sit in folders next to the bundle (copied there by the stack); run from the repository
// (the local stack, tests) they are read where they live.

const PAGE_FILE = /^([a-z0-9][a-z0-9-]*)\.md$/;
/** A guide's README (its conventions and contents) is served as the page `overview`. */
export const README_PAGE = 'overview';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

function readGuide(bundleDir: string, source: string): ReadonlyMap<string, string> {
  const bundled = fileURLToPath(new URL(`./${bundleDir}/`, import.meta.url));
  const dir = existsSync(bundled) ? bundled : join(repoRoot, source);
  const found = new Map<string, string>();
  for (const file of readdirSync(dir).sort()) {
    const name = file === 'README.md' ? README_PAGE : PAGE_FILE.exec(file)?.[1];
    if (name) found.set(name, readFileSync(join(dir, file), 'utf8'));
  }
  // A bundle without the guide is a build fault: say so at the cold start, not with empty pages.
  if (found.size === 0) throw new Error(`no guide pages in ${dir}`);
  return found;
}

let api: ReadonlyMap<string, string> | undefined;
let operator: ReadonlyMap<string, string> | undefined;

/** The API guide: page name (the file's name without `.md`) → its markdown. */
export function apiGuidePages(): ReadonlyMap<string, string> {
  api ??= readGuide(API_GUIDE_BUNDLE_DIR, API_GUIDE_SOURCE);
  return api;
}

/** The operator's guide (docs/operator), the same way. */
export function operatorGuidePages(): ReadonlyMap<string, string> {
  operator ??= readGuide(OPERATOR_GUIDE_BUNDLE_DIR, OPERATOR_GUIDE_SOURCE);
  return operator;
}
