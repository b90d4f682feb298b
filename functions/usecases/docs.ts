import { apiGuidePages, operatorGuidePages, README_PAGE } from '#adapters/api-guide';
import { ApiError, PROBLEMS, type ProblemCode, problemCodeOf, problemSlug } from '#core/errors';
import type { SafeHtml } from '#core/html';
import { headingSlug, renderMarkdown } from '#core/markdown';
import { DOCS_PATH } from '#shared/config';

// The guides a deployment serves at /docs: the API guide's contents, each page of docs/api
// rendered to HTML, one page per problem code (where every problem's `type` URI points, unless
// the operator set docsUrl elsewhere), and the operator's guide, docs/operator (where the alarms'
// descriptions link). Pages are rendered once per container: they are static.

export type Guide = 'api' | 'operator';

/** The operator's guide's reading order; a page not listed here follows, by name. */
const OPERATOR_ORDER = [
  'overview',
  'deploy',
  'settings',
  'platform-apps',
  'domains',
  'cli',
  'alarms',
  'runbooks',
  'upgrading',
];

/** The API guide's reading order; a page not listed here follows, by name. */
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
  /** The operator's guide's pages, in reading order. */
  readonly operatorPages: readonly GuidePageRef[];
}

export interface DocsPage {
  readonly guide: Guide;
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

const pageHref = (name: string, guide: Guide = 'api') => `${DOCS_PATH}/${guide}/${name}`;
const problemHref = (code: ProblemCode) => `${DOCS_PATH}/api/problems/${problemSlug(code)}`;

/**
 * A link of a page of guide `on`, on the served page: a page of either guide (`x.md` in the same
 * folder, `../api/x.md`, `../operator/x.md`, with its anchor) or the OpenAPI document by their
 * served paths; anchors and absolute URLs as they are; anything else (the repository's other
 * files) keeps only its text.
 */
function linkOn(on: Guide, names: Readonly<Record<Guide, ReadonlySet<string>>>) {
  return (href: string): string | null => {
    if (/^(https?:|mailto:|#)/i.test(href)) return href;
    const [path = '', anchor] = href.split('#', 2);
    if (/(^|\/)openapi\.json$/.test(path)) return '/v1/openapi.json';
    const m = /^(?:\.\/|\.\.\/(api|operator)\/)?(README|[a-z0-9][a-z0-9-]*)\.md$/.exec(path);
    if (!m) return null;
    const guide = (m[1] as Guide | undefined) ?? on;
    const name = m[2] === 'README' ? README_PAGE : (m[2] as string);
    if (!names[guide].has(name)) return null;
    return `${pageHref(name, guide)}${anchor ? `#${anchor}` : ''}`;
  };
}

interface Rendered {
  readonly index: DocsIndex;
  readonly pages: ReadonlyMap<string, DocsPage>;
  readonly operatorPages: ReadonlyMap<string, DocsPage>;
  readonly meanings: ReadonlyMap<string, SafeHtml>;
}

/** A row of the errors page's problem-code table: `| \`code\` | status | when |`. */
const PROBLEM_ROW = /^\| `([a-z_]+)` \| \d{3} \| (.+) \|$/gm;

let rendered: Rendered | undefined;

/** A guide's page names in reading order. */
function ordered(sources: ReadonlyMap<string, string>, order: readonly string[]): string[] {
  const rank = (name: string) => {
    const i = order.indexOf(name);
    return i === -1 ? order.length : i;
  };
  return [...sources.keys()].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/** Every page of one guide, rendered, with the guide's contents as each page's navigation. */
function renderGuide(
  guide: Guide,
  sources: ReadonlyMap<string, string>,
  names: readonly string[],
  link: (href: string) => string | null,
): ReadonlyMap<string, DocsPage> {
  const bodies = new Map(
    names.map((name) => [name, renderMarkdown(sources.get(name) as string, link)] as const),
  );
  const refs = names.map((name) => ({
    name,
    title: bodies.get(name)?.title || name,
    href: pageHref(name, guide),
  }));
  return new Map(
    refs.map((ref) => [
      ref.name,
      {
        guide,
        name: ref.name,
        title: ref.title,
        body: (bodies.get(ref.name) as { body: SafeHtml }).body,
        pages: refs,
      },
    ]),
  );
}

function render(): Rendered {
  if (rendered) return rendered;
  const sources = apiGuidePages();
  const operatorSources = operatorGuidePages();
  const names = ordered(sources, ORDER);
  const operatorNames = ordered(operatorSources, OPERATOR_ORDER);
  const known = { api: new Set(names), operator: new Set(operatorNames) };
  const link = linkOn('api', known);
  const pages = renderGuide('api', sources, names, link);
  const operatorPages = renderGuide('operator', operatorSources, operatorNames, linkOn('operator', known));
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
  const refsOf = (all: ReadonlyMap<string, DocsPage>) => [...all.values()][0]?.pages ?? [];
  rendered = {
    index: { pages: refsOf(pages), problems, operatorPages: refsOf(operatorPages) },
    pages,
    operatorPages,
    meanings,
  };
  return rendered;
}

/** The guide's contents: its pages in reading order, and every problem code. */
export function docsIndex(): DocsIndex {
  return render().index;
}

/** One page of the API guide, by its name (`posts` for docs/api/posts.md). */
export function docsPage(name: string): DocsPage {
  const page = render().pages.get(name);
  if (!page) throw new ApiError('resource_not_found', `The API guide has no page ${name}.`);
  return page;
}

/** One page of the operator's guide, by its name (`alarms` for docs/operator/alarms.md). */
export function operatorPage(name: string): DocsPage {
  const page = render().operatorPages.get(name);
  if (!page) throw new ApiError('resource_not_found', `The operator's guide has no page ${name}.`);
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
