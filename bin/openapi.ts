// Writes docs/openapi.json from the same generator the API serves at /v1/openapi.json.
import { writeFileSync } from 'node:fs';
import { heraldRelease } from '#lib/version';
import { DOCS_PATH } from '#shared/config';
import { buildOpenApi } from '#usecases/openapi';

// The committed document belongs to no deployment: its server is `/` and its problem types are
// relative to the deployment that serves them (`/docs/api/problems/<code>`); each deployment's own
// /v1/openapi.json carries its absolute URLs, and its commit.
const out = process.argv[2] ?? 'docs/openapi.json';
writeFileSync(
  out,
  `${JSON.stringify(buildOpenApi({ docsUrl: DOCS_PATH, version: heraldRelease() }), null, 2)}\n`,
);
console.log(`wrote ${out}`);
