import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  AwsError,
  type JsonService,
  type RestService,
  readBody,
  send,
  unknownOperation,
} from './standins/http.ts';
import { createKms } from './standins/kms.ts';
import { createLambda, type Invoke } from './standins/lambda.ts';
import { createSes, type SentEmail } from './standins/ses.ts';
import { createSfn, type ExecutionInfo, type LocalStateMachine } from './standins/step-functions.ts';

// Local stand-ins for KMS, Step Functions, SES (v2) and Lambda Invoke, on one loopback port. The
// handlers keep their real SDK clients; AWS_ENDPOINT_URL_KMS/_SFN/_SESV2/_LAMBDA point them here.
// Errors are AWS-shaped so the SDK raises the same exception classes as against AWS. Each service
// is a module of ./standins; this file only routes requests to them.

export type { SentEmail } from './standins/ses.ts';
export type { ExecutionInfo, ExecutionStatus, LocalStateMachine } from './standins/step-functions.ts';

export interface AwsStandins {
  /** One endpoint for all the services. */
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

export async function startAwsStandins(opts: {
  kmsKeyMaterial: Buffer;
  stateMachines: LocalStateMachine[];
  /** Lambda Invoke (RequestResponse): runs the named function's handler with the payload. */
  invoke?: Invoke;
  log?: (line: string) => void;
  /** Where executions are kept so a restart resumes the running ones (none: in memory only). */
  executionsFile?: string;
}): Promise<AwsStandins> {
  const log = opts.log ?? ((line: string) => console.log(line));
  if (opts.kmsKeyMaterial.length !== 32) throw new Error('kmsKeyMaterial must be 32 bytes (AES-256)');
  const sfn = createSfn(opts.stateMachines, log, opts.executionsFile);
  const ses = createSes(log);
  // JSON protocols by X-Amz-Target prefix: KMS speaks awsJson1.1, Step Functions awsJson1.0.
  const jsonServices: Record<string, JsonService> = {
    TrentService: createKms(opts.kmsKeyMaterial),
    AWSStepFunctions: (op, body) => sfn.call(op, body),
  };
  const restServices: RestService[] = [...(opts.invoke ? [createLambda(opts.invoke)] : []), ses.route];

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
      const [service = '', op = ''] = target.split('.');
      const contentType = req.headers['content-type'] ?? 'application/x-amz-json-1.0';
      try {
        let body: Record<string, unknown>;
        try {
          body = raw.length ? (JSON.parse(raw) as Record<string, unknown>) : {};
        } catch {
          throw new AwsError('SerializationException', 'request body is not JSON');
        }
        const call = Object.hasOwn(jsonServices, service) ? jsonServices[service] : undefined;
        send(res, 200, contentType, call ? call(op, body) : unknownOperation(target));
      } catch (err) {
        if (!(err instanceof AwsError)) throw err;
        send(res, 400, contentType, { __type: err.type, message: err.message }, err.type);
      }
      return;
    }
    const path = new URL(req.url ?? '/', 'http://local').pathname;
    for (const route of restServices) if (await route(req, path, raw, res)) return;
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
    emails: ses.emails,
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
