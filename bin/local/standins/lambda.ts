import type { IncomingMessage, ServerResponse } from 'node:http';
import { send } from './http.ts';

// Lambda Invoke (REST, RequestResponse): the MCP server's tool calls, the probe and `herald stream
// replay` (invoked-functions.ts says which). `invoke` runs the named function's handler with the
// payload, as Lambda would.

export type Invoke = (functionName: string, payload: unknown) => Promise<unknown>;

const INVOCATION = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;

/** The REST route (POST /2015-03-31/functions/<name>/invocations); false for any other request. */
export function createLambda(invoke: Invoke) {
  return async (req: IncomingMessage, path: string, raw: string, res: ServerResponse): Promise<boolean> => {
    const invocation = INVOCATION.exec(path);
    if (req.method !== 'POST' || !invocation) return false;
    const name = decodeURIComponent(invocation[1] ?? '');
    try {
      const result = await invoke(name, raw.length ? JSON.parse(raw) : {});
      send(res, 200, 'application/json', result ?? null);
    } catch (err) {
      // Lambda answers 200 with X-Amz-Function-Error and the error as the payload.
      res.writeHead(200, { 'content-type': 'application/json', 'x-amz-function-error': 'Unhandled' });
      res.end(JSON.stringify({ errorType: (err as Error).name, errorMessage: (err as Error).message }));
    }
    return true;
  };
}
