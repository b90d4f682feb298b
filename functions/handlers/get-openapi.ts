import { DOCS_URL } from '#shared/config';
import { publicHandler, rawJsonResponse } from '#shared/envelope';
import { buildOpenApi } from '#usecases/openapi';

// Built and serialized once per container, on first use: it is static for a deployment.
let json: string | undefined;

export const handler = publicHandler(async () => {
  json ??= JSON.stringify(buildOpenApi({ docsUrl: DOCS_URL }));
  return rawJsonResponse(200, json, { 'cache-control': 'public, max-age=300' });
});
