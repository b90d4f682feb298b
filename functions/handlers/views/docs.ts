import { documentOf, type HtmlValue, html } from '#core/html';
import { DOCS_PATH } from '#shared/config';
import { assetUrl } from '#shared/console';
import type { DocsIndex, DocsPage, GuidePageRef, ProblemPage } from '#usecases/docs';

// The guides' pages (GET /docs, /docs/api/{page}, /docs/api/problems/{code}, /docs/operator/{page}): plain documents in the
// console's style sheet, no script, every value escaped (the markdown renderer escapes its own).

const GUIDE_NAMES = { api: 'API guide', operator: "operator's guide" } as const;

function frame(
  title: string,
  body: HtmlValue,
  pages: readonly GuidePageRef[] = [],
  guide: keyof typeof GUIDE_NAMES = 'api',
): string {
  const name = `Herald ${GUIDE_NAMES[guide]}`;
  return documentOf(html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} – ${name}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${assetUrl('console.css')}">
</head>
<body>
<a class="skip-link" href="#main">Skip to main content</a>
<header class="header">
<div class="header__bar"><a class="header__brand" href="${DOCS_PATH}">${name}</a></div>
${
  pages.length > 0 &&
  html`<nav class="nav" aria-label="${GUIDE_NAMES[guide]}">
<ul>${pages.map((p) => html`<li><a href="${p.href}">${p.title}</a></li>`)}</ul>
</nav>`
}
</header>
<main id="main" class="main" tabindex="-1">
${body}
</main>
<footer class="footer"><p>Served by this Herald deployment. The machine-readable description: <a href="/v1/openapi.json">/v1/openapi.json</a>.</p></footer>
</body>
</html>`);
}

export function docsIndexPage(index: DocsIndex): string {
  return frame(
    'Contents',
    html`<h1>Herald API guide</h1>
<p>How to use this deployment's Social Publishing API: read the pages in order, or go straight to one.</p>
<ol>${index.pages.map((p) => html`<li><a href="${p.href}">${p.title}</a></li>`)}</ol>
<h2 id="problem-codes">Problem codes</h2>
<p>Every error is a problem document whose <code>type</code> links to its code's page here.</p>
<table>
<thead><tr><th scope="col">Code</th><th scope="col">Status</th><th scope="col">Title</th></tr></thead>
<tbody>${index.problems.map(
      (p) =>
        html`<tr><td><a href="${p.href}"><code>${p.code}</code></a></td><td>${p.status}</td><td>${p.title}</td></tr>`,
    )}</tbody>
</table>
<h2 id="operators-guide">Operator's guide</h2>
<p>For whoever runs this deployment: deploying, settings, alarms and what to do about them, upgrades.</p>
<ul>${index.operatorPages.map((p) => html`<li><a href="${p.href}">${p.title}</a></li>`)}</ul>`,
  );
}

export function docsGuidePage(page: DocsPage): string {
  return frame(page.title, page.body, page.pages, page.guide);
}

export function docsProblemPage(problem: ProblemPage): string {
  return frame(
    problem.title,
    html`<p><a href="${DOCS_PATH}">API guide</a> › Problem codes</p>
<h1>${problem.title}</h1>
<dl>
<dt>Code</dt><dd><code>${problem.code}</code></dd>
<dt>HTTP status</dt><dd>${problem.status}</dd>
</dl>
${
  problem.meaning &&
  html`<h2>What it means</h2>
${problem.meaning}`
}
${
  problem.guideHref &&
  html`<p>More in the guide: <a href="${problem.guideHref}">Errors</a>, which also lists the field-level codes of <code>validation_failed</code>.</p>`
}`,
  );
}
