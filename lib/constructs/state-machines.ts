import path from 'node:path';
import type { RemovalPolicy } from 'aws-cdk-lib';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { DefinitionBody, LogLevel, StateMachine, StateMachineType } from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { REPO_ROOT } from '../herald-function.ts';
import { type StateMachineName, stateMachines, workers } from '../operations.ts';
import type { Functions } from './functions.ts';
import { pascal } from './ids.ts';

export interface StateMachinesProps {
  readonly removalPolicy: RemovalPolicy;
  /** Must already hold every worker (the tasks and the starters). */
  readonly functions: Functions;
  /** X-Ray active tracing (the stage's `tracing`). */
  readonly tracing: boolean;
}

/**
 * The manifest's state machines (today the webhook failure ladder): ASL files whose Task states
 * invoke workers by `${<worker>FunctionArn}`; the workers whose access `starts` them may start them.
 */
export class StateMachines {
  readonly machines = new Map<StateMachineName, StateMachine>();

  constructor(scope: Construct, { removalPolicy, functions, tracing }: StateMachinesProps) {
    for (const spec of stateMachines) {
      const name = pascal(spec.name);
      const tasks = workers.filter((w) => w.trigger.kind === 'task' && w.trigger.stateMachine === spec.name);
      const substitutions = Object.fromEntries(
        tasks.map((w) => [`${w.id}FunctionArn`, functions.get(w.id).functionArn]),
      );
      const machine = new StateMachine(scope, `${name}StateMachine`, {
        definitionBody: DefinitionBody.fromFile(path.join(REPO_ROOT, spec.definition)),
        definitionSubstitutions: substitutions,
        stateMachineType: StateMachineType.STANDARD,
        tracingEnabled: tracing,
        logs: {
          destination: new LogGroup(scope, `${name}Logs`, {
            retention: RetentionDays.ONE_MONTH,
            removalPolicy,
          }),
          level: LogLevel.ALL,
          includeExecutionData: false,
        },
      });
      for (const w of tasks) functions.get(w.id).grantInvoke(machine);
      for (const w of workers.filter((x) => x.access.starts?.includes(spec.name))) {
        machine.grantStartExecution(functions.get(w.id));
        functions.get(w.id).addEnvironment(spec.env, machine.stateMachineArn);
      }
      this.machines.set(spec.name, machine);
    }
  }
}
