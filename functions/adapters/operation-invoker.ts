import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { once } from '#core/once';
import { requireEnv } from '#shared/config';

// The MCP server runs a tool by invoking the operation's own Lambda with the API Gateway event the
// REST call would have produced: the same pipeline (auth, scope, limits, metering, validation),
// the same least-privilege role, and no business logic in the MCP bundle. Locally the Lambda
// stand-in invokes the same handler modules.

// The Lambda client is loaded on the first tool call, not at module load: initialize and
// tools/list, the first requests of every MCP session, never need it, and its module costs ≈ 20 ms
// of init (BENCHMARKS.md, cold start). One client per container, as for every SDK client.
const lambdaClient = once(() => import('./lambda-client.ts'));

const names = once(() => JSON.parse(requireEnv('HERALD_OPERATION_FUNCTIONS')) as Record<string, string>);

function functionName(operationId: string): string {
  const name = names()[operationId];
  if (!name) throw new Error(`no function for operation ${operationId}`);
  return name;
}

export async function invokeOperation(
  operationId: string,
  event: APIGatewayProxyEventV2,
): Promise<APIGatewayProxyStructuredResultV2> {
  return (await invokeFunction(
    functionName(operationId),
    event,
    `operation ${operationId}`,
  )) as APIGatewayProxyStructuredResultV2;
}

/**
 * Invokes a function and waits for its answer (RequestResponse): its parsed payload, or an Error
 * naming `what` when the function failed. Shared with the probe's caller (adapters/probe-function.ts).
 */
export async function invokeFunction(
  name: string,
  payload: unknown,
  what: string,
  opts: { signal?: AbortSignal } = {},
): Promise<unknown> {
  const { lambda, InvokeCommand } = await lambdaClient();
  // A caller that stops waiting (`signal`) leaves the function running to its end.
  const res = await lambda.send(
    new InvokeCommand({
      FunctionName: name,
      InvocationType: 'RequestResponse',
      Payload: Buffer.from(JSON.stringify(payload)),
    }),
    opts.signal ? { abortSignal: opts.signal } : {},
  );
  const text = res.Payload ? Buffer.from(res.Payload).toString('utf8') : '';
  if (res.FunctionError) throw new Error(`${what} failed: ${res.FunctionError} ${text.slice(0, 300)}`);
  return JSON.parse(text) as unknown;
}
