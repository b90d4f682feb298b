import { randomUUID } from 'node:crypto';
import {
  SendMessageBatchCommand,
  type SendMessageBatchCommandInput,
  SendMessageCommand,
  type SendMessageCommandInput,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { MAX_MESSAGE_BYTES } from '#core/messages';
import { queues } from '#lib/operations';
import { sqsEvent } from '../../support/fixtures.ts';

// Standard SQS queues as the workers see them: at-least-once, delays (DelaySeconds), a visibility
// timeout after each receive, partial batch failures returning a message to the queue, and a
// dead-letter queue after maxReceiveCount receives — driven by the (fake) Date, so a test moves time
// instead of sleeping. Sends can be refused (the SDK gave up) or answered with failed entries. SQS's
// limits are enforced as SQS does: at most 10 entries per batch, a message at most the queue's
// MaximumMessageSize (MAX_MESSAGE_BYTES; a batch entry over it fails alone), and at most 1 MiB for
// a whole batch request (body plus attributes, counted in UTF-8 bytes).

export interface Message {
  id: string;
  queueUrl: string;
  body: string;
  /** When it can be received (ms since epoch). */
  visibleAt: number;
  receiveCount: number;
  sentAt: number;
}

export interface Sent {
  queueUrl: string;
  body: unknown;
  delaySeconds: number;
  at: number;
}

/**
 * `reject`: the call fails; `failed-entries`: every entry of the batch fails; `refuse-entry`: only
 * the matching entries fail (a batch partly accepted).
 */
type SendFault = {
  kind: 'reject' | 'failed-entries' | 'refuse-entry';
  left: number;
  match?: (body: unknown) => boolean;
};

/** SQS's cap on a SendMessageBatch request: the entries' sizes together. */
export const BATCH_REQUEST_MAX_BYTES = 1_048_576;

type Attributes = Record<string, { DataType?: string; StringValue?: string; BinaryValue?: Uint8Array }>;

/** A message's size as SQS counts it: body, and each attribute's name, type and value, in bytes. */
export function messageSize(body: string, attributes: Attributes = {}): number {
  let size = Buffer.byteLength(body, 'utf8');
  for (const [name, a] of Object.entries(attributes)) {
    size += Buffer.byteLength(name, 'utf8') + Buffer.byteLength(a.DataType ?? '', 'utf8');
    if (a.StringValue !== undefined) size += Buffer.byteLength(a.StringValue, 'utf8');
    if (a.BinaryValue !== undefined) size += a.BinaryValue.byteLength;
  }
  return size;
}

const sqsError = (name: string, message: string) =>
  Object.assign(new Error(message), { name, $fault: 'client', $metadata: { httpStatusCode: 400 } });

const tooLong = () =>
  `One or more parameters are invalid. Reason: Message must be shorter than ${MAX_MESSAGE_BYTES} bytes.`;

type Handler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | undefined>;

const sizeOf = (e: { MessageBody?: string | undefined; MessageAttributes?: unknown }) =>
  messageSize(e.MessageBody ?? '', (e.MessageAttributes ?? {}) as Attributes);

const specOf = (queueUrl: string) => {
  const spec = queues.find((q) => process.env[q.env] === queueUrl);
  if (!spec) throw new Error(`no queue spec for ${queueUrl}`);
  return spec;
};

export class FakeSqs {
  private readonly mock = mockClient(SQSClient);
  /** Every message sent, in order, with its delay. */
  readonly sent: Sent[] = [];
  readonly messages: Message[] = [];
  readonly deadLetters: Message[] = [];
  /** Every send request (accepted or refused): its queue, entries and size as SQS counts it. */
  readonly sendCalls: Array<{ queueUrl: string; entries: number; bytes: number }> = [];
  private faults: SendFault[] = [];

  constructor() {
    this.install();
  }

  private install(): void {
    this.mock.on(SendMessageCommand).callsFake((input: SendMessageCommandInput) => {
      this.sendCalls.push({ queueUrl: String(input.QueueUrl), entries: 1, bytes: sizeOf(input) });
      if (sizeOf(input) > MAX_MESSAGE_BYTES) throw sqsError('InvalidParameterValue', tooLong());
      const body = JSON.parse(input.MessageBody ?? 'null') as unknown;
      const fault = this.takeFault(body);
      if (fault) throw Object.assign(new Error('injected SQS failure'), { name: 'InternalError' });
      return { MessageId: this.enqueue(String(input.QueueUrl), input.MessageBody ?? '', input.DelaySeconds) };
    });
    this.mock.on(SendMessageBatchCommand).callsFake((input: SendMessageBatchCommandInput) => {
      const entries = input.Entries ?? [];
      const bytes = entries.reduce((n, e) => n + sizeOf(e), 0);
      this.sendCalls.push({ queueUrl: String(input.QueueUrl), entries: entries.length, bytes });
      if (!entries.length)
        throw sqsError('EmptyBatchRequest', 'The batch request does not contain any entries.');
      if (entries.length > 10)
        throw sqsError('TooManyEntriesInBatchRequest', 'Maximum number of entries per request are 10.');
      if (bytes > BATCH_REQUEST_MAX_BYTES)
        throw sqsError(
          'BatchRequestTooLong',
          `Batch requests cannot be longer than ${BATCH_REQUEST_MAX_BYTES} bytes.`,
        );
      const faults = entries.map((e) => this.takeFault(JSON.parse(e.MessageBody ?? 'null') as unknown));
      const fault = faults.find((f) => f && f.kind !== 'refuse-entry');
      if (fault?.kind === 'reject')
        throw Object.assign(new Error('injected SQS failure'), { name: 'InternalError' });
      if (fault?.kind === 'failed-entries') {
        return {
          Successful: [],
          Failed: entries.map((e) => ({ Id: e.Id, Code: 'InternalError', SenderFault: false })),
        };
      }
      const out = {
        Successful: [] as Array<Record<string, unknown>>,
        Failed: [] as Array<Record<string, unknown>>,
      };
      entries.forEach((e, i) => {
        if (sizeOf(e) > MAX_MESSAGE_BYTES)
          out.Failed.push({ Id: e.Id, Code: 'InvalidParameterValue', SenderFault: true, Message: tooLong() });
        else if (faults[i]?.kind === 'refuse-entry')
          out.Failed.push({ Id: e.Id, Code: 'InternalError', SenderFault: false });
        else
          out.Successful.push({
            Id: e.Id,
            MessageId: this.enqueue(String(input.QueueUrl), e.MessageBody ?? '', e.DelaySeconds),
            MD5OfMessageBody: '',
          });
      });
      return out;
    });
  }

  reset(): void {
    this.mock.reset();
    this.install();
    this.sent.length = 0;
    this.messages.length = 0;
    this.deadLetters.length = 0;
    this.sendCalls.length = 0;
    this.faults = [];
  }

  /** The next `times` sends (of a body that matches) fail: refused outright, or as failed entries. */
  failSends(kind: SendFault['kind'], times = 1, match?: (body: unknown) => boolean): void {
    this.faults.push({ kind, left: times, match });
  }

  private takeFault(body: unknown): SendFault | undefined {
    const f = this.faults.find((x) => x.left > 0 && (!x.match || x.match(body)));
    if (!f) return undefined;
    f.left--;
    if (f.left <= 0) this.faults = this.faults.filter((x) => x !== f);
    return f;
  }

  private enqueue(queueUrl: string, body: string, delaySeconds = 0): string {
    const now = Date.now();
    const id = randomUUID();
    this.sent.push({ queueUrl, body: JSON.parse(body) as unknown, delaySeconds, at: now });
    this.messages.push({
      id,
      queueUrl,
      body,
      visibleAt: now + delaySeconds * 1000,
      receiveCount: 0,
      sentAt: now,
    });
    return id;
  }

  /** Puts a message on a queue directly (as a producer outside the test's scope would). */
  put(queueUrl: string, body: unknown, delaySeconds = 0): string {
    return this.enqueue(queueUrl, JSON.stringify(body), delaySeconds);
  }

  sentTo(queueUrl: string): Sent[] {
    return this.sent.filter((s) => s.queueUrl === queueUrl);
  }

  /** Messages still on the queue (visible or not). */
  waiting(queueUrl: string): Message[] {
    return this.messages.filter((m) => m.queueUrl === queueUrl);
  }

  /**
   * Receives up to `max` visible messages, hiding them for the visibility timeout. A message
   * received more than maxReceiveCount times moves to the dead-letter queue instead.
   */
  receive(queueUrl: string, max = 10): Message[] {
    const spec = specOf(queueUrl);
    const now = Date.now();
    const out: Message[] = [];
    for (const m of this.messages.filter((x) => x.queueUrl === queueUrl && x.visibleAt <= now)) {
      if (out.length >= max) break;
      if (m.receiveCount >= spec.maxReceiveCount) {
        this.messages.splice(this.messages.indexOf(m), 1);
        this.deadLetters.push(m);
        continue;
      }
      m.receiveCount += 1;
      m.visibleAt = now + spec.visibilityTimeoutSeconds * 1000;
      out.push(m);
    }
    return out;
  }

  delete(ids: string[]): void {
    for (const id of ids) {
      const i = this.messages.findIndex((m) => m.id === id);
      if (i >= 0) this.messages.splice(i, 1);
    }
  }

  /** When the next message of the queue becomes visible, if any. */
  nextVisibleAt(queueUrl: string): number | undefined {
    const times = this.waiting(queueUrl).map((m) => m.visibleAt);
    return times.length ? Math.min(...times) : undefined;
  }
}

/**
 * One Lambda invocation on `messages` (as the event source mapping makes it): the records the
 * handler reports as failed stay on the queue (visible again after the visibility timeout), the
 * others are deleted. A thrown handler fails the whole batch. Returns the failed message ids.
 */
export async function invoke(
  sqs: FakeSqs,
  handler: Handler,
  messages: Message[],
  context: Context,
): Promise<string[]> {
  if (!messages.length) return [];
  let failed: string[];
  try {
    const res = await handler(sqsEvent(messages), context);
    failed = (res?.batchItemFailures ?? []).map((f) => f.itemIdentifier);
  } catch {
    failed = messages.map((m) => m.id);
  }
  sqs.delete(messages.map((m) => m.id).filter((id) => !failed.includes(id)));
  return failed;
}

/** A queue's visibility timeout in ms, as the stack sets it (6 × its consumer's timeout). */
export function visibilityMs(name: (typeof queues)[number]['name']): number {
  const spec = queues.find((q) => q.name === name);
  if (!spec) throw new Error(`no queue ${name}`);
  return spec.visibilityTimeoutSeconds * 1000;
}
