#!/usr/bin/env node
// `npx herald …`: the admin CLI. Runs its bundle (built by `npm ci`), rebuilding it first when a source
// changed since; from the TypeScript source through tsx only when it cannot be built.
import { pathToFileURL } from 'node:url';
import { buildCli, bundlePath, isFresh } from './cli/bundle.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const bundle = bundlePath();
let entry = pathToFileURL(bundle).href;
if (!isFresh(bundle)) {
  try {
    await buildCli(bundle);
  } catch (err) {
    // esbuild's message is "Build failed with 1 error:"; the error itself is in `errors`.
    const first = err?.errors?.[0];
    const reason = first
      ? `${first.location ? `${first.location.file}:${first.location.line}: ` : ''}${first.text}`
      : String(err?.message ?? err).split('\n')[0];
    process.stderr.write(`herald: running from source (slower): could not build ${bundle}: ${reason}\n`);
    const { register } = await import('tsx/esm/api');
    register();
    entry = new URL('./herald.ts', import.meta.url).href;
  }
}
await import(entry);
