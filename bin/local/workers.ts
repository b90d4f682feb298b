import type { Context } from 'aws-lambda';
import type { QueueName, StreamSource, Worker } from '#lib/operations';

// The local stack's event sources for the manifest's workers, read from the same trigger fields as
// the CDK stack (lib/constructs/workers.ts): the stream poller gets the stream mapping's filter,
// batch size, retries and maximum age; a queue poller the queue (or its DLQ), batch size and
// concurrency; a timer the local rate. Task workers are run by the Step Functions stand-in.

type AnyHandler = (...args: never[]) => Promise<unknown>;

/** What a started poller or timer must offer: the stack stops it on shutdown. */
export interface Stoppable {
  start(): void;
  stop(): Promise<void>;
}

export interface QueueSourceOptions {
  worker: string;
  queueUrl: string;
  queueArn: string;
  handler: AnyHandler;
  context: () => Context;
  concurrency: number;
  batchSize: number;
  onError: (err: unknown) => void;
}

export interface StreamSourceOptions {
  worker: string;
  handler: AnyHandler;
  context: () => Context;
  source: StreamSource;
  onError: (err: unknown) => void;
}

export interface ScheduleOptions {
  worker: string;
  run: () => Promise<unknown>;
  everyMs: number;
  onError: (err: unknown) => void;
}

/** How the local stack makes each kind of event source (bin/local.ts gives the real ones). */
export interface WorkerSources {
  loadHandler(entry: string): Promise<AnyHandler>;
  context(worker: string, timeoutMs: number): Context;
  queue(name: QueueName): { url: string; arn: string; dlqUrl: string; dlqArn: string };
  streamPoller(opts: StreamSourceOptions): Stoppable;
  queuePoller(opts: QueueSourceOptions): Stoppable;
  timer(opts: ScheduleOptions): Stoppable;
  onError(worker: string): (err: unknown) => void;
  /** Called with each source once it runs (the stack stops it on shutdown, even if a later one fails to start). */
  started(source: Stoppable): void;
}

/** Starts every worker's event source, one after the other. */
export async function startWorkers(list: readonly Worker[], sources: WorkerSources): Promise<void> {
  for (const worker of list) {
    const handler = await sources.loadHandler(worker.entry);
    const context = () => sources.context(worker.id, worker.timeoutSeconds * 1000);
    const onError = sources.onError(worker.id);
    const trigger = worker.trigger;
    let source: Stoppable | undefined;
    if (trigger.kind === 'stream') {
      const { kind: _, ...streamSource } = trigger;
      source = sources.streamPoller({ worker: worker.id, handler, context, source: streamSource, onError });
    } else if (trigger.kind === 'queue') {
      const q = sources.queue(trigger.queue);
      source = sources.queuePoller({
        worker: worker.id,
        queueUrl: trigger.dlq ? q.dlqUrl : q.url,
        queueArn: trigger.dlq ? q.dlqArn : q.arn,
        handler,
        context,
        concurrency: trigger.concurrency,
        batchSize: trigger.batchSize,
        onError,
      });
    } else if (trigger.kind === 'schedule') {
      source = sources.timer({
        worker: worker.id,
        // The schedule's event carries nothing the workers read.
        run: () => (handler as (event: unknown, context: Context) => Promise<unknown>)({}, context()),
        everyMs: trigger.localEverySeconds * 1000,
        onError,
      });
    }
    if (!source) continue;
    source.start();
    sources.started(source);
  }
}
