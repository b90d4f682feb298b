import { Duration, type Stack } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { FilterCriteria, FilterRule, type IEventSource, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { type Worker, workers } from '../operations.ts';
import type { StageConfig } from '../stage.ts';
import type { Data } from './data.ts';
import type { Functions } from './functions.ts';
import type { Queues } from './queues.ts';

export interface WorkersProps {
  readonly config: StageConfig;
  readonly data: Data;
  readonly queues: Queues;
  readonly functions: Functions;
}

/**
 * The manifest's workers, each on its trigger: the table stream, a queue (or its DLQ), an
 * EventBridge rate, or the functions that invoke it. Task workers are invoked by their state
 * machine (state-machines.ts).
 */
export class Workers {
  constructor(scope: Stack, { config, data, queues, functions }: WorkersProps) {
    for (const worker of workers) {
      const fn = functions.make(scope, worker);
      for (const name of worker.access.sends ?? []) {
        const { spec, queue } = queues.of(name);
        queue.grantSendMessages(fn);
        fn.addEnvironment(spec.env, queue.queueUrl);
      }
      const source = eventSource(worker, data, queues, config);
      if (source) fn.addEventSource(source);
      const trigger = worker.trigger;
      if (trigger.kind === 'schedule') {
        new Rule(scope, `${worker.id}Schedule`, {
          schedule: Schedule.rate(Duration.seconds(trigger.everySeconds)),
          targets: [new LambdaFunction(fn, { retryAttempts: 0 })],
        });
      }
      if (trigger.kind === 'invoke') {
        // Exactly this function (no versions or aliases: callers invoke $LATEST by name).
        for (const id of trigger.by) {
          const caller = functions.get(id);
          caller.addToRolePolicy(
            new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [fn.functionArn] }),
          );
          caller.addEnvironment(trigger.env, fn.functionName);
        }
      }
    }
  }
}

/**
 * The event source mapping of a stream or queue worker: the manifest's settings, and a queue
 * worker's concurrency as the stage sets it (lib/stage.ts CONCURRENCY_SETTINGS) or the manifest's.
 */
function eventSource(
  { id, trigger }: Worker,
  data: Data,
  queues: Queues,
  config: StageConfig,
): IEventSource | undefined {
  if (trigger.kind === 'stream') {
    return new DynamoEventSource(data.table, {
      startingPosition: StartingPosition.TRIM_HORIZON,
      batchSize: trigger.batchSize,
      bisectBatchOnError: true,
      retryAttempts: trigger.retryAttempts,
      reportBatchItemFailures: true,
      maxRecordAge: Duration.seconds(trigger.maxRecordAgeSeconds),
      ...(trigger.windowSeconds ? { tumblingWindow: Duration.seconds(trigger.windowSeconds) } : {}),
      onFailure: new SqsDlq(queues.streamRelayDlq),
      filters: trigger.entities.map((entity) =>
        FilterCriteria.filter({ dynamodb: { NewImage: { entity: { S: FilterRule.isEqual(entity) } } } }),
      ),
    });
  }
  if (trigger.kind === 'queue') {
    const { queue, dlq } = queues.of(trigger.queue);
    return new SqsEventSource(trigger.dlq ? dlq : queue, {
      batchSize: trigger.batchSize,
      reportBatchItemFailures: true,
      // SQS accepts 2–1000: the stage's value is checked for it (lib/stage.ts), the manifest's by CDK.
      maxConcurrency: config.concurrency[id] ?? trigger.concurrency,
    });
  }
  return undefined;
}
