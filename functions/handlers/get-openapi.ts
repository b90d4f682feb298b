import { docsUrl } from '#shared/config';
import { publicHandler, rawJsonResponse } from '#shared/envelope';
import { buildOpenApi } from '#usecases/openapi';

// Built and serialized once per container, on first use: it is static for a deployment (its
// problem types point at the deployment's own guide, docsUrl).
let json: string | undefined;

export const handler = publicHandler(async (event) => {
  json ??= JSON.stringify(buildOpenApi({ docsUrl: docsUrl(event.requestContext?.domainName) }));
  return rawJsonResponse(200, json, { 'cache-control': 'public, max-age=300' });
});
