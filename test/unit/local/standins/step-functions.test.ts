import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
import { describe, expect, it } from 'vitest';
import { type LocalStateMachine, startAwsStandins } from '../../../../bin/local/aws-standins.ts';
import {
  deliveries,
  FLAKY_ARN,
  failure,
  flakyCalls,
  LADDER_ARN,
  lines,
  machines,
  sfn,
  sleep,
  standins,
  useStandins,
} from './fixture.ts';

// The Step Functions stand-in through the real SDK client: executions of ASL definitions whose Task
// states run local handlers, their names, aborts, and restarts with an executions file.

useStandins();

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

describe('Step Functions stand-in definitions', () => {
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
});

describe('Step Functions stand-in with an executions file (restarts)', () => {
  const config = (endpoint: string) => ({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });

  it('resumes a waiting execution after a stop or a crash: same name and start date, its task runs once', async () => {
    // Arrange: an execution waiting 2 s (long enough to still wait when the file is read on a loaded machine), then the stack stops (a Ctrl-C aborts nothing durable).
    const dir = mkdtempSync(join(tmpdir(), 'herald-sfn-'));
    const file = join(dir, 'step-functions.json');
    try {
      const first = await startAwsStandins({
        kmsKeyMaterial: randomBytes(32),
        stateMachines: machines(),
        executionsFile: file,
      });
      const client = new SFNClient(config(first.endpoint));
      const at = new Date(Date.now() + 2_000).toISOString();
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
      for (const until = Date.now() + 8_000; Date.now() < until; await sleep(20)) {
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
