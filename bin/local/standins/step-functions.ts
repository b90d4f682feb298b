import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import {
  ExecutionAbortedError,
  ExecutionError,
  ExecutionTimeoutError,
  StateMachine,
  type StateMachineDefinition,
} from 'aws-local-stepfunctions';
import { writeFileDurably } from '../durable-file.ts';
import { AwsError, unknownOperation } from './http.ts';

// Step Functions (awsJson1.0, X-Amz-Target AWSStepFunctions.*): StartExecution, DescribeExecution
// and StopExecution of Standard workflows, run by aws-local-stepfunctions with each Task state
// answered by a local handler.

// aws-local-stepfunctions calls Promise.withResolvers (Node 22+) in every Task state.
const promiseStatics = Promise as PromiseConstructor & { withResolvers?: unknown };
if (typeof promiseStatics.withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers<T>() {
      let resolve!: (value: T | PromiseLike<T>) => void;
      let reject!: (reason?: unknown) => void;
      const promise = new Promise<T>((ok, fail) => {
        resolve = ok;
        reject = fail;
      });
      return { promise, resolve, reject };
    },
  });
}

export interface LocalStateMachine {
  arn: string;
  definition: string;
  /** Task state name -> local implementation (aws-local-stepfunctions taskResourceLocalHandlers). */
  taskHandlers: Record<string, (input: unknown) => Promise<unknown>>;
}

export type ExecutionStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED';

export interface ExecutionInfo {
  executionArn: string;
  stateMachineArn: string;
  name: string;
  status: ExecutionStatus;
  startDate: Date;
  stopDate?: Date;
  /** JSON text, as given to StartExecution. */
  input: string;
  /** JSON text, once SUCCEEDED. */
  output?: string;
  error?: string;
  cause?: string;
}

interface Machine {
  arn: string;
  name: string;
  machine: StateMachine;
  local: LocalStateMachine;
}

interface Execution {
  info: ExecutionInfo;
  abort?: () => void;
}

/** Task state names anywhere in a definition (Parallel branches and Map processors included). */
function taskStates(def: { States?: Record<string, Record<string, unknown>> }): string[] {
  return Object.entries(def.States ?? {}).flatMap(([name, state]) => [
    ...(state.Type === 'Task' ? [name] : []),
    ...((state.Branches as (typeof def)[] | undefined) ?? []).flatMap(taskStates),
    ...[state.Iterator, state.ItemProcessor].flatMap((sub) => (sub ? taskStates(sub as typeof def) : [])),
  ]);
}

