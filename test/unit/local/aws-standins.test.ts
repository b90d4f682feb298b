import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DecryptCommand,
  EncryptCommand,
  GenerateDataKeyCommand,
  IncorrectKeyException,
  InvalidCiphertextException,
  KMSClient,
  KMSServiceException,
  ReEncryptCommand,
} from '@aws-sdk/client-kms';
import { BadRequestException, SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
import {
  DescribeExecutionCommand,
  type DescribeExecutionCommandOutput,
  ExecutionAlreadyExists,
  ExecutionDoesNotExist,
  SFNClient,
  StartExecutionCommand,
  StateMachineDoesNotExist,
  StopExecutionCommand,
} from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type AwsStandins,
  type LocalStateMachine,
  startAwsStandins,
} from '../../../bin/local/aws-standins.ts';

// The local stand-ins for KMS, Step Functions and SES, driven through the real SDK clients: what the
// handlers see must be what they would see from AWS, exception classes included.

const LADDER_ARN = 'arn:aws:states:us-east-1:000000000000:stateMachine:herald-test-ladder';
const FLAKY_ARN = 'arn:aws:states:us-east-1:000000000000:stateMachine:herald-test-flaky';
const KEY_ID = 'alias/herald-test';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Hold until $.at, deliver, then succeed if the delivery said ok (a `Gone` failure is caught). */
const ladder = {
  StartAt: 'Hold',
  States: {
    Hold: { Type: 'Wait', TimestampPath: '$.at', Next: 'Deliver' },
    Deliver: {
      Type: 'Task',
      Resource: 'arn:aws:states:::lambda:invoke',
      Parameters: { 'input.$': '$', 'execution.$': '$$.Execution.Id' },
      ResultPath: '$.result',
      Catch: [{ ErrorEquals: ['Gone'], ResultPath: '$.caught', Next: 'Dropped' }],
      Next: 'Check',
    },
    Check: {
      Type: 'Choice',
      Choices: [{ Variable: '$.result.ok', BooleanEquals: true, Next: 'Done' }],
      Default: 'GiveUp',
    },
    Done: { Type: 'Succeed' },
    GiveUp: { Type: 'Fail', Error: 'DeliveryFailed', Cause: 'endpoint said no' },
    Dropped: { Type: 'Pass', End: true },
  },
};

/** One task, retried on any failure after a (long) interval. */
const flaky = {
  StartAt: 'Flaky',
  States: {
    Flaky: {
      Type: 'Task',
      Resource: 'local',
      Retry: [{ ErrorEquals: ['States.TaskFailed'], IntervalSeconds: 5, MaxAttempts: 2 }],
      End: true,
    },
  },
};

interface Delivery {
  input: { id: string; ok?: boolean; fail?: string };
  execution: string;
  at: number;
}

let deliveries: Delivery[] = [];
let flakyCalls = 0;
let lines: string[] = [];

const machines = (): LocalStateMachine[] => [
  {
    arn: LADDER_ARN,
    definition: JSON.stringify(ladder),
    taskHandlers: {
      Deliver: async (raw) => {
        const call = { ...(raw as Omit<Delivery, 'at'>), at: Date.now() };
        deliveries.push(call);
        if (call.input.fail) {
          const err = new Error(`delivery ${call.input.id} failed`);
          err.name = call.input.fail;
          throw err;
        }
        return { ok: call.input.ok ?? false, when: new Date(0) };
      },
    },
  },
  {
    arn: FLAKY_ARN,
    definition: JSON.stringify(flaky),
    taskHandlers: {
      Flaky: async () => {
        flakyCalls++;
        throw new Error('still failing');
      },
    },
  },
];

let standins: AwsStandins;
let kms: KMSClient;
let sfn: SFNClient;
let ses: SESv2Client;

beforeAll(async () => {
  standins = await startAwsStandins({
    kmsKeyMaterial: randomBytes(32),
    stateMachines: machines(),
    log: (line) => lines.push(line),
  });
  const config = {
    endpoint: standins.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  };
  kms = new KMSClient(config);
  sfn = new SFNClient(config);
  ses = new SESv2Client(config);
});

afterAll(async () => {
  for (const c of [kms, sfn, ses]) c.destroy();
  await standins.stop();
});

beforeEach(() => {
  deliveries = [];
  flakyCalls = 0;
  lines = [];
});

/** The SDK's error for a call that must fail. */
const failure = (call: Promise<unknown>) =>
  call.then(
    () => expect.fail('the call succeeded'),
    (err: unknown) => err,
  );

