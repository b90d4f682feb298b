import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROBLEMS, type ProblemCode, problemSlug } from '#core/errors';
import { escapeHtml } from '#core/html';
import { API_GUIDE_SOURCE } from '#core/vocabulary';
import { handler } from '#handlers/get-docs';
import { REPO_ROOT } from '#lib/herald-function';
import { operations } from '#lib/operations';
import { securityHeaders } from '#shared/console';
import type { HttpResult } from '#shared/envelope';
import { anchors } from '../../support/doc-links.ts';
import { apiEvent, lambdaContext, problemOf } from '../support/fixtures.ts';

// The API guide the deployment serves: GET /docs, /docs/api/{page}, /docs/api/problems/{code}.

const call = async (op: string, pathParameters?: Record<string, string>) =>
  (await handler(apiEvent(op, pathParameters ? { pathParameters } : {}), lambdaContext())) as HttpResult;

const guideDir = join(REPO_ROOT, API_GUIDE_SOURCE);
const guidePages = readdirSync(guideDir)
  .filter((f) => f.endsWith('.md'))
  .map((f) => (f === 'README.md' ? 'overview' : f.slice(0, -3)));
const codes = Object.keys(PROBLEMS) as ProblemCode[];
const hrefs = (html: string) => [...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1] as string);

describe('the manifest', () => {
  it('serves the four routes without an API key, from one handler that bundles the guides', () => {
    const docs = operations.filter((o) => o.entry === 'functions/handlers/get-docs.ts');
    expect(docs.map((o) => `${o.method} ${o.path}`)).toEqual([
      'GET /docs',
      'GET /docs/api/{page}',
      'GET /docs/api/problems/{code}',
      'GET /docs/operator/{page}',
    ]);
    for (const op of docs)
      expect(op).toMatchObject({ scope: null, tag: 'Meta', bundlesGuide: true, access: { table: 'none' } });
  });
});

describe('GET /docs', () => {
  it('lists every guide page and every problem code, as HTML under the strict CSP', async () => {
    const res = await call('getDocsIndex');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers).toMatchObject(securityHeaders());
    expect(res.headers['strict-transport-security']).toBe('max-age=31536000'); // https host
    const links = hrefs(res.body as string);
    for (const page of guidePages) expect(links, page).toContain(`/docs/api/${page}`);
    for (const code of codes) expect(links, code).toContain(`/docs/api/problems/${problemSlug(code)}`);
    expect(res.body).not.toMatch(/<script/);
  });
});

describe('GET /docs/api/{page}', () => {
  it.each(guidePages)('renders %s, with no raw HTML, and links that stay inside the guide', async (page) => {
    const res = await call('getDocsPage', { page });
    expect(res.statusCode).toBe(200);
    const body = res.body as string;
    expect(body).not.toMatch(/<script|<img|<iframe|javascript:/i);
    expect(body).toMatch(/<h1 id="[a-z-]+">/);
    // The page's own links (the frame has the favicon's data: URL and the style sheet).
    const main = body.split('<main')[1]?.split('</main>')[0] ?? '';
    for (const href of hrefs(main)) {
      const [path = '', anchor] = href.split('#');
      if (/^https?:\/\/|^mailto:/.test(href) || path === '/v1/openapi.json' || path.startsWith('/console/'))
        continue;
      if (path === '') {
        expect(body, `${page}: #${anchor}`).toContain(`id="${anchor}"`);
        continue;
      }
      // A page of the operator's guide (served too: its links to docs/operator resolve).
      const operator = /^\/docs\/operator\/([a-z0-9-]+)$/.exec(path)?.[1];
      if (operator) {
        expect(readdirSync(join(REPO_ROOT, 'docs/operator')), `${page}: ${href}`).toContain(`${operator}.md`);
        continue;
      }
      // Another guide page (and, with an anchor, a heading the page has).
      const target = /^\/docs(?:\/api\/([a-z0-9-]+))?$/.exec(path);
      expect(target, `${page}: ${href}`).not.toBeNull();
      const name = target?.[1];
      if (name) expect(guidePages, `${page}: ${href}`).toContain(name);
      if (name && anchor)
        expect(
          [...anchors(readFileSync(join(guideDir, `${name}.md`), 'utf8'))],
          `${page}: ${href}`,
        ).toContain(anchor);
    }
  });

  it('answers 404 resource_not_found for a page the guide does not have', async () => {
    for (const page of ['nope', '..', 'errors.md', 'README']) {
      const res = await call('getDocsPage', { page });
      expect(res.statusCode, page).toBe(404);
      expect(problemOf(res).code).toBe('resource_not_found');
    }
  });
});

