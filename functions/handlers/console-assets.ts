import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ActError } from '#core/people';
import { statusPage } from '#handlers/views/status';
import { CONSOLE_ASSET_FILES, CONSOLE_ASSETS_BUNDLE_DIR } from '#lib/operations';
import { consoleHandlers } from '#shared/console';

// The console's static files (styles, our script, the WebAuthn browser library), read once per
// container. In Lambda they sit in a folder next to the bundle (copied there by the stack); run
// from the repository (the local stack, tests) they are read where they live.

const bundled = fileURLToPath(new URL(`./${CONSOLE_ASSETS_BUNDLE_DIR}/`, import.meta.url));
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

const files = new Map(
  Object.entries(CONSOLE_ASSET_FILES).map(([name, { source, contentType }]) => {
    const path = existsSync(bundled) ? join(bundled, name) : join(repoRoot, source);
    return [name, { body: readFileSync(path, 'utf8'), contentType }] as const;
  }),
);

/** Pages link the files with `?v=<hash of the files>`: such a URL never changes content. */
const VERSIONED = 'public, max-age=31536000, immutable';
const UNVERSIONED = 'public, max-age=300';

// Public files: no session is resolved here, so this function needs no table.
const assetsPage = consoleHandlers({ gate: { resolve: async () => null }, statusPage });

export const { handler } = assetsPage('consoleAssets', {
  'GET /console/assets/{file}': {
    who: 'anyone',
    run: async ({ params, query }) => {
      const file = files.get(params.file ?? '');
      if (!file) throw new ActError('There is no such file.', 'not_found');
      return {
        kind: 'file',
        body: file.body,
        contentType: file.contentType,
        cacheControl: query.has('v') ? VERSIONED : UNVERSIONED,
      };
    },
  },
});
