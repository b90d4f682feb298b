import { join } from 'node:path';
import { API_GUIDE_BUNDLE_DIR, API_GUIDE_SOURCE } from '../functions/core/vocabulary.ts';

// The API guide's markdown in the docs function's bundle: the function renders the pages it
// finds there, so the guide a deployment serves is the one its code was built with.

const quote = (path: string) => `"${path.replace(/(["\\$`])/g, '\\$1')}"`;

/**
 * Shell commands for NodejsFunction's `afterBundling` hook: every page of API_GUIDE_SOURCE (the
 * bundling input is the repository) into API_GUIDE_BUNDLE_DIR of the bundle.
 */
export function copyApiGuideCommands(inputDir: string, outputDir: string): string[] {
  const dir = join(outputDir, API_GUIDE_BUNDLE_DIR);
  return [`mkdir -p ${quote(dir)}`, `cp ${quote(join(inputDir, API_GUIDE_SOURCE))}/*.md ${quote(dir)}/`];
}
