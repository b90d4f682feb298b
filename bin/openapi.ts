// Writes docs/openapi.json from the same generator the API serves at /v1/openapi.json.
import { writeFileSync } from 'node:fs';
import { DOCS_URL } from '#shared/config';
import { buildOpenApi } from '#usecases/openapi';

const out = process.argv[2] ?? 'docs/openapi.json';
writeFileSync(out, `${JSON.stringify(buildOpenApi({ docsUrl: DOCS_URL }), null, 2)}\n`);
console.log(`wrote ${out}`);
