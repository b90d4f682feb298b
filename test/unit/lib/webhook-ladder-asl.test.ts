import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import {
  DescribeExecutionCommand,
  type DescribeExecutionCommandOutput,
  SFNClient,
  StartExecutionCommand,
} from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ladderExecutionName } from '#core/webhooks';
import { stateMachines, workers } from '#lib/operations';
import { type AwsStandins, startAwsStandins } from '../../../bin/local/aws-standins.ts';

// The failure ladder's ASL: valid Amazon States Language (JSONPath, no JSONata), retried Tasks, and
// run for real by the local Step Functions stand-in with deadlines a few hundred milliseconds out.

/** The worker reference the CDK stack and the local stack substitute (a literal placeholder). */
// biome-ignore lint/suspicious/noTemplateCurlyInString: the ASL's placeholder, not a template
const FUNCTION_REF = '${webhookLadderStepFunctionArn}';
const ASL_PATH = new URL('../../../lib/state-machines/webhook-ladder.asl.json', import.meta.url);
const TEXT = readFileSync(ASL_PATH, 'utf8');

interface State {
  Type: string;
  Retry?: Array<{ ErrorEquals: string[]; MaxAttempts?: number; IntervalSeconds?: number }>;
  Parameters?: { FunctionName?: string; Payload?: Record<string, unknown> };
  [key: string]: unknown;
}
const definition = () =>
  JSON.parse(TEXT) as { StartAt: string; QueryLanguage?: string; States: Record<string, State> };

// asl-validator is CommonJS without types: `validator(definition, options)`.
type AslValidator = (
  definition: unknown,
  opts?: { checkPaths: boolean; checkArn: boolean },
) => { isValid: boolean; errors: Array<{ message: string }>; errorsText: (sep?: string) => string };
const aslValidator = createRequire(import.meta.url)('asl-validator') as AslValidator;

describe('the webhook ladder definition', () => {
  it('is valid Amazon States Language, paths and ARNs checked', () => {
    // Act
    const result = aslValidator(definition(), { checkPaths: true, checkArn: true });

    // Assert
    expect(result.errorsText('\n')).toBe('');
    expect(result.isValid).toBe(true);
  });

  it('the validator is not a rubber stamp: a dangling Next fails it', () => {
    // Arrange
    const broken = definition();
    (broken.States.Warn as State).Next = 'Nowhere';

    // Act
    const result = aslValidator(broken, { checkPaths: true, checkArn: true });

    // Assert
    expect(result.isValid).toBe(false);
  });

  it('uses JSONPath only: no QueryLanguage, no JSONata expressions or fields', () => {
    // Arrange
    const def = definition();

    // Assert
    expect(def.QueryLanguage).toBeUndefined();
    expect(TEXT).not.toContain('JSONata');
    expect(TEXT).not.toContain('{%');
    for (const state of Object.values(def.States)) {
      expect(state.QueryLanguage).toBeUndefined();
      expect(state).not.toHaveProperty('Arguments');
      expect(state).not.toHaveProperty('Output');
      expect(state).not.toHaveProperty('Assign');
    }
  });

  it('waits for warn_at, warns, checks, waits for disable_at, disables', () => {
    // Arrange
    const def = definition();

    // Assert
    expect(def.StartAt).toBe('WaitForWarning');
    expect(def.States.WaitForWarning).toMatchObject({
      Type: 'Wait',
      TimestampPath: '$.warn_at',
      Next: 'Warn',
    });
    expect(def.States.Warn).toMatchObject({ Type: 'Task', Next: 'StillFailing' });
    expect(def.States.StillFailing).toMatchObject({ Type: 'Choice', Default: 'Recovered' });
    expect(def.States.WaitForDisable).toMatchObject({
      Type: 'Wait',
      TimestampPath: '$.disable_at',
      Next: 'Disable',
    });
    expect(def.States.Disable).toMatchObject({ Type: 'Task', Next: 'Done' });
  });

  it('retries both Task states on States.ALL', () => {
    // Arrange
    const tasks = Object.entries(definition().States).filter(([, s]) => s.Type === 'Task');

    // Assert
    expect(tasks.map(([name]) => name).sort()).toEqual(['Disable', 'Warn']);
    for (const [, task] of tasks) {
      const all = task.Retry?.find((r) => r.ErrorEquals.includes('States.ALL'));
      expect(all).toBeDefined();
      expect(all?.MaxAttempts).toBeGreaterThanOrEqual(3);
      expect(all?.IntervalSeconds).toBeGreaterThan(0);
    }
  });

  it('invokes the webhookLadderStep worker (the one the CDK stack and local stack bind)', () => {
    // Arrange
    const def = definition();
    const worker = workers.find((w) => w.id === 'webhookLadderStep');

    // Assert
    expect(worker?.trigger).toEqual({ kind: 'task', stateMachine: 'webhookLadder' });
    expect(stateMachines.find((m) => m.name === 'webhookLadder')?.definition).toBe(
      'lib/state-machines/webhook-ladder.asl.json',
    );
    for (const name of ['Warn', 'Disable']) {
      expect(def.States[name]?.Resource).toBe('arn:aws:states:::lambda:invoke');
      expect(def.States[name]?.Parameters?.FunctionName).toBe(FUNCTION_REF);
    }
  });
});

