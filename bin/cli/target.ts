import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../local/services.ts';
import { dataDir, readStackInfo } from '../local/stack-file.ts';

// Where the admin CLI points the adapters: a deployed stack (its TableName output, with the caller's
// AWS credentials) or the local stack running for the data directory.

export interface Target {
  kind: 'stack' | 'local';
  env: Record<string, string>;
}

export async function resolveTarget(
  opts: { stack?: string | undefined; region?: string | undefined },
  cfn?: CloudFormationClient,
): Promise<Target> {
  if (opts.stack) {
    const client = cfn ?? new CloudFormationClient(opts.region ? { region: opts.region } : {});
    const res = await client.send(new DescribeStacksCommand({ StackName: opts.stack }));
    const table = res.Stacks?.[0]?.Outputs?.find((o) => o.OutputKey === 'TableName')?.OutputValue;
    if (!table) throw new Error(`stack ${opts.stack} has no TableName output; is it a Herald stack?`);
    return { kind: 'stack', env: { TABLE_NAME: table, ...(opts.region ? { AWS_REGION: opts.region } : {}) } };
  }
  const info = readStackInfo(dataDir());
  if (!info) {
    throw new Error(
      `no local stack is running for ${dataDir()}: start it with \`npm start\` (or pass --stack NAME for a deployment)`,
    );
  }
  return {
    kind: 'local',
    env: {
      TABLE_NAME: info.tableName,
      AWS_ENDPOINT_URL_DYNAMODB: info.dynamodbEndpoint,
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    },
  };
}
