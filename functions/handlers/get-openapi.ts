import { docsUrl } from '#shared/config';
import { publicHandler, rawJsonResponse } from '#shared/envelope';
import { runningVersion } from '#shared/version';
import { buildOpenApi } from '#usecases/openapi';

// Built and serialized once per container, on first use: it is static for a deployment (its
// problem types point at the deployment's own guide, docsUrl; it names the running release and commit).
let json: string | undefined;

export const handler = publicHandler(async (event) => {
  json ??= JSON.stringify(
    buildOpenApi({ docsUrl: docsUrl(event.requestContext?.domainName), ...runningVersion() }),
  );
  return rawJsonResponse(200, json, { 'cache-control': 'public, max-age=300' });
});