// ---- run by the Step Functions stand-in -----------------------------------------------------------------

const ARN = 'arn:aws:states:us-east-1:000000000000:stateMachine:herald-test-webhookLadder';
const ORG_ID = 'org_01JD0000000000000000000001';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// Timers may fire up to a millisecond before Date.now() reaches their deadline.
const TIMER_SLACK_MS = 2;

interface Invocation {
  state: 'Warn' | 'Disable';
  input: unknown;
  at: number;
}

let standins: AwsStandins;
let sfn: SFNClient;
let invocations: Invocation[] = [];
/** What Warn answers. */
let warnSaysStillFailing = true;

beforeAll(async () => {
  standins = await startAwsStandins({
    kmsKeyMaterial: randomBytes(32),
    stateMachines: [
      {
        arn: ARN,
        definition: TEXT,
        taskHandlers: {
          Warn: async (input) => {
            invocations.push({ state: 'Warn', input, at: Date.now() });
            return { Payload: { still_failing: warnSaysStillFailing } };
          },
          Disable: async (input) => {
            invocations.push({ state: 'Disable', input, at: Date.now() });
            return { Payload: { still_failing: true } };
          },
        },
      },
    ],
    log: () => {},
  });
  sfn = new SFNClient({
    endpoint: standins.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
});

afterAll(async () => {
  sfn?.destroy();
  await standins?.stop();
});

beforeEach(() => {
  invocations = [];
  warnSaysStillFailing = true;
});

async function closed(executionArn: string): Promise<DescribeExecutionCommandOutput> {
  for (const until = Date.now() + 3_000; Date.now() < until; await sleep(10)) {
    const out = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    if (out.status !== 'RUNNING') return out;
  }
  throw new Error(`${executionArn} still running`);
}

async function run(endpointId: string, warnInMs: number, disableInMs: number) {
  const failingSince = new Date().toISOString();
  const input = {
    org_id: ORG_ID,
    endpoint_id: endpointId,
    failing_since: failingSince,
    warn_at: new Date(Date.now() + warnInMs).toISOString(),
    disable_at: new Date(Date.now() + disableInMs).toISOString(),
  };
  const { executionArn } = await sfn.send(
    new StartExecutionCommand({
      stateMachineArn: ARN,
      name: ladderExecutionName(endpointId, failingSince),
      input: JSON.stringify(input),
    }),
  );
  return { input, out: await closed(executionArn as string) };
}

describe('the webhook ladder, executed', () => {
  it('still failing: Warn at warn_at, then Disable at disable_at, then SUCCEEDED', async () => {
    // Act
    const { input, out } = await run('whe_01JD0000000000000000000001', 250, 600);

    // Assert
    expect(out.status).toBe('SUCCEEDED');
    expect(invocations.map((i) => i.state)).toEqual(['Warn', 'Disable']);
    const [warn, disable] = invocations as [Invocation, Invocation];
    const payload = { org_id: ORG_ID, endpoint_id: input.endpoint_id, failing_since: input.failing_since };
    expect(warn.input).toEqual({
      FunctionName: FUNCTION_REF,
      Payload: { step: 'warn', ...payload },
    });
    expect(disable.input).toEqual({
      FunctionName: FUNCTION_REF,
      Payload: { step: 'disable', ...payload },
    });
    expect(warn.at).toBeGreaterThanOrEqual(Date.parse(input.warn_at) - TIMER_SLACK_MS);
    expect(warn.at).toBeLessThan(Date.parse(input.disable_at));
    expect(disable.at).toBeGreaterThanOrEqual(Date.parse(input.disable_at) - TIMER_SLACK_MS);
    expect(JSON.parse(out.output ?? '{}')).toMatchObject({
      ...input,
      warned: { still_failing: true },
      disabled: { still_failing: true },
    });
  });

  it('recovered: Warn answers still_failing false and Disable never runs', async () => {
    // Arrange
    warnSaysStillFailing = false;

    // Act
    const { input, out } = await run('whe_01JD0000000000000000000002', 200, 500);
    await sleep(Math.max(0, Date.parse(input.disable_at) - Date.now()) + 100);

    // Assert
    expect(out.status).toBe('SUCCEEDED');
    expect(invocations.map((i) => i.state)).toEqual(['Warn']);
    expect(invocations[0]?.at).toBeGreaterThanOrEqual(Date.parse(input.warn_at) - TIMER_SLACK_MS);
    expect(out.stopDate?.getTime()).toBeLessThan(Date.parse(input.disable_at));
    const output = JSON.parse(out.output ?? '{}');
    expect(output).toMatchObject({ warned: { still_failing: false } });
    expect(output).not.toHaveProperty('disabled');
  });
});
