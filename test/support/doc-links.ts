// The docs' link checker: every relative link in the repository's Markdown must reach a file, and
// every `#anchor` a heading of the file it points at (GitHub's slugs), so moving a page or renaming
// a heading cannot leave a reader at a dead end.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { headingSlug } from '#core/markdown';

export interface Link {
  /** The link's target as written, e.g. `../api/posts.md#approval`. */
  readonly target: string;
  /** 1-based line of the Markdown source. */
  readonly line: number;
}

/** A fenced code block's lines and inline code spans hold example text, never links. */
function withoutCode(markdown: string): string[] {
  let fence: string | undefined;
  return markdown.split('\n').map((line) => {
    const opening = /^\s*(```|~~~)/.exec(line);
    if (fence !== undefined) {
      if (opening && opening[1] === fence) fence = undefined;
      return '';
    }
    if (opening) {
      fence = opening[1];
      return '';
    }
    return line.replace(/(`+)[^`]*?\1/g, '');
  });
}

/** Inline links and images `[text](target "title")` and reference definitions `[id]: target`. */
export function extractLinks(markdown: string): Link[] {
  const links: Link[] = [];
  withoutCode(markdown).forEach((text, i) => {
    for (const m of text.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)) {
      if (m[1]) links.push({ target: m[1], line: i + 1 });
    }
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$/.exec(text);
    if (definition?.[1]) links.push({ target: definition[1], line: i + 1 });
  });
  return links;
}

/** External links (a scheme such as https: or mailto:, or protocol-relative) are not checked. */
export function isRelative(target: string): boolean {
  return !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith('//');
}

/** GitHub's anchor for a heading: the one the served guide gives its headings too. */
export const slug = headingSlug;

/** Every anchor a Markdown file offers: its headings' slugs (repeats get -1, -2, …). */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of withoutCodeBlocks(markdown)) {
    const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading?.[1]) continue;
    const base = slug(heading[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Headings keep their inline code (it is part of the slug); only fenced blocks are dropped. */
function withoutCodeBlocks(markdown: string): string[] {
  let fence: string | undefined;
  const out: string[] = [];
  for (const line of markdown.split('\n')) {
    const opening = /^\s*(```|~~~)/.exec(line);
    if (fence !== undefined) {
      if (opening && opening[1] === fence) fence = undefined;
      continue;
    }
    if (opening) fence = opening[1];
    else out.push(line);
  }
  return out;
}

export interface BrokenLink extends Link {
  readonly file: string;
  readonly reason: string;
}

/**
 * The relative links of `file` that lead nowhere. `read` returns a Markdown file's text (for its
 * anchors); `exists` says whether a path is there at all.
 */
export function brokenLinks(
  file: string,
  markdown: string,
  io: { exists(path: string): boolean; read(path: string): string },
): BrokenLink[] {
  const broken: BrokenLink[] = [];
  for (const link of extractLinks(markdown)) {
    if (!isRelative(link.target)) continue;
    const hash = link.target.indexOf('#');
    const path = decodeURI(hash === -1 ? link.target : link.target.slice(0, hash));
    const anchor = hash === -1 ? undefined : decodeURIComponent(link.target.slice(hash + 1));
    const target = path === '' ? file : resolve(dirname(file), path.split('?')[0] ?? '');
    if (!io.exists(target)) {
      broken.push({ ...link, file, reason: `no such file: ${path}` });
      continue;
    }
    if (anchor === undefined || anchor === '') continue;
    if (!target.endsWith('.md')) {
      broken.push({ ...link, file, reason: `an anchor into a file that is not Markdown: ${link.target}` });
      continue;
    }
    if (!anchors(io.read(target)).has(anchor)) {
      broken.push({ ...link, file, reason: `no heading "#${anchor}" in ${path || 'this file'}` });
    }
  }
  return broken;
}

/** README.md, BENCHMARKS.md and every Markdown file under docs/, as absolute paths. */
export function docFiles(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return walk(path);
      return name.endsWith('.md') ? [path] : [];
    });
  return [join(root, 'README.md'), join(root, 'BENCHMARKS.md'), ...walk(join(root, 'docs'))].filter((f) =>
    existsSync(f),
  );
}

/**
 * Every broken relative link of the repository's docs, each named `file:line`. A link to one of
 * `pending` (paths from the root) is accepted while that file is absent: pages another branch is
 * adding, linked ahead of its merge.
 */
export function checkDocs(root: string, pending: readonly string[] = []): string[] {
  const waiting = new Set(pending.map((p) => resolve(root, p)));
  const cache = new Map<string, string>();
  const read = (path: string) => {
    let text = cache.get(path);
    if (text === undefined) {
      text = readFileSync(path, 'utf8');
      cache.set(path, text);
    }
    return text;
  };
  // A pending page's anchors cannot be checked before it exists: its own branch's check does that.
  const absent = (p: string) => waiting.has(p) && !existsSync(p);
  const headingsOf = (p: string) => (absent(p) ? '' : read(p));
  return docFiles(root).flatMap((file) =>
    brokenLinks(file, read(file), { exists: (p) => existsSync(p) || waiting.has(p), read: headingsOf })
      .filter(
        (b) =>
          !(
            b.reason.startsWith('no heading') &&
            absent(resolve(dirname(b.file), b.target.split('#')[0] ?? ''))
          ),
      )
      .map((b) => `${relative(root, b.file)}:${b.line}: ${b.reason}`),
  );
}