describe('KMS stand-in', () => {
  const encrypt = async (text: string, context?: Record<string, string>) =>
    (
      await kms.send(
        new EncryptCommand({ KeyId: KEY_ID, Plaintext: Buffer.from(text), EncryptionContext: context }),
      )
    ).CiphertextBlob as Uint8Array;

  it('decrypts what it encrypted, under the same context in any key order, without a KeyId', async () => {
    // Arrange
    const blob = await encrypt('platform token', { org: 'o1', purpose: 'oauth' });

    // Act
    const out = await kms.send(
      new DecryptCommand({ CiphertextBlob: blob, EncryptionContext: { purpose: 'oauth', org: 'o1' } }),
    );

    // Assert
    expect(Buffer.from(out.Plaintext ?? []).toString()).toBe('platform token');
    expect(out.KeyId).toBe(KEY_ID);
    expect(out.EncryptionAlgorithm).toBe('SYMMETRIC_DEFAULT');
    expect(Buffer.from(blob).includes(Buffer.from('platform token'))).toBe(false);
  });

  it.each([
    ['another context', { org: 'o2', purpose: 'oauth' }],
    ['no context', undefined],
  ])('refuses a blob under %s with InvalidCiphertextException', async (_, context) => {
    // Arrange
    const blob = await encrypt('platform token', { org: 'o1', purpose: 'oauth' });

    // Act
    const err = await failure(
      kms.send(new DecryptCommand({ CiphertextBlob: blob, EncryptionContext: context })),
    );

    // Assert
    expect(err).toBeInstanceOf(InvalidCiphertextException);
  });

  it('refuses a tampered or malformed blob with InvalidCiphertextException', async () => {
    // Arrange
    const blob = Buffer.from(await encrypt('platform token'));
    blob[blob.length - 1] = (blob.at(-1) as number) ^ 1;

    // Act
    const tampered = await failure(kms.send(new DecryptCommand({ CiphertextBlob: blob })));
    const garbage = await failure(kms.send(new DecryptCommand({ CiphertextBlob: Buffer.from('nonsense') })));

    // Assert
    expect(tampered).toBeInstanceOf(InvalidCiphertextException);
    expect(garbage).toBeInstanceOf(InvalidCiphertextException);
  });

  it('refuses to decrypt under a KeyId other than the one that encrypted', async () => {
    // Arrange
    const blob = await encrypt('platform token');

    // Act
    const err = await failure(kms.send(new DecryptCommand({ CiphertextBlob: blob, KeyId: 'alias/other' })));

    // Assert
    expect(err).toBeInstanceOf(IncorrectKeyException);
  });

  it('rejects a plaintext over 4096 bytes with ValidationException, as KMS does', async () => {
    // Act
    const err = await failure(
      kms.send(new EncryptCommand({ KeyId: KEY_ID, Plaintext: Buffer.alloc(4097, 1) })),
    );
    const atLimit = await kms.send(new EncryptCommand({ KeyId: KEY_ID, Plaintext: Buffer.alloc(4096, 1) }));

    // Assert
    expect(err).toBeInstanceOf(KMSServiceException);
    expect((err as Error).name).toBe('ValidationException');
    expect(atLimit.CiphertextBlob?.length).toBeGreaterThan(4096);
  });

  it('makes data keys (GenerateDataKey) that Decrypt opens only under the same context', async () => {
    // Act
    const made = await kms.send(
      new GenerateDataKeyCommand({
        KeyId: KEY_ID,
        KeySpec: 'AES_256',
        EncryptionContext: { channel_id: 'ch_1' },
      }),
    );
    const opened = await kms.send(
      new DecryptCommand({ CiphertextBlob: made.CiphertextBlob, EncryptionContext: { channel_id: 'ch_1' } }),
    );
    const other = await failure(
      kms.send(
        new DecryptCommand({
          CiphertextBlob: made.CiphertextBlob,
          EncryptionContext: { channel_id: 'ch_2' },
        }),
      ),
    );

    // Assert
    expect(made.Plaintext).toHaveLength(32);
    expect(Buffer.from(opened.Plaintext ?? []).equals(Buffer.from(made.Plaintext ?? []))).toBe(true);
    expect((other as Error).name).toBe('InvalidCiphertextException');
  });

  it('answers an operation it does not stand in for with UnknownOperationException', async () => {
    // Act
    const err = await failure(
      kms.send(new ReEncryptCommand({ CiphertextBlob: new Uint8Array(8), DestinationKeyId: KEY_ID })),
    );

    // Assert
    expect((err as Error).name).toBe('UnknownOperationException');
  });
});

