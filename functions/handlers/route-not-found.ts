import { ApiError } from '#core/errors';
import { consolePages, matchPath, operations } from '#lib/operations';
import { type HttpEvent, type HttpResult, publicHandler } from '#shared/envelope';

// API Gateway's $default route (and the local front door's fallback): a path we do not serve is a
// 404, a known path with another method a 405 with Allow — both as problem+json with a request id.
async function routeNotFound(event: HttpEvent): Promise<HttpResult> {
  const path = event.rawPath ?? event.requestContext.http.path;
  const routes = [...operations, ...consolePages.flatMap((page) => page.routes)];
  const allowed = [...new Set(routes.filter((r) => matchPath(r.path, path)).map((r) => r.method))];
  if (allowed.length) {
    throw new ApiError('method_not_allowed', `Use ${allowed.join(', ')} on ${path}.`, {
      headers: { allow: allowed.join(', ') },
    });
  }
  throw new ApiError('resource_not_found', `No route ${event.requestContext.http.method} ${path}.`);
}

export const handler = publicHandler(routeNotFound);
