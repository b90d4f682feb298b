import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveOps, resolveTarget } from '../../../bin/cli/target.ts';

const cfn = mockClient(CloudFormationClient);
const savedDir = process.env.HERALD_DATA_DIR;

afterEach(() => {
  cfn.reset();
  process.env.HERALD_DATA_DIR = savedDir;
});

describe('admin CLI target', () => {
  it('uses the TableName output of a deployed stack', async () => {
    cfn.on(DescribeStacksCommand, { StackName: 'Herald-prod' }).resolves({
      Stacks: [
        {
          StackName: 'Herald-prod',
          CreationTime: new Date(),
          StackStatus: 'CREATE_COMPLETE',
          Outputs: [{ OutputKey: 'TableName', OutputValue: 'Herald-prod-Table-1' }],
        },
      ],
    });
    const target = await resolveTarget(
      { stack: 'Herald-prod', region: 'eu-west-1' },
      new CloudFormationClient({ region: 'eu-west-1' }),
    );
    expect(target).toEqual({
      kind: 'stack',
      env: { TABLE_NAME: 'Herald-prod-Table-1', AWS_REGION: 'eu-west-1' },
    });
  });

  it("takes the console's URL (for enrollment links) from the ConsoleUrl output", async () => {
    cfn.on(DescribeStacksCommand).resolves({
      Stacks: [
        {
          StackName: 'Herald-prod',
          CreationTime: new Date(),
          StackStatus: 'CREATE_COMPLETE',
          Outputs: [
            { OutputKey: 'TableName', OutputValue: 'Herald-prod-Table-1' },
            { OutputKey: 'ConsoleUrl', OutputValue: 'https://herald.example.com' },
          ],
        },
      ],
    });
    const target = await resolveTarget(
      { stack: 'Herald-prod' },
      new CloudFormationClient({ region: 'eu-west-1' }),
    );
    expect(target.env).toMatchObject({ HERALD_CONSOLE_URL: 'https://herald.example.com' });
  });

  it('refuses a stack without a TableName output', async () => {
    cfn.on(DescribeStacksCommand).resolves({
      Stacks: [{ StackName: 'x', CreationTime: new Date(), StackStatus: 'CREATE_COMPLETE', Outputs: [] }],
    });
    await expect(
      resolveTarget({ stack: 'x' }, new CloudFormationClient({ region: 'us-east-1' })),
    ).rejects.toThrow(/TableName/);
  });

  it('points at the running local stack of the data directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-target-'));
    writeFileSync(
      join(dir, 'stack.json'),
      JSON.stringify({
        pid: process.pid,
        baseUrl: 'http://127.0.0.1:1',
        dynamodbEndpoint: 'http://127.0.0.1:2',
        dynamodbCredentials: { accessKeyId: 'HERALDTESTKEY0000000', secretAccessKey: 's3cret' },
        sqsEndpoint: 'x',
        tableName: 'herald',
        deliveryQueueUrl: 'q',
        deliveryDlqUrl: 'd',
      }),
    );
    process.env.HERALD_DATA_DIR = dir;
    const target = await resolveTarget({});
    expect(target.kind).toBe('local');
    expect(target.env).toMatchObject({
      TABLE_NAME: 'herald',
      AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:2',
      // The data directory's key: DynamoDB Local serves its tables to no other.
      AWS_ACCESS_KEY_ID: 'HERALDTESTKEY0000000',
      AWS_SECRET_ACCESS_KEY: 's3cret',
    });
  });

  it('asks for a restart of a local stack that wrote no DynamoDB key (an older Herald)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-target-'));
    writeFileSync(
      join(dir, 'stack.json'),
      JSON.stringify({ pid: process.pid, dynamodbEndpoint: 'http://127.0.0.1:2', tableName: 'herald' }),
    );
    process.env.HERALD_DATA_DIR = dir;
    await expect(resolveTarget({})).rejects.toThrow(/older Herald: restart it/);
  });

  it('says how to start the local stack when none runs', async () => {
    process.env.HERALD_DATA_DIR = mkdtempSync(join(tmpdir(), 'herald-target-'));
    await expect(resolveTarget({})).rejects.toThrow(/npm start/);
  });
});