describe('Step Functions stand-in', () => {
  let seq = 0;
  const nextName = () => `exec-${Date.now()}-${++seq}`;

  const start = (input: Record<string, unknown>, name = nextName(), arn = LADDER_ARN) =>
    sfn.send(new StartExecutionCommand({ stateMachineArn: arn, name, input: JSON.stringify(input) }));

  const describeExecution = (executionArn: string) =>
    sfn.send(new DescribeExecutionCommand({ executionArn }));

  /** DescribeExecution once the execution has closed. */
  async function closed(executionArn: string): Promise<DescribeExecutionCommandOutput> {
    for (const until = Date.now() + 2_000; Date.now() < until; await sleep(5)) {
      const out = await describeExecution(executionArn);
      if (out.status !== 'RUNNING') return out;
    }
    throw new Error(`${executionArn} still running`);
  }

  const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();

  it('holds a Wait until its TimestampPath, then runs the task and the Choice it leads to', async () => {
    // Arrange
    const at = Date.now() + 300;

    // Act
    const started = await start({ id: 'd1', ok: true, at: new Date(at).toISOString() });
    const running = await describeExecution(started.executionArn as string);
    const done = await closed(started.executionArn as string);

    // Assert
    expect(running.status).toBe('RUNNING');
    expect(running.stopDate).toBeUndefined();
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]?.at).toBeGreaterThanOrEqual(at - 5);
    expect(deliveries[0]?.execution).toBe(started.executionArn);
    expect(done.status).toBe('SUCCEEDED');
    expect(done.startDate).toEqual(started.startDate);
    expect(done.stopDate?.getTime()).toBeGreaterThanOrEqual(at - 5);
    expect(JSON.parse(done.output as string)).toEqual({
      id: 'd1',
      ok: true,
      at: new Date(at).toISOString(),
      result: { ok: true, when: '1970-01-01T00:00:00.000Z' },
    });
  });

  it('runs the task at once when the TimestampPath is in the past', async () => {
    // Act
    const begun = Date.now();
    const started = await start({ id: 'd2', ok: true, at: new Date(begun - 60_000).toISOString() });
    await closed(started.executionArn as string);

    // Assert
    expect(deliveries).toHaveLength(1);
    expect((deliveries[0]?.at as number) - begun).toBeLessThan(100);
  });

  it('fails the execution with the Fail state error and cause, and logs it', async () => {
    // Act
    const started = await start({ id: 'd3', ok: false, at: inMs(-1) });
    const done = await closed(started.executionArn as string);

    // Assert
    expect(done).toMatchObject({ status: 'FAILED', error: 'DeliveryFailed', cause: 'endpoint said no' });
    expect(done.output).toBeUndefined();
    expect(lines).toEqual([expect.stringMatching(/herald-test-ladder.*DeliveryFailed: endpoint said no/)]);
  });

  it('gives a task handler error its name as the States error: Catch matches it by name', async () => {
    // Act
    const started = await start({ id: 'd4', fail: 'Gone', at: inMs(-1) });
    const done = await closed(started.executionArn as string);

    // Assert
    expect(done.status).toBe('SUCCEEDED');
    expect(JSON.parse(done.output as string).caught).toEqual({ Error: 'Gone', Cause: 'delivery d4 failed' });
  });

  it('fails the execution with an uncaught task handler error as error and cause', async () => {
    // Act
    const started = await start({ id: 'd5', fail: 'Unreachable', at: inMs(-1) });
    const done = await closed(started.executionArn as string);

    // Assert
    expect(done).toMatchObject({ status: 'FAILED', error: 'Unreachable', cause: 'delivery d5 failed' });
    expect(lines).toHaveLength(1);
  });

  it('treats a repeated name and input while running as the same execution (run once)', async () => {
    // Arrange
    const name = nextName();
    const input = { id: 'd6', ok: true, at: inMs(100) };

    // Act
    const first = await start(input, name);
    const again = await start(input, name);
    await closed(first.executionArn as string);

    // Assert
    expect(again.executionArn).toBe(first.executionArn);
    expect(again.startDate).toEqual(first.startDate);
    expect(first.executionArn).toBe(
      `arn:aws:states:us-east-1:000000000000:execution:herald-test-ladder:${name}`,
    );
    expect(deliveries).toHaveLength(1);
    expect(standins.executions(LADDER_ARN).filter((e) => e.name === name)).toHaveLength(1);
  });

  it('refuses a used name with another input, or once that execution has closed', async () => {
    // Arrange
    const name = nextName();
    const input = { id: 'd7', ok: true, at: inMs(100) };
    const first = await start(input, name);

    // Act
    const otherInput = await failure(start({ ...input, id: 'other' }, name));
    await closed(first.executionArn as string);
    const afterClose = await failure(start(input, name));

    // Assert
    expect(otherInput).toBeInstanceOf(ExecutionAlreadyExists);
    expect(afterClose).toBeInstanceOf(ExecutionAlreadyExists);
    expect(deliveries.map((d) => d.input.id)).toEqual(['d7']);
  });

  it('answers unknown state machines and executions with their exceptions', async () => {
    // Act
    const machine = await failure(start({}, nextName(), `${LADDER_ARN}-nope`));
    const execution = await failure(
      describeExecution(`${LADDER_ARN.replace('stateMachine', 'execution')}:nope`),
    );
    const stop = await failure(sfn.send(new StopExecutionCommand({ executionArn: 'arn:nope' })));

    // Assert
    expect(machine).toBeInstanceOf(StateMachineDoesNotExist);
    expect(execution).toBeInstanceOf(ExecutionDoesNotExist);
    expect(stop).toBeInstanceOf(ExecutionDoesNotExist);
  });

  it('aborts a waiting execution on StopExecution: its task never runs', async () => {
    // Arrange
    const started = await start({ id: 'd8', ok: true, at: inMs(150) });

    // Act
    const stopped = await sfn.send(new StopExecutionCommand({ executionArn: started.executionArn }));
    await sleep(250);
    const described = await describeExecution(started.executionArn as string);

    // Assert
    expect(described.status).toBe('ABORTED');
    expect(described.stopDate).toEqual(stopped.stopDate);
    expect(deliveries).toEqual([]);
    expect(lines).toEqual([]);
  });

  it('does not run a task again when StopExecution cuts its Retry interval short', async () => {
    // Arrange
    const started = await start({}, nextName(), FLAKY_ARN);
    for (const until = Date.now() + 1_000; flakyCalls === 0 && Date.now() < until; ) await sleep(5);

    // Act
    await sfn.send(new StopExecutionCommand({ executionArn: started.executionArn }));
    await sleep(50);

    // Assert
    expect(flakyCalls).toBe(1);
    expect((await describeExecution(started.executionArn as string)).status).toBe('ABORTED');
  });

  it('lists the executions of one state machine', async () => {
    // Arrange
    const started = await start({}, nextName(), FLAKY_ARN);
    await sfn.send(new StopExecutionCommand({ executionArn: started.executionArn }));

    // Act
    const flakyOnes = standins.executions(FLAKY_ARN);

    // Assert
    expect(flakyOnes.length).toBeGreaterThanOrEqual(2);
    expect(flakyOnes.every((e) => e.stateMachineArn === FLAKY_ARN)).toBe(true);
    expect(flakyOnes.at(-1)).toMatchObject({
      executionArn: started.executionArn,
      status: 'ABORTED',
      input: '{}',
    });
    expect(standins.executions().length).toBeGreaterThan(flakyOnes.length);
  });
});

