import { join } from 'node:path';
import {
  API_GUIDE_BUNDLE_DIR,
  API_GUIDE_SOURCE,
  OPERATOR_GUIDE_BUNDLE_DIR,
  OPERATOR_GUIDE_SOURCE,
} from '../functions/core/vocabulary.ts';

// The guides' markdown in the docs function's bundle: the function renders the pages it finds
// there, so the guides a deployment serves are the ones its code was built with.

const quote = (path: string) => `"${path.replace(/(["\\$`])/g, '\\$1')}"`;

/**
 * Shell commands for NodejsFunction's `afterBundling` hook: every page of API_GUIDE_SOURCE and
 * OPERATOR_GUIDE_SOURCE (the bundling input is the repository) into their folders of the bundle.
 */
export function copyApiGuideCommands(inputDir: string, outputDir: string): string[] {
  return [
    [API_GUIDE_SOURCE, API_GUIDE_BUNDLE_DIR],
    [OPERATOR_GUIDE_SOURCE, OPERATOR_GUIDE_BUNDLE_DIR],
  ].flatMap(([source, bundled]) => {
    const dir = join(outputDir, bundled as string);
    return [`mkdir -p ${quote(dir)}`, `cp ${quote(join(inputDir, source as string))}/*.md ${quote(dir)}/`];
  });
}
