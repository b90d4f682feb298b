import { docsGuidePage, docsIndexPage, docsProblemPage } from '#handlers/views/docs';
import { findOperation } from '#lib/operations';
import { securityHeadersFor } from '#shared/console';
import { type HttpEvent, type HttpResult, publicHandler } from '#shared/envelope';
import { docsIndex, docsPage, operatorPage, problemPage } from '#usecases/docs';

// GET /docs, /docs/api/{page}, /docs/api/problems/{code} and /docs/operator/{page}: the guides this
// deployment serves, no API key (getDocsIndex, getDocsPage, getProblemPage, getOperatorGuidePage
// share this handler). An unknown page or code is
// a 404 problem, like any other.

const OPERATOR_ROUTE = (({ method, path }) => `${method} ${path}`)(findOperation('getOperatorGuidePage'));

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
  // The route API Gateway (or the local front door) matched tells the two guides' pages apart.
  if (name !== undefined && event.routeKey === OPERATOR_ROUTE)
    return page(docsGuidePage(operatorPage(name)), event);
  if (name !== undefined) return page(docsGuidePage(docsPage(name)), event);
  return page(docsIndexPage(docsIndex()), event);
});
