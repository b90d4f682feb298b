import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { pascal } from '../../lib/constructs/ids.ts';
import { queues } from '../../lib/operations.ts';
import { dataDir, LOCAL_REGION, readStackInfo } from '../local/stack-file.ts';

// Where the admin CLI points the adapters: a deployed stack (its TableName output, with the caller's
// AWS credentials) or the local stack running for the data directory. The console's URL, for the
// enrollment links the CLI issues, comes with it: the stack's ConsoleUrl output, or the local
// stack's HERALD_CONSOLE_URL (in its cliEnv).

export interface Target {
  kind: 'stack' | 'local';
  env: Record<string, string>;
}

export async function resolveTarget(
  opts: { stack?: string | undefined; region?: string | undefined },
  cfn?: CloudFormationClient,
): Promise<Target> {
  if (opts.stack) {
    // Loaded only for a deployment: the local target and --help start without it.
    const { CloudFormationClient, DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
    const client = cfn ?? new CloudFormationClient(opts.region ? { region: opts.region } : {});
    const res = await client.send(new DescribeStacksCommand({ StackName: opts.stack }));
    const outputs = res.Stacks?.[0]?.Outputs ?? [];
    const output = (key: string) => outputs.find((o) => o.OutputKey === key)?.OutputValue;
    const table = output('TableName');
    if (!table) throw new Error(`stack ${opts.stack} has no TableName output; is it a Herald stack?`);
    const key = output('ConnectionSecretsKeyArn');
    const publicUrl = output('PublicUrl');
    // Where enrollment links point (the console's origin).
    const consoleUrl = output('ConsoleUrl');
    return {
      kind: 'stack',
      env: {
        TABLE_NAME: table,
        ...(key ? { CONNECTION_SECRETS_KEY_ID: key } : {}),
        ...(publicUrl ? { HERALD_PUBLIC_URL: publicUrl } : {}),
        ...(consoleUrl ? { HERALD_CONSOLE_URL: consoleUrl } : {}),
        ...(opts.region ? { AWS_REGION: opts.region } : {}),
      },
    };
  }
  const info = readStackInfo(dataDir());
  if (!info) {
    throw new Error(
      `no local stack is running for ${dataDir()}: start it with \`npm start\` (or pass --stack NAME for a deployment)`,
    );
  }
  if (!info.dynamodbCredentials)
    throw new Error(`the local stack running for ${dataDir()} is from an older Herald: restart it`);
  return {
    kind: 'local',
    env: {
      ...info.cliEnv,
      TABLE_NAME: info.tableName,
      AWS_ENDPOINT_URL_DYNAMODB: info.dynamodbEndpoint,
      AWS_REGION: LOCAL_REGION,
      // DynamoDB Local's database for this data directory is the one of its key.
      AWS_ACCESS_KEY_ID: info.dynamodbCredentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: info.dynamodbCredentials.secretAccessKey,
    },
  };
}

/**
 * What the dead-letter and stream commands (bin/cli/dlq.ts, stream-replay.ts) reach besides the
 * table: each manifest queue's DLQ, the stream relay's on-failure queue, the table stream and the
 * stream relay function. Absent values are from an older deployment (the commands say so).
 */
export interface OpsTarget {
  /** By manifest queue name. */
  dlqs: Record<string, { dlqUrl?: string | undefined; queueUrl?: string | undefined }>;
  streamDlqUrl?: string | undefined;
  tableStreamArn?: string | undefined;
  streamRelayFunction?: string | undefined;
}

/** The local stack's env names for the values above (bin/local.ts puts them into its cliEnv). */
export const LOCAL_OPS_ENV = {
  streamDlqUrl: 'HERALD_STREAM_DLQ_URL',
  tableStreamArn: 'HERALD_TABLE_STREAM_ARN',
  streamRelayFunction: 'HERALD_STREAM_RELAY_FUNCTION',
} as const;

/**
 * The data stack's outputs (`<Queue>DlqUrl`, `StreamRelayDlqUrl`, `TableStreamArn`) and the workers
 * stack's `StreamRelayFunctionName` (`<stack>-workers`: the data stack cannot name a function of a
 * stack that depends on it); locally, stack.json and its cliEnv.
 */
export async function resolveOps(
  opts: { stack?: string | undefined; region?: string | undefined },
  cfn?: CloudFormationClient,
): Promise<OpsTarget> {
  if (opts.stack) {
    const { CloudFormationClient, DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
    const client = cfn ?? new CloudFormationClient(opts.region ? { region: opts.region } : {});
    const outputsOf = async (name: string) => {
      const res = await client.send(new DescribeStacksCommand({ StackName: name }));
      const list = res.Stacks?.[0]?.Outputs ?? [];
      return (key: string) => list.find((o) => o.OutputKey === key)?.OutputValue;
    };
    const data = await outputsOf(opts.stack);
    if (!data('TableName'))
      throw new Error(`stack ${opts.stack} has no TableName output; is it a Herald stack?`);
    // The workers stack of an older (single-stack) deployment may not exist.
    const workers = await outputsOf(`${opts.stack}-workers`).catch(() => () => undefined);
    return {
      dlqs: Object.fromEntries(
        queues.map((q) => [
          q.name,
          { dlqUrl: data(`${pascal(q.name)}DlqUrl`), queueUrl: data(`${pascal(q.name)}QueueUrl`) },
        ]),
      ),
      streamDlqUrl: data('StreamRelayDlqUrl'),
      tableStreamArn: data('TableStreamArn'),
      streamRelayFunction: workers('StreamRelayFunctionName'),
    };
  }
  const info = readStackInfo(dataDir());
  if (!info)
    throw new Error(
      `no local stack is running for ${dataDir()}: start it with \`npm start\` (or pass --stack NAME for a deployment)`,
    );
  const env = info.cliEnv ?? {};
  return {
    dlqs: Object.fromEntries(
      Object.entries(info.queues).map(([name, q]) => [name, { dlqUrl: q.dlqUrl, queueUrl: q.url }]),
    ),
    streamDlqUrl: env[LOCAL_OPS_ENV.streamDlqUrl],
    tableStreamArn: env[LOCAL_OPS_ENV.tableStreamArn],
    streamRelayFunction: env[LOCAL_OPS_ENV.streamRelayFunction],
  };
}
