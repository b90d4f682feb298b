#!/usr/bin/env node
// `npx herald …`: the admin CLI, run from its TypeScript source through tsx.
import { register } from 'tsx/esm/api';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
register();
await import('./herald.ts');
