import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ExecutionAbortedError,
  ExecutionError,
  ExecutionTimeoutError,
  StateMachine,
  type StateMachineDefinition,
} from 'aws-local-stepfunctions';

// Local stand-ins for KMS, Step Functions and SES (v2), on one loopback port. The handlers keep their
// real SDK clients; AWS_ENDPOINT_URL_KMS/_SFN/_SESV2 point them here. Errors are AWS-shaped so the
// SDK raises the same exception classes as against AWS.

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

export interface SentEmail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  at: Date;
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

export interface AwsStandins {
  /** One endpoint for all three services. */
  endpoint: string;
  /** Every email SendEmail accepted, oldest first. */
  emails: SentEmail[];
  /** Snapshots of the executions (of one state machine, given its ARN), oldest first. */
  executions(arn?: string): ExecutionInfo[];
  /** Resumes the executions that were running when the last run stopped (see executionsFile). */
  resumeExecutions(): void;
  /** Aborts the running executions and closes the server. */
  stop(): Promise<void>;
}

/** An error the SDK maps to the exception class of the same name. */
class AwsError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

export async function startAwsStandins(opts: {
  kmsKeyMaterial: Buffer;
  stateMachines: LocalStateMachine[];
  /** Lambda Invoke (RequestResponse): runs the named function's handler with the payload. */
  invoke?: (functionName: string, payload: unknown) => Promise<unknown>;
  log?: (line: string) => void;
  /** Where executions are kept so a restart resumes the running ones (none: in memory only). */
  executionsFile?: string;
}): Promise<AwsStandins> {
  const log = opts.log ?? ((line: string) => console.log(line));
  if (opts.kmsKeyMaterial.length !== 32) throw new Error('kmsKeyMaterial must be 32 bytes (AES-256)');
  const kms = createKms(opts.kmsKeyMaterial);
  const sfn = createSfn(opts.stateMachines, log, opts.executionsFile);
  const emails: SentEmail[] = [];

  const sendEmail = (body: SendEmailBody) => {
    const to = body.Destination?.ToAddresses ?? [];
    const simple = body.Content?.Simple;
    if (!body.FromEmailAddress || to.length === 0 || !simple)
      throw new AwsError(
        'BadRequestException',
        'FromEmailAddress, Destination.ToAddresses and Content.Simple are required',
      );
    const email: SentEmail = {
      from: body.FromEmailAddress,
      to,
      subject: simple.Subject?.Data ?? '',
      text: simple.Body?.Text?.Data ?? simple.Body?.Html?.Data ?? '',
      at: new Date(),
    };
    emails.push(email);
    log(`email to ${to.join(', ')}: ${email.subject}`);
    return { MessageId: randomUUID() };
  };

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      log(`aws stand-ins: ${err instanceof Error ? err.message : String(err)}`);
      if (!res.headersSent)
        send(res, 500, 'application/json', { __type: 'InternalFailure', message: 'internal' });
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const raw = await readBody(req);
    const target = req.headers['x-amz-target'];
    if (typeof target === 'string') {
      // JSON protocols: KMS speaks awsJson1.1, Step Functions awsJson1.0.
      const [service, op = ''] = target.split('.');
      const contentType = req.headers['content-type'] ?? 'application/x-amz-json-1.0';
      try {
        let body: Record<string, unknown>;
        try {
          body = raw.length ? (JSON.parse(raw) as Record<string, unknown>) : {};
        } catch {
          throw new AwsError('SerializationException', 'request body is not JSON');
        }
        const out =
          service === 'TrentService'
            ? kms(op, body)
            : service === 'AWSStepFunctions'
              ? sfn.call(op, body)
              : unknownOperation(target);
        send(res, 200, contentType, out);
      } catch (err) {
        if (!(err instanceof AwsError)) throw err;
        send(res, 400, contentType, { __type: err.type, message: err.message }, err.type);
      }
      return;
    }
    const path = new URL(req.url ?? '/', 'http://local').pathname;
    const invocation = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/.exec(path);
    if (req.method === 'POST' && invocation && opts.invoke) {
      const name = decodeURIComponent(invocation[1] ?? '');
      try {
        const result = await opts.invoke(name, raw.length ? JSON.parse(raw) : {});
        send(res, 200, 'application/json', result ?? null);
      } catch (err) {
        // Lambda answers 200 with X-Amz-Function-Error and the error as the payload.
        res.writeHead(200, { 'content-type': 'application/json', 'x-amz-function-error': 'Unhandled' });
        res.end(JSON.stringify({ errorType: (err as Error).name, errorMessage: (err as Error).message }));
      }
      return;
    }
    if (req.method === 'POST' && path === '/v2/email/outbound-emails') {
      try {
        send(res, 200, 'application/json', sendEmail(JSON.parse(raw || '{}') as SendEmailBody));
      } catch (err) {
        const type = err instanceof AwsError ? err.type : 'BadRequestException';
        send(res, 400, 'application/json', { message: (err as Error).message }, type);
      }
      return;
    }
    send(
      res,
      404,
      'application/json',
      { message: `no stand-in for ${req.method} ${path}` },
      'UnknownOperationException',
    );
  }

  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => ok());
  });
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    emails,
    executions: (arn) => sfn.list(arn),
    resumeExecutions: () => sfn.resume(),
    stop: async () => {
      sfn.abortAll();
      await new Promise<void>((ok) => {
        server.close(() => ok());
        server.closeAllConnections();
      });
    },
  };
}