describe('SES stand-in', () => {
  it('captures a sent email and logs it', async () => {
    // Act
    const out = await ses.send(
      new SendEmailCommand({
        FromEmailAddress: 'herald@example.com',
        Destination: { ToAddresses: ['owner@example.com'] },
        Content: {
          Simple: { Subject: { Data: 'Webhook disabled' }, Body: { Text: { Data: 'It kept failing.' } } },
        },
      }),
    );

    // Assert
    expect(out.MessageId).toEqual(expect.any(String));
    expect(standins.emails.at(-1)).toEqual({
      from: 'herald@example.com',
      to: ['owner@example.com'],
      subject: 'Webhook disabled',
      text: 'It kept failing.',
      at: expect.any(Date),
    });
    expect(lines).toEqual(['email to owner@example.com: Webhook disabled']);
  });

  it('refuses an email without recipients with BadRequestException', async () => {
    // Act
    const err = await failure(
      ses.send(
        new SendEmailCommand({
          FromEmailAddress: 'herald@example.com',
          Destination: { ToAddresses: [] },
          Content: { Simple: { Subject: { Data: 's' }, Body: { Text: { Data: 't' } } } },
        }),
      ),
    );

    // Assert
    expect(err).toBeInstanceOf(BadRequestException);
    expect(lines).toEqual([]);
  });

  it('answers any other path with 404', async () => {
    // Act
    const res = await fetch(`${standins.endpoint}/v2/email/identities`);

    // Assert
    expect(res.status).toBe(404);
    expect(res.headers.get('x-amzn-errortype')).toBe('UnknownOperationException');
  });
});