describe('the dead-letter and stream commands’ target', () => {
  const stack = (name: string, outputs: Record<string, string>) => ({
    Stacks: [
      {
        StackName: name,
        CreationTime: new Date(),
        StackStatus: 'CREATE_COMPLETE' as const,
        Outputs: Object.entries(outputs).map(([OutputKey, OutputValue]) => ({ OutputKey, OutputValue })),
      },
    ],
  });

  it("reads the DLQ URLs and the stream's ARN from the data stack, the relay's name from the workers stack", async () => {
    cfn.on(DescribeStacksCommand, { StackName: 'Herald-prod' }).resolves(
      stack('Herald-prod', {
        TableName: 't',
        DeliveryQueueUrl: 'https://q/delivery',
        EventsDlqUrl: 'https://q/events-dlq',
        StreamRelayDlqUrl: 'https://q/stream-dlq',
        TableStreamArn: 'arn:stream',
      }),
    );
    cfn
      .on(DescribeStacksCommand, { StackName: 'Herald-prod-workers' })
      .resolves(stack('Herald-prod-workers', { StreamRelayFunctionName: 'relay-fn' }));
    const ops = await resolveOps({ stack: 'Herald-prod' }, new CloudFormationClient({ region: 'eu-west-1' }));
    expect(ops.dlqs.events).toEqual({ dlqUrl: 'https://q/events-dlq', queueUrl: undefined });
    expect(ops.dlqs.delivery).toEqual({ dlqUrl: undefined, queueUrl: 'https://q/delivery' });
    expect(ops).toMatchObject({
      streamDlqUrl: 'https://q/stream-dlq',
      tableStreamArn: 'arn:stream',
      streamRelayFunction: 'relay-fn',
    });
  });

  it('has no relay name when the workers stack does not exist (an older deployment)', async () => {
    cfn
      .on(DescribeStacksCommand, { StackName: 'Herald-old' })
      .resolves(stack('Herald-old', { TableName: 't' }));
    cfn.on(DescribeStacksCommand, { StackName: 'Herald-old-workers' }).rejects(new Error('does not exist'));
    const ops = await resolveOps({ stack: 'Herald-old' }, new CloudFormationClient({ region: 'eu-west-1' }));
    expect(ops.streamRelayFunction).toBeUndefined();
    expect(ops.streamDlqUrl).toBeUndefined();
  });

  it('reads the local stack’s queues and its cliEnv', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-ops-'));
    writeFileSync(
      join(dir, 'stack.json'),
      JSON.stringify({
        pid: process.pid,
        baseUrl: 'http://127.0.0.1:1',
        dynamodbEndpoint: 'http://127.0.0.1:2',
        dynamodbCredentials: { accessKeyId: 'a', secretAccessKey: 's' },
        sqsEndpoint: 'http://127.0.0.1:3',
        tableName: 'herald',
        cliEnv: {
          HERALD_STREAM_DLQ_URL: 'http://127.0.0.1:3/q/stream',
          HERALD_TABLE_STREAM_ARN: 'arn:local',
          HERALD_STREAM_RELAY_FUNCTION: 'streamRelay',
        },
        queues: { events: { url: 'http://127.0.0.1:3/q/events', dlqUrl: 'http://127.0.0.1:3/q/events-dlq' } },
      }),
    );
    process.env.HERALD_DATA_DIR = dir;
    expect(await resolveOps({})).toEqual({
      dlqs: {
        events: { dlqUrl: 'http://127.0.0.1:3/q/events-dlq', queueUrl: 'http://127.0.0.1:3/q/events' },
      },
      streamDlqUrl: 'http://127.0.0.1:3/q/stream',
      tableStreamArn: 'arn:local',
      streamRelayFunction: 'streamRelay',
    });
  });
});
