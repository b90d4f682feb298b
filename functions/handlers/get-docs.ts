import { docsGuidePage, docsIndexPage, docsProblemPage } from '#handlers/views/docs';
import { securityHeadersFor } from '#shared/console';
import { type HttpEvent, type HttpResult, publicHandler } from '#shared/envelope';
import { docsIndex, docsPage, problemPage } from '#usecases/docs';

// GET /docs, /docs/api/{page} and /docs/api/problems/{code}: the API guide this deployment serves, no API
// key (getDocsIndex, getDocsPage, getProblemPage share this handler). An unknown page or code is
// a 404 problem, like any other.

function page(body: string, event: HttpEvent): HttpResult {
  return {
    statusCode: 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'public, max-age=300',
      // The console's: a strict CSP (no script, styles and images from here only), HSTS on https.
      ...securityHeadersFor(event),
    },
    body,
  };
}

export const handler = publicHandler(async (event) => {
  const { page: name, code } = event.pathParameters ?? {};
  if (code !== undefined) return page(docsProblemPage(problemPage(code)), event);
  if (name !== undefined) return page(docsGuidePage(docsPage(name)), event);
  return page(docsIndexPage(docsIndex()), event);
});
