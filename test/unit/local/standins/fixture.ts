import { randomBytes } from 'node:crypto';
import { KMSClient } from '@aws-sdk/client-kms';
import { SESv2Client } from '@aws-sdk/client-sesv2';
import { SFNClient } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import {
  type AwsStandins,
  type LocalStateMachine,
  startAwsStandins,
} from '../../../../bin/local/aws-standins.ts';

// What the stand-in tests share: two state machines with recording task handlers, and one running
// set of stand-ins with a real SDK client per service (useStandins()). The exported `let`s are live
// bindings: the tests read the current values.

export const LADDER_ARN = 'arn:aws:states:us-east-1:000000000000:stateMachine:herald-test-ladder';
export const FLAKY_ARN = 'arn:aws:states:us-east-1:000000000000:stateMachine:herald-test-flaky';
export const KEY_ID = 'alias/herald-test';
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Hold until $.at, deliver, then succeed if the delivery said ok (a `Gone` failure is caught). */
export const ladder = {
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
export const flaky = {
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

export interface Delivery {
  input: { id: string; ok?: boolean; fail?: string };
  execution: string;
  at: number;
}

export let deliveries: Delivery[] = [];
export let flakyCalls = 0;
export let lines: string[] = [];

export const machines = (): LocalStateMachine[] => [
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

export let standins: AwsStandins;
export let kms: KMSClient;
export let sfn: SFNClient;
export let ses: SESv2Client;

/** SDK client configuration for a stand-in endpoint (no retries: a failure shows at once). */
export const sdkConfig = (endpoint: string) => ({
  endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  maxAttempts: 1,
});

/** Starts the shared stand-ins before the file's tests, and resets the recordings before each. */
export function useStandins(): void {
  beforeAll(async () => {
    standins = await startAwsStandins({
      kmsKeyMaterial: randomBytes(32),
      stateMachines: machines(),
      log: (line) => lines.push(line),
    });
    const config = sdkConfig(standins.endpoint);
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
}

/** The SDK's error for a call that must fail. */
export const failure = (call: Promise<unknown>) =>
  call.then(
    () => expect.fail('the call succeeded'),
    (err: unknown) => err,
  );
