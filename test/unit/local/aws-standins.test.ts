import { randomBytes } from 'node:crypto';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { describe, expect, it } from 'vitest';
import { startAwsStandins } from '../../../bin/local/aws-standins.ts';
import {
  deliveries,
  LADDER_ARN,
  machines,
  sdkConfig,
  sleep,
  standins,
  useStandins,
} from './standins/fixture.ts';

// The dispatcher of the stand-ins: one port, requests routed by X-Amz-Target (KMS, Step Functions)
// or by path (Lambda Invoke, SES). Each service's own behaviour is tested next to it, in
// test/unit/local/standins.

useStandins();

describe('startAwsStandins', () => {
  it('stop() aborts the running executions and closes the port', async () => {
    // Arrange
    const own = await startAwsStandins({
      kmsKeyMaterial: randomBytes(32),
      stateMachines: machines().slice(0, 1),
    });
    const client = new SFNClient(sdkConfig(own.endpoint));
    // Due well after stop() on a loaded machine (100 ms was not always), then waited past.
    const due = Date.now() + 2000;
    await client.send(
      new StartExecutionCommand({
        stateMachineArn: LADDER_ARN,
        input: JSON.stringify({ id: 'd9', ok: true, at: new Date(due).toISOString() }),
      }),
    );
    client.destroy();

    // Act
    await own.stop();
    await sleep(Math.max(0, due - Date.now()) + 150);

    // Assert
    expect(own.executions().map((e) => e.status)).toEqual(['ABORTED']);
    expect(deliveries).toEqual([]);
    await expect(fetch(own.endpoint)).rejects.toThrow();
  });

  it('answers an X-Amz-Target of a service it does not stand in for with UnknownOperationException', async () => {
    // Act
    const res = await fetch(standins.endpoint, {
      method: 'POST',
      headers: { 'x-amz-target': 'DynamoDB_20120810.GetItem', 'content-type': 'application/x-amz-json-1.0' },
      body: '{}',
    });

    // Assert
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ __type: 'UnknownOperationException' });
  });

  it('runs Lambda Invoke through the given invoke, a thrown error as the function error payload', async () => {
    // Arrange
    const calls: Array<[string, unknown]> = [];
    const own = await startAwsStandins({
      kmsKeyMaterial: randomBytes(32),
      stateMachines: [],
      invoke: async (name, payload) => {
        calls.push([name, payload]);
        if (name === 'broken') throw new TypeError('no such thing');
        return { statusCode: 200 };
      },
    });
    const lambda = new LambdaClient(sdkConfig(own.endpoint));

    // Act
    const ok = await lambda.send(
      new InvokeCommand({ FunctionName: 'listPosts', Payload: Buffer.from(JSON.stringify({ a: 1 })) }),
    );
    const failed = await lambda.send(
      new InvokeCommand({ FunctionName: 'broken', Payload: Buffer.from('{}') }),
    );
    lambda.destroy();
    await own.stop();

    // Assert
    expect(calls).toEqual([
      ['listPosts', { a: 1 }],
      ['broken', {}],
    ]);
    expect(JSON.parse(Buffer.from(ok.Payload ?? []).toString())).toEqual({ statusCode: 200 });
    expect(ok.FunctionError).toBeUndefined();
    expect(failed.FunctionError).toBe('Unhandled');
    expect(JSON.parse(Buffer.from(failed.Payload ?? []).toString())).toEqual({
      errorType: 'TypeError',
      errorMessage: 'no such thing',
    });
  });

  it('answers Lambda Invoke with 404 when no invoke was given', async () => {
    // Act
    const res = await fetch(`${standins.endpoint}/2015-03-31/functions/listPosts/invocations`, {
      method: 'POST',
      body: '{}',
    });

    // Assert
    expect(res.status).toBe(404);
    expect(res.headers.get('x-amzn-errortype')).toBe('UnknownOperationException');
  });
});