describe('GET /docs/api/problems/{code}', () => {
  it.each(codes)('%s: its title, status and meaning, and the guide section', async (code) => {
    const res = await call('getProblemPage', { code: problemSlug(code) });
    expect(res.statusCode).toBe(200);
    const body = res.body as string;
    expect(body).toContain(`<h1>${PROBLEMS[code].title}</h1>`);
    expect(body).toContain(`<code>${code}</code>`);
    expect(body).toContain(`<dd>${PROBLEMS[code].status}</dd>`);
    // What it means: the errors page's row on the code, its words (markdown and all) on the page.
    const row = readFileSync(join(guideDir, 'errors.md'), 'utf8')
      .split('\n')
      .find((line) => line.startsWith(`| \`${code}\` |`));
    const cell = row?.split(' | ')[2]?.replace(/ \|$/, '') ?? '';
    // Its words up to the first link or aside, as text (markup and code spans aside).
    const when = cell.replaceAll('`', '').split(/[[(;]/)[0]?.trim() ?? '';
    expect(when.length, code).toBeGreaterThan(5);
    const meaning =
      body
        .split('<h2>What it means</h2>')[1]
        ?.split('</p>')[0]
        ?.replace(/<[^>]+>/g, '') ?? '';
    expect(meaning, code).toContain(escapeHtml(when));
    const errorsLink = hrefs(body).find((h) => h.startsWith('/docs/api/errors#'));
    const anchor = errorsLink?.split('#')[1];
    expect([...anchors(readFileSync(join(guideDir, 'errors.md'), 'utf8'))]).toContain(anchor);
  });

  it('takes the code with underscores too', async () => {
    expect((await call('getProblemPage', { code: 'rate_limited' })).statusCode).toBe(200);
  });

  it('answers 404 for a code that does not exist (and its own type points at its page)', async () => {
    const res = await call('getProblemPage', { code: 'no-such-code' });
    expect(res.statusCode).toBe(404);
    expect(problemOf(res).type).toBe('https://api.unit/docs/api/problems/resource-not-found');
    expect((await call('getProblemPage', { code: 'constructor' })).statusCode).toBe(404);
  });

  it('the errors page lists exactly the codes of the catalog', () => {
    const table = readFileSync(join(guideDir, 'errors.md'), 'utf8')
      .split('## Problem codes')[1]
      ?.split('\n### ')[0];
    const listed = [...(table ?? '').matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]);
    expect(listed.sort()).toEqual([...codes].sort());
  });
});

describe('GET /docs/operator/{page}', () => {
  const operatorDir = join(REPO_ROOT, 'docs/operator');
  const operatorPages = readdirSync(operatorDir)
    .filter((f) => f.endsWith('.md'))
    .map((f) => (f === 'README.md' ? 'overview' : f.slice(0, -3)));

  it.each(operatorPages)("serves docs/operator/%s as a page of the operator's guide", async (name) => {
    const res = await call('getOperatorGuidePage', { page: name });
    expect(res.statusCode).toBe(200);
    const body = res.body as string;
    expect(body).toContain('Herald operator&#39;s guide');
    // Its navigation is the operator's guide, not the API guide.
    expect(body).toContain('href="/docs/operator/deploy"');
    expect(body).not.toContain('href="/docs/api/posts"><');
  });

  it('links its pages to each other and to the API guide by their served paths', async () => {
    const body = (await call('getOperatorGuidePage', { page: 'cli' })).body as string;
    const links = hrefs(body).filter((h) => h.startsWith('/docs/'));
    expect(links.length).toBeGreaterThan(0);
    for (const href of links) expect(href).toMatch(/^\/docs\/(api|operator)\/[a-z0-9-]+(#.*)?$/);
    expect(body).not.toMatch(/href="[^"]*\.md/);
  });

  it('is the same route name a page of the API guide is not: an API page is not an operator page', async () => {
    const res = await call('getOperatorGuidePage', { page: 'posts' });
    expect(res.statusCode).toBe(404);
    expect(problemOf(res)).toMatchObject({
      code: 'resource_not_found',
      detail: "The operator's guide has no page posts.",
    });
    expect((await call('getDocsPage', { page: 'cli' })).statusCode).toBe(404);
  });

  it("lists the operator's guide on the contents page", async () => {
    const body = (await call('getDocsIndex')).body as string;
    for (const name of operatorPages) expect(body).toContain(`href="/docs/operator/${name}"`);
  });
});
