import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { lean } from '#shared/sdk';

// Imported dynamically by operation-invoker.ts on the first tool call (a module of its own so the
// bundle keeps only the Invoke command).

export const lambda = lean(new LambdaClient({ maxAttempts: 2 }));
export { InvokeCommand };