// Execution names: 1-80 characters, none of whitespace, brackets, wildcards, control characters.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it rejects
const BAD_NAME = /[\s<>{}[\]?*"#%\\^|~`$&,;:/\u0000-\u001f\u007f-\u009f]/;

/**
 * Executions as a file under the data directory, rewritten (and synced) before StartExecution
 * answers and when one ends: a restart resumes each execution that was running, from its start
 * with the same name, input and start date. That is sound for Herald's ladder, whose waits are
 * absolute timestamps and whose steps act only if the same failure streak is still running; the
 * library cannot resume a run mid-state.
 */
function executionStore(file: string | undefined) {
  const read = (): ExecutionInfo[] => {
    if (!file || !existsSync(file)) return [];
    let saved: Array<ExecutionInfo & { startDate: string }>;
    try {
      saved = JSON.parse(readFileSync(file, 'utf8')) as typeof saved;
    } catch (err) {
      // Not skipped: the failure ladders it holds would never warn or disable their endpoints.
      throw new Error(
        `${file} is unreadable (${(err as Error).message}). Restore it, or move it away to start without the failure-ladder executions it holds (endpoints failing now would then not be warned or disabled).`,
      );
    }
    return saved.map((e) => ({
      ...e,
      startDate: new Date(e.startDate),
      ...(e.stopDate ? { stopDate: new Date(e.stopDate as unknown as string) } : {}),
    }));
  };
  const write = (all: ExecutionInfo[]) => {
    if (file) writeFileDurably(file, JSON.stringify(all));
  };
  return { read, write };
}

export function createSfn(
  stateMachines: LocalStateMachine[],
  log: (line: string) => void,
  executionsFile?: string,
) {
  const machines = new Map<string, Machine>();
  for (const sm of stateMachines) {
    const definition = JSON.parse(sm.definition) as StateMachineDefinition;
    const tasks = taskStates(definition as never);
    // A Task without a local handler would make the library invoke a real Lambda function.
    const missing = tasks.filter((t) => !sm.taskHandlers[t]);
    const stray = Object.keys(sm.taskHandlers).filter((t) => !tasks.includes(t));
    if (missing.length || stray.length)
      throw new Error(
        `${sm.arn}: task handlers must match the Task states (missing: ${missing.join(', ') || '-'}; unknown: ${stray.join(', ') || '-'})`,
      );
    // Resources are real (or CDK token) ARNs that never get called here: no ARN check. Paths are checked.
    const machine = new StateMachine(definition, {
      validationOptions: { checkArn: false, checkPaths: true },
    });
    machines.set(sm.arn, { arn: sm.arn, name: sm.arn.split(':').at(-1) ?? sm.arn, machine, local: sm });
  }
  const executions = new Map<string, Execution>();

  const find = (arn: unknown) => {
    const exec = executions.get(String(arn));
    if (!exec) throw new AwsError('ExecutionDoesNotExist', `Execution Does Not Exist: '${String(arn)}'`);
    return exec;
  };
  const seconds = (d: Date) => d.getTime() / 1000;
  const finish = (exec: Execution, status: ExecutionStatus, fields: Partial<ExecutionInfo> = {}) => {
    Object.assign(exec.info, { status, stopDate: new Date(), ...fields });
    exec.abort = undefined;
  };

  const store = executionStore(executionsFile);
  /** Shutting down: executions cut short by the stop are not recorded as ended (they resume). */
  let closing = false;
  const persist = () => {
    if (closing) return;
    // Ended executions are kept 90 days, as Step Functions keeps their names taken.
    const since = Date.now() - 90 * 86_400_000;
    store.write(
      [...executions.values()]
        .map((e) => e.info)
        .filter((i) => i.status === 'RUNNING' || (i.stopDate?.getTime() ?? 0) > since),
    );
  };

  const start = (body: Record<string, unknown>) => {
    const sm = machines.get(String(body.stateMachineArn));
    if (!sm)
      throw new AwsError(
        'StateMachineDoesNotExist',
        `State Machine Does Not Exist: '${String(body.stateMachineArn)}'`,
      );
    const name = body.name === undefined ? randomUUID() : String(body.name);
    if (name.length < 1 || name.length > 80 || BAD_NAME.test(name))
      throw new AwsError('InvalidName', `Invalid Name: '${name}'`);
    const input = body.input === undefined ? '{}' : String(body.input);
    try {
      JSON.parse(input);
    } catch {
      throw new AwsError('InvalidExecutionInput', 'Invalid State Machine Execution Input: not JSON');
    }
    const executionArn = `${sm.arn.replace(':stateMachine:', ':execution:')}:${name}`;
    const existing = executions.get(executionArn);
    if (existing) {
      // Standard workflows: the same name and input while it runs is the same execution; else a conflict.
      if (existing.info.status === 'RUNNING' && existing.info.input === input)
        return { executionArn, startDate: seconds(existing.info.startDate) };
      throw new AwsError('ExecutionAlreadyExists', `Execution Already Exists: '${executionArn}'`);
    }
    const info: ExecutionInfo = {
      executionArn,
      stateMachineArn: sm.arn,
      name,
      status: 'RUNNING',
      startDate: new Date(),
      input,
    };
    launch(sm, info);
    persist();
    return { executionArn, startDate: seconds(info.startDate) };
  };

  /** Runs an execution (new, or resumed after a restart) and records how it ends. */
  const launch = (sm: Machine, info: ExecutionInfo) => {
    const { executionArn, name, input } = info;
    const parsed = JSON.parse(input) as unknown;
    const handlers = Object.fromEntries(
      Object.entries(sm.local.taskHandlers).map(([state, fn]) => [
        state,
        async (input: unknown) => {
          // The library still enters a Task after an abort that cut a Retry interval short.
          if (info.status !== 'RUNNING') throw new ExecutionAbortedError();
          // Lambda hands back JSON: undefined becomes null, Dates become strings.
          return JSON.parse(JSON.stringify((await fn(input)) ?? null)) as never;
        },
      ]),
    );
    const run = sm.machine.run(parsed as never, {
      overrides: { taskResourceLocalHandlers: handlers },
      context: {
        Execution: { Id: executionArn, Name: name },
        StateMachine: { Id: sm.arn, Name: sm.name },
      },
    });
    const exec: Execution = { info, abort: run.abort };
    executions.set(executionArn, exec);
    run.result.then(
      (output) => {
        if (info.status === 'RUNNING') finish(exec, 'SUCCEEDED', { output: JSON.stringify(output) });
        persist();
      },
      (err: unknown) => {
        if (info.status !== 'RUNNING' || closing) return;
        if (err instanceof ExecutionAbortedError) {
          finish(exec, 'ABORTED');
          persist();
          return;
        }
        if (err instanceof ExecutionTimeoutError) finish(exec, 'TIMED_OUT', { error: 'States.Timeout' });
        else {
          // ExecutionError wraps what the state threw: its name is the States error (Fail state Error,
          // a handler's error name), its message the cause.
          const failure = err instanceof ExecutionError && err.cause instanceof Error ? err.cause : err;
          finish(exec, 'FAILED', {
            error: failure instanceof Error ? failure.name : 'Error',
            cause: failure instanceof Error ? failure.message : String(failure),
          });
        }
        persist();
        log(
          `execution ${name} of ${sm.name} ${info.status}: ${info.error}${info.cause ? `: ${info.cause}` : ''}`,
        );
      },
    );
  };

  // Executions of an earlier run: the ended ones keep their names taken; the running ones resume
  // when the stack is ready to run their tasks (resume()).
  const earlier = store.read();
  for (const info of earlier)
    if (info.status !== 'RUNNING' && machines.has(info.stateMachineArn))
      executions.set(info.executionArn, { info });

  const describe = (info: ExecutionInfo) => ({
    executionArn: info.executionArn,
    stateMachineArn: info.stateMachineArn,
    name: info.name,
    status: info.status,
    startDate: seconds(info.startDate),
    input: info.input,
    inputDetails: { included: true },
    ...(info.stopDate ? { stopDate: seconds(info.stopDate) } : {}),
    ...(info.output !== undefined ? { output: info.output, outputDetails: { included: true } } : {}),
    ...(info.error !== undefined ? { error: info.error } : {}),
    ...(info.cause !== undefined ? { cause: info.cause } : {}),
  });

  const stopExecution = (body: Record<string, unknown>) => {
    const exec = find(body.executionArn);
    if (exec.info.status === 'RUNNING') {
      const abort = exec.abort;
      finish(exec, 'ABORTED', {
        ...(typeof body.error === 'string' ? { error: body.error } : {}),
        ...(typeof body.cause === 'string' ? { cause: body.cause } : {}),
      });
      abort?.();
      persist();
    }
    return { stopDate: seconds(exec.info.stopDate as Date) };
  };

  return {
    call(op: string, body: Record<string, unknown>): unknown {
      switch (op) {
        case 'StartExecution':
          return start(body);
        case 'DescribeExecution':
          return describe(find(body.executionArn).info);
        case 'StopExecution':
          return stopExecution(body);
        default:
          return unknownOperation(`AWSStepFunctions.${op}`);
      }
    },
    list: (arn?: string) =>
      [...executions.values()]
        .filter((e) => arn === undefined || e.info.stateMachineArn === arn)
        .map((e) => ({ ...e.info })),
    resume() {
      for (const info of earlier) {
        const sm = machines.get(info.stateMachineArn);
        if (info.status !== 'RUNNING' || !sm || executions.has(info.executionArn)) continue;
        launch(sm, info);
        log(`execution ${info.name} of ${sm.name} resumed after a restart`);
      }
    },
    abortAll() {
      closing = true;
      for (const exec of executions.values())
        if (exec.info.status === 'RUNNING') stopExecution({ executionArn: exec.info.executionArn });
    },
  };
}
