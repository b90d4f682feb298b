import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { API_GUIDE_BUNDLE_DIR, API_GUIDE_SOURCE } from '#core/vocabulary';

// The API guide's markdown, read once per container. In Lambda the pages sit in a folder next to
// the bundle (copied there by the stack); run from the repository (the local stack, tests) they
// are read where they live.

const PAGE_FILE = /^([a-z0-9][a-z0-9-]*)\.md$/;
/** The guide's README (its conventions and operations table) is served as the page `overview`. */
export const README_PAGE = 'overview';

const bundled = fileURLToPath(new URL(`./${API_GUIDE_BUNDLE_DIR}/`, import.meta.url));
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

let pages: ReadonlyMap<string, string> | undefined;

/** Page name (the file's name without `.md`) → its markdown. */
export function apiGuidePages(): ReadonlyMap<string, string> {
  if (pages) return pages;
  const dir = existsSync(bundled) ? bundled : join(repoRoot, API_GUIDE_SOURCE);
  const found = new Map<string, string>();
  for (const file of readdirSync(dir).sort()) {
    const name = file === 'README.md' ? README_PAGE : PAGE_FILE.exec(file)?.[1];
    if (name) found.set(name, readFileSync(join(dir, file), 'utf8'));
  }
  // A bundle without the guide is a build fault: say so at the cold start, not with empty pages.
  if (found.size === 0) throw new Error(`no API guide pages in ${dir}`);
  pages = found;
  return pages;
}
