import { ApiError } from '#core/errors';
import { CONSOLE_PATH } from '#core/vocabulary';
import { statusPage } from '#handlers/views/status';
import { consolePages, matchPath, operations } from '#lib/operations';
import { consoleNotFound, securityHeadersFor } from '#shared/console';
import { type HttpEvent, type HttpResult, publicHandler } from '#shared/envelope';

// API Gateway's $default route (and the local front door's fallback): a path we do not serve is a
// 404, a known path with another method a 405 with Allow — both as problem+json with a request id.
// A page the console does not have is the console's HTML 404 (a person followed a link), in the
// signed-in frame when the session cookie names a live session (read only: this function cannot write).
async function routeNotFound(event: HttpEvent): Promise<HttpResult> {
  const path = event.rawPath ?? event.requestContext.http.path;
  const method = event.requestContext.http.method;
  const routes = [...operations, ...consolePages.flatMap((page) => page.routes)];
  const allowed = [...new Set(routes.filter((r) => matchPath(r.path, path)).map((r) => r.method))];
  if (allowed.length) {
    throw new ApiError('method_not_allowed', `Use ${allowed.join(', ')} on ${path}.`, {
      headers: { allow: allowed.join(', ') },
    });
  }
  if (
    (method === 'GET' || method === 'HEAD') &&
    (path === CONSOLE_PATH || path.startsWith(`${CONSOLE_PATH}/`))
  ) {
    // Loaded for a console address only: the API's 404s and 405s stay free of the table client.
    const { consoleGate } = await import('#usecases/support/console-gate');
    const res = await consoleNotFound(event, statusPage, consoleGate);
    // HSTS too on https (the 404 frame sets the others).
    return { ...res, headers: { ...res.headers, ...securityHeadersFor(event) } };
  }
  throw new ApiError('resource_not_found', `No route ${method} ${path}.`);
}

export const handler = publicHandler(routeNotFound);
