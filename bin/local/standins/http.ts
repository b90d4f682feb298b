import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

// What every stand-in shares: AWS-shaped errors (the SDK raises the exception class the error type
// names) and the HTTP plumbing of the one loopback port they answer on.

/** An error the SDK maps to the exception class of the same name. */
export class AwsError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

export const unknownOperation = (target: string): never => {
  throw new AwsError('UnknownOperationException', `no stand-in for ${target}`);
};

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((ok, fail) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => ok(Buffer.concat(chunks).toString('utf8')));
    req.on('error', fail);
  });
}

export function send(
  res: ServerResponse,
  status: number,
  contentType: string,
  body: unknown,
  errorType?: string,
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': randomUUID(),
    ...(errorType ? { 'x-amzn-errortype': errorType } : {}),
  });
  res.end(text);
}

/** A service the dispatcher routes to by the X-Amz-Target prefix (the awsJson protocols). */
export type JsonService = (operation: string, body: Record<string, unknown>) => unknown;

/** A service on REST paths: handles the request and answers true, or answers false (not its path). */
export type RestService = (
  req: IncomingMessage,
  path: string,
  raw: string,
  res: ServerResponse,
) => Promise<boolean>;