describe('startAwsStandins', () => {
  it('refuses a state machine whose Task states and handlers do not match', async () => {
    // Arrange
    const [ladderMachine] = machines();
    const withoutHandler = { ...(ladderMachine as LocalStateMachine), taskHandlers: {} };

    // Act
    const started = startAwsStandins({ kmsKeyMaterial: randomBytes(32), stateMachines: [withoutHandler] });

    // Assert
    await expect(started).rejects.toThrow(/missing: Deliver/);
  });

  it('refuses an invalid definition', async () => {
    // Arrange
    const broken = {
      arn: LADDER_ARN,
      definition: JSON.stringify({ StartAt: 'Nowhere', States: {} }),
      taskHandlers: {},
    };

    // Act
    const started = startAwsStandins({ kmsKeyMaterial: randomBytes(32), stateMachines: [broken] });

    // Assert
    await expect(started).rejects.toThrow(/invalid/);
  });

  it('stop() aborts the running executions and closes the port', async () => {
    // Arrange
    const own = await startAwsStandins({
      kmsKeyMaterial: randomBytes(32),
      stateMachines: machines().slice(0, 1),
    });
    const client = new SFNClient({
      endpoint: own.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
    await client.send(
      new StartExecutionCommand({
        stateMachineArn: LADDER_ARN,
        input: JSON.stringify({ id: 'd9', ok: true, at: new Date(Date.now() + 100).toISOString() }),
      }),
    );
    client.destroy();

    // Act
    await own.stop();
    await sleep(150);

    // Assert
    expect(own.executions().map((e) => e.status)).toEqual(['ABORTED']);
    expect(deliveries).toEqual([]);
    await expect(fetch(own.endpoint)).rejects.toThrow();
  });
});

describe('Step Functions stand-in with an executions file (restarts)', () => {
  const config = (endpoint: string) => ({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });

  it('resumes a waiting execution after a stop or a crash: same name and start date, its task runs once', async () => {
    // Arrange: an execution waiting 400 ms, then the stack stops (a Ctrl-C aborts nothing durable).
    const dir = mkdtempSync(join(tmpdir(), 'herald-sfn-'));
    const file = join(dir, 'step-functions.json');
    try {
      const first = await startAwsStandins({
        kmsKeyMaterial: randomBytes(32),
        stateMachines: machines(),
        executionsFile: file,
      });
      const client = new SFNClient(config(first.endpoint));
      const at = new Date(Date.now() + 400).toISOString();
      const started = await client.send(
        new StartExecutionCommand({
          stateMachineArn: LADDER_ARN,
          name: 'streak-1',
          input: JSON.stringify({ id: 'r1', ok: true, at }),
        }),
      );
      client.destroy();
      const saved = JSON.parse(readFileSync(file, 'utf8')) as Array<{ name: string; status: string }>;
      await first.stop();

      // Act
      const second = await startAwsStandins({
        kmsKeyMaterial: randomBytes(32),
        stateMachines: machines(),
        executionsFile: file,
      });
      second.resumeExecutions();
      const again = new SFNClient(config(second.endpoint));
      let done: DescribeExecutionCommandOutput | undefined;
      for (const until = Date.now() + 3_000; Date.now() < until; await sleep(20)) {
        done = await again.send(new DescribeExecutionCommand({ executionArn: started.executionArn }));
        if (done.status !== 'RUNNING') break;
      }
      const reused = await failure(
        again.send(
          new StartExecutionCommand({
            stateMachineArn: LADDER_ARN,
            name: 'streak-1',
            input: JSON.stringify({ id: 'other' }),
          }),
        ),
      );
      again.destroy();
      await second.stop();

      // Assert
      expect(saved).toMatchObject([{ name: 'streak-1', status: 'RUNNING' }]);
      expect(done).toMatchObject({ status: 'SUCCEEDED', startDate: started.startDate });
      expect(deliveries.map((d) => d.input.id)).toEqual(['r1']);
      expect(deliveries[0]?.at).toBeGreaterThanOrEqual(Date.parse(at) - 5);
      expect(reused).toBeInstanceOf(ExecutionAlreadyExists);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
