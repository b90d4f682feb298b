import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONSOLE_ASSET_FILES, CONSOLE_ASSETS_BUNDLE_DIR } from './operations.ts';

// The console's static files outside Lambda: their version (pages link them with `?v=`, so they
// can be cached for a year) and the commands that copy them into the assets function's bundle.
// Plain Node, no CDK: the local stack uses it too.

/** A short hash of every asset file's name and bytes: changes whenever any of them does. */
export function consoleAssetsVersion(root: string): string {
  const hash = createHash('sha256');
  for (const [name, { source }] of Object.entries(CONSOLE_ASSET_FILES))
    hash
      .update(name)
      .update('\0')
      .update(readFileSync(join(root, source)))
      .update('\0');
  return hash.digest('hex').slice(0, 16);
}

const quote = (path: string) => `"${path.replace(/(["\\$`])/g, '\\$1')}"`;

/**
 * Shell commands for NodejsFunction's `afterBundling` hook: each file from the repository (the
 * bundling input) into CONSOLE_ASSETS_BUNDLE_DIR of the bundle, under its served name.
 */
export function copyConsoleAssetsCommands(inputDir: string, outputDir: string): string[] {
  const dir = join(outputDir, CONSOLE_ASSETS_BUNDLE_DIR);
  return [
    `mkdir -p ${quote(dir)}`,
    ...Object.entries(CONSOLE_ASSET_FILES).map(
      ([name, { source }]) => `cp ${quote(join(inputDir, source))} ${quote(join(dir, name))}`,
    ),
  ];
}
