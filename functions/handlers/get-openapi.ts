import { buildOpenApi } from '#core/openapi';
import { DOCS_URL } from '#shared/config';
import { jsonResponse, publicHandler } from '#shared/envelope';

// Built once per container, on first use: it is static for a deployment.
let doc: unknown;

export const handler = publicHandler(async () => {
  doc ??= buildOpenApi({ docsUrl: DOCS_URL });
  return jsonResponse(200, doc, { 'cache-control': 'public, max-age=300' });
});
