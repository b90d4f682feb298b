import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { requireEnv } from '#shared/config';

// The MCP server runs a tool by invoking the operation's own Lambda with the API Gateway event the
// REST call would have produced: the same pipeline (auth, scope, limits, metering, validation),
// the same least-privilege role, and no business logic in the MCP bundle. Locally the Lambda
// stand-in invokes the same handler modules.

const lambda = new LambdaClient({ maxAttempts: 2 });
let names: Record<string, string> | undefined;

function functionName(operationId: string): string {
  names ??= JSON.parse(requireEnv('HERALD_OPERATION_FUNCTIONS')) as Record<string, string>;
  const name = names[operationId];
  if (!name) throw new Error(`no function for operation ${operationId}`);
  return name;
}

export async function invokeOperation(
  operationId: string,
  event: APIGatewayProxyEventV2,
): Promise<APIGatewayProxyStructuredResultV2> {
  const res = await lambda.send(
    new InvokeCommand({
      FunctionName: functionName(operationId),
      Payload: Buffer.from(JSON.stringify(event)),
    }),
  );
  const text = res.Payload ? Buffer.from(res.Payload).toString('utf8') : '';
  if (res.FunctionError)
    throw new Error(`operation ${operationId} failed: ${res.FunctionError} ${text.slice(0, 300)}`);
  return JSON.parse(text) as APIGatewayProxyStructuredResultV2;
}