const unknownOperation = (target: string): never => {
  throw new AwsError('UnknownOperationException', `no stand-in for ${target}`);
};

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((ok, fail) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => ok(Buffer.concat(chunks).toString('utf8')));
    req.on('error', fail);
  });
}

function send(res: ServerResponse, status: number, contentType: string, body: unknown, errorType?: string) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': randomUUID(),
    ...(errorType ? { 'x-amzn-errortype': errorType } : {}),
  });
  res.end(text);
}

interface SendEmailBody {
  FromEmailAddress?: string;
  Destination?: { ToAddresses?: string[] };
  Content?: {
    Simple?: { Subject?: { Data?: string }; Body?: { Text?: { Data?: string }; Html?: { Data?: string } } };
  };
}

// --- KMS --------------------------------------------------------------------------------------------

const BLOB_VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Symmetric KMS with one AES-256-GCM key. Blob: version | keyId length (u16) | keyId | iv | tag |
 * ciphertext. KeyId and the encryption context are the AAD: a blob opens only under both, as in KMS.
 */
function createKms(key: Buffer) {
  const aad = (keyId: string, context: unknown) => {
    const entries = Object.entries((context ?? {}) as Record<string, string>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return Buffer.from(JSON.stringify([keyId, entries]));
  };
  const invalid = () => new AwsError('InvalidCiphertextException', 'the ciphertext is invalid');

  const encrypt = (keyId: string, plaintext: Buffer, context: unknown) => {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(aad(keyId, context));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    const id = Buffer.from(keyId);
    const header = Buffer.alloc(3);
    header.writeUInt8(BLOB_VERSION, 0);
    header.writeUInt16BE(id.length, 1);
    return Buffer.concat([header, id, iv, cipher.getAuthTag(), ciphertext]).toString('base64');
  };

  return (op: string, body: Record<string, unknown>) => {
    if (op === 'GenerateDataKey') {
      const keyId = body.KeyId;
      if (typeof keyId !== 'string' || !keyId) throw new AwsError('ValidationException', 'KeyId is required');
      const bytes =
        body.KeySpec === 'AES_128' ? 16 : body.KeySpec === 'AES_256' ? 32 : Number(body.NumberOfBytes);
      if (!Number.isInteger(bytes) || bytes < 1 || bytes > 1024)
        throw new AwsError('ValidationException', 'Specify either KeySpec or NumberOfBytes');
      const dataKey = randomBytes(bytes);
      return {
        CiphertextBlob: encrypt(keyId, dataKey, body.EncryptionContext),
        Plaintext: dataKey.toString('base64'),
        KeyId: keyId,
      };
    }
    if (op === 'Encrypt') {
      const keyId = body.KeyId;
      if (typeof keyId !== 'string' || !keyId) throw new AwsError('ValidationException', 'KeyId is required');
      const plaintext = Buffer.from(String(body.Plaintext ?? ''), 'base64');
      if (plaintext.length < 1 || plaintext.length > 4096)
        throw new AwsError(
          'ValidationException',
          "1 validation error detected: Value at 'plaintext' failed to satisfy constraint: Member must have length between 1 and 4096",
        );
      return {
        CiphertextBlob: encrypt(keyId, plaintext, body.EncryptionContext),
        KeyId: keyId,
        EncryptionAlgorithm: 'SYMMETRIC_DEFAULT',
      };
    }
    if (op === 'Decrypt') {
      const blob = Buffer.from(String(body.CiphertextBlob ?? ''), 'base64');
      if (blob.length < 3 || blob.readUInt8(0) !== BLOB_VERSION) throw invalid();
      const idEnd = 3 + blob.readUInt16BE(1);
      if (blob.length < idEnd + IV_BYTES + TAG_BYTES) throw invalid();
      const keyId = blob.subarray(3, idEnd).toString();
      if (typeof body.KeyId === 'string' && body.KeyId !== keyId)
        throw new AwsError('IncorrectKeyException', 'the ciphertext was not encrypted under this KeyId');
      const decipher = createDecipheriv('aes-256-gcm', key, blob.subarray(idEnd, idEnd + IV_BYTES));
      decipher.setAAD(aad(keyId, body.EncryptionContext));
      decipher.setAuthTag(blob.subarray(idEnd + IV_BYTES, idEnd + IV_BYTES + TAG_BYTES));
      let plaintext: Buffer;
      try {
        plaintext = Buffer.concat([
          decipher.update(blob.subarray(idEnd + IV_BYTES + TAG_BYTES)),
          decipher.final(),
        ]);
      } catch {
        throw invalid();
      }
      return {
        Plaintext: plaintext.toString('base64'),
        KeyId: keyId,
        EncryptionAlgorithm: 'SYMMETRIC_DEFAULT',
      };
    }
    return unknownOperation(`TrentService.${op}`);
  };
}

// --- Step Functions -----------------------------------------------------------------------------------

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
    return (JSON.parse(readFileSync(file, 'utf8')) as Array<ExecutionInfo & { startDate: string }>).map(
      (e) => ({
        ...e,
        startDate: new Date(e.startDate),
        ...(e.stopDate ? { stopDate: new Date(e.stopDate as unknown as string) } : {}),
      }),
    );
  };
  const write = (all: ExecutionInfo[]) => {
    if (!file) return;
    const tmp = `${file}.tmp`;
    const fd = openSync(tmp, 'w', 0o600);
    writeSync(fd, JSON.stringify(all));
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, file);
  };
  return { read, write };
}

function createSfn(stateMachines: LocalStateMachine[], log: (line: string) => void, executionsFile?: string) {
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
