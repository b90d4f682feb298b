import { apiGuidePages, README_PAGE } from '#adapters/api-guide';
import { ApiError, PROBLEMS, type ProblemCode, problemCodeOf, problemSlug } from '#core/errors';
import type { SafeHtml } from '#core/html';
import { headingSlug, renderMarkdown } from '#core/markdown';
import { DOCS_PATH } from '#shared/config';

// The API guide a deployment serves at /docs: its contents, each page of docs/api rendered to
// HTML, and one page per problem code (where every problem's `type` URI points, unless the
// operator set docsUrl elsewhere). Pages are rendered once per container: they are static.

/** The guide's reading order; a page not listed here follows, by name. */
const ORDER = [
  'concepts',
  'authentication',
  'posts',
  'channels',
  'media',
  'webhooks',
  'analytics',
  'pagination',
  'idempotency',
  'limits',
  'errors',
  'mcp',
];

export interface GuidePageRef {
  readonly name: string;
  readonly title: string;
  readonly href: string;
}

export interface ProblemRef {
  readonly code: ProblemCode;
  readonly title: string;
  readonly status: number;
  readonly href: string;
}

export interface DocsIndex {
  readonly pages: readonly GuidePageRef[];
  readonly problems: readonly ProblemRef[];
}

export interface DocsPage {
  readonly name: string;
  readonly title: string;
  readonly body: SafeHtml;
  readonly pages: readonly GuidePageRef[];
}

export interface ProblemPage extends ProblemRef {
  /** The errors page's table row on this code ("When"), rendered; undefined without that page. */
  readonly meaning: SafeHtml | undefined;
  /** The errors page's section on this code, when the guide has that page. */
  readonly guideHref: string | undefined;
}

const pageHref = (name: string) => `${DOCS_PATH}/api/${name}`;
const problemHref = (code: ProblemCode) => `${DOCS_PATH}/api/problems/${problemSlug(code)}`;

/**
 * A link of a guide page, on the served page: another guide page (with its anchor) or the
 * OpenAPI document by their served paths; anchors and absolute URLs as they are; anything else
 * (the repository's other files) keeps only its text.
 */
function linkOn(names: ReadonlySet<string>) {
  return (href: string): string | null => {
    if (/^(https?:|mailto:|#)/i.test(href)) return href;
    const [path = '', anchor] = href.split('#', 2);
    if (/(^|\/)openapi\.json$/.test(path)) return '/v1/openapi.json';
    const name = /^(?:\.\/)?README\.md$/.test(path)
      ? README_PAGE
      : /^(?:\.\/)?([a-z0-9][a-z0-9-]*)\.md$/.exec(path)?.[1];
    if (!name || !names.has(name)) return null;
    return `${pageHref(name)}${anchor ? `#${anchor}` : ''}`;
  };
}

interface Rendered {
  readonly index: DocsIndex;
  readonly pages: ReadonlyMap<string, DocsPage>;
  readonly meanings: ReadonlyMap<string, SafeHtml>;
}

/** A row of the errors page's problem-code table: `| \`code\` | status | when |`. */
const PROBLEM_ROW = /^\| `([a-z_]+)` \| \d{3} \| (.+) \|$/gm;

let rendered: Rendered | undefined;

function render(): Rendered {
  if (rendered) return rendered;
  const sources = apiGuidePages();
  const rank = (name: string) => {
    const i = ORDER.indexOf(name);
    return i === -1 ? ORDER.length : i;
  };
  const names = [...sources.keys()].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  const link = linkOn(new Set(names));
  const bodies = new Map(
    names.map((name) => [name, renderMarkdown(sources.get(name) as string, link)] as const),
  );
  const refs = names.map((name) => ({
    name,
    title: bodies.get(name)?.title || name,
    href: pageHref(name),
  }));
  const pages = new Map(
    refs.map((ref) => [
      ref.name,
      {
        name: ref.name,
        title: ref.title,
        body: (bodies.get(ref.name) as { body: SafeHtml }).body,
        pages: refs,
      },
    ]),
  );
  const problems = (Object.keys(PROBLEMS) as ProblemCode[]).map((code) => ({
    code,
    title: PROBLEMS[code].title,
    status: PROBLEMS[code].status,
    href: problemHref(code),
  }));
  // What each code means, as the guide's errors page says it (said once, there).
  const meanings = new Map(
    [...(sources.get('errors') ?? '').matchAll(PROBLEM_ROW)].map(
      (m) => [m[1] as string, renderMarkdown(m[2] as string, link).body] as const,
    ),
  );
  rendered = { index: { pages: refs, problems }, pages, meanings };
  return rendered;
}

/** The guide's contents: its pages in reading order, and every problem code. */
export function docsIndex(): DocsIndex {
  return render().index;
}

/** One page of the guide, by its name (`posts` for docs/api/posts.md). */
export function docsPage(name: string): DocsPage {
  const page = render().pages.get(name);
  if (!page) throw new ApiError('resource_not_found', `The API guide has no page ${name}.`);
  return page;
}

/** A problem code's page, by the code as its `type` URI ends (`validation-failed`; `_` works too). */
export function problemPage(slug: string): ProblemPage {
  const code = problemCodeOf(slug);
  if (!code) throw new ApiError('resource_not_found', `There is no problem code ${slug}.`);
  const { pages, meanings } = render();
  // The errors page's table lists every code; resource_conflict's cases have their own section.
  const section = code === 'resource_conflict' ? headingSlug('`resource_conflict` cases') : 'problem-codes';
  return {
    code,
    title: PROBLEMS[code].title,
    status: PROBLEMS[code].status,
    meaning: meanings.get(code),
    href: problemHref(code),
    guideHref: pages.has('errors') ? `${pageHref('errors')}#${section}` : undefined,
  };
}
