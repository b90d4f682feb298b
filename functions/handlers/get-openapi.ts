import { buildOpenApi } from '#core/openapi';
import { DOCS_URL } from '#shared/config';
import { apiHandler } from '#shared/http';

// Built once per container, on first use: it is static for a deployment.
let doc: unknown;

export const { handler, impl } = apiHandler('getOpenApi', async () => {
  doc ??= buildOpenApi({ docsUrl: DOCS_URL });
  return { status: 200, body: doc, headers: { 'cache-control': 'public, max-age=300' } };
});
