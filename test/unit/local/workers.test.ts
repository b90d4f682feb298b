import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { type QueueName, queues, workers } from '#lib/operations';
import {
  LOCAL_CREDENTIALS,
  LOCAL_REGION,
  localVisibility,
  startQueues,
} from '../../../bin/local/services.ts';
import {
  type QueueSourceOptions,
  type ScheduleOptions,
  type Stoppable,
  type StreamSourceOptions,
  startWorkers,
  type WorkerSources,
} from '../../../bin/local/workers.ts';

// The local stack reads every trigger setting from the manifest, as the CDK stack does
// (test/unit/lib/herald-stack.test.ts asserts the AWS side): what each poller and timer is given,
// and the queues' own redrive settings.

/** Runs startWorkers over the real manifest with recording sources. */
async function wire() {
  const made = {
    queue: [] as QueueSourceOptions[],
    stream: [] as StreamSourceOptions[],
    timer: [] as ScheduleOptions[],
    started: [] as Stoppable[],
    contexts: [] as Array<{ worker: string; timeoutMs: number }>,
  };
  const handlers = new Map<string, () => Promise<unknown>>();
  /** A source that records its options in `list`. */
  const source = <T>(list: T[], opts: T): Stoppable & { running: boolean } => {
    list.push(opts);
    return recording();
  };
  const recording = (): Stoppable & { running: boolean } => ({
    running: false,
    start() {
      this.running = true;
    },
    async stop() {},
  });
  const sources: WorkerSources = {
    loadHandler: async (entry) => {
      const fn = async () => entry;
      handlers.set(entry, fn);
      return fn;
    },
    context: (worker, timeoutMs) => {
      made.contexts.push({ worker, timeoutMs });
      return { functionName: worker } as Context;
    },
    queue: (name: QueueName) => ({
      url: `url:${name}`,
      arn: `arn:${name}`,
      dlqUrl: `url:${name}-dlq`,
      dlqArn: `arn:${name}-dlq`,
    }),
    onError: () => () => {},
    queuePoller: (opts) => source(made.queue, opts),
    streamPoller: (opts) => source(made.stream, opts),
    timer: (opts) => source(made.timer, opts),
    started: (s) => made.started.push(s),
  };
  await startWorkers(workers, sources);
  return { made, handlers };
}

describe('startWorkers (the local stack’s triggers)', () => {
  const queueWorkers = workers.flatMap((w) => (w.trigger.kind === 'queue' ? [{ ...w, ...w.trigger }] : []));

  it.each(queueWorkers)(
    '$id polls its queue (dlq: $dlq) in batches of $batchSize with $concurrency receive loops',
    async (worker) => {
      // Act
      const { made, handlers } = await wire();

      // Assert
      const polled = made.queue.filter((q) => q.worker === worker.id);
      expect(polled).toHaveLength(1);
      const [poller] = polled as [QueueSourceOptions];
      expect(poller).toMatchObject({
        queueUrl: worker.dlq ? `url:${worker.queue}-dlq` : `url:${worker.queue}`,
        queueArn: worker.dlq ? `arn:${worker.queue}-dlq` : `arn:${worker.queue}`,
        batchSize: worker.batchSize,
        concurrency: worker.concurrency,
      });
      expect(poller.handler).toBe(handlers.get(worker.entry));
      poller.context();
      expect(made.contexts.at(-1)).toEqual({ worker: worker.id, timeoutMs: worker.timeoutSeconds * 1000 });
    },
  );

  it('gives the stream poller the manifest’s filter, batch size, retries and maximum age', async () => {
    // Act
    const { made } = await wire();

    // Assert
    const expected = workers.flatMap((w) => {
      if (w.trigger.kind !== 'stream') return [];
      const { kind: _, ...source } = w.trigger;
      return [{ worker: w.id, source }];
    });
    expect(made.stream.map(({ worker, source }) => ({ worker, source }))).toEqual(expected);
    expect(expected).not.toHaveLength(0);
  });

  it('runs each scheduled worker every localEverySeconds', async () => {
    // Act
    const { made } = await wire();

    // Assert
    expect(made.timer.map(({ worker, everyMs }) => ({ worker, everyMs }))).toEqual(
      workers.flatMap((w) =>
        w.trigger.kind === 'schedule' ? [{ worker: w.id, everyMs: w.trigger.localEverySeconds * 1000 }] : [],
      ),
    );
  });

  it('starts a source for every worker but the state machine tasks and invoked functions, and hands each over to be stopped', async () => {
    // Act
    const { made } = await wire();

    // Assert
    // Task workers run in the Step Functions stand-in, invoked ones through the Lambda stand-in.
    const triggered = workers.filter((w) => w.trigger.kind !== 'task' && w.trigger.kind !== 'invoke');
    expect(made.queue.length + made.stream.length + made.timer.length).toBe(triggered.length);
    expect(made.started).toHaveLength(triggered.length);
    expect(made.started.every((s) => (s as Stoppable & { running: boolean }).running)).toBe(true);
  });
});

describe('startQueues (the local queues)', () => {
  it('creates every manifest queue with its visibility timeout and redrive to its DLQ after maxReceiveCount', async () => {
    // Arrange
    const local = await startQueues();
    const sqs = new SQSClient({
      endpoint: local.endpoint,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
      useQueueUrlAsEndpoint: false,
    });
    try {
      for (const spec of queues) {
        // Act
        const q = local.queues[spec.name];
        const attributes =
          (
            await sqs.send(
              new GetQueueAttributesCommand({
                QueueUrl: q.url,
                AttributeNames: ['VisibilityTimeout', 'RedrivePolicy'],
              }),
            )
          ).Attributes ?? {};

        // Assert
        expect(attributes.VisibilityTimeout).toBe(String(localVisibility(spec.visibilityTimeoutSeconds)));
        expect(JSON.parse(attributes.RedrivePolicy ?? '{}')).toEqual({
          deadLetterTargetArn: q.dlqArn,
          maxReceiveCount: spec.maxReceiveCount,
        });
      }
    } finally {
      sqs.destroy();
      await local.stop();
    }
  });
});
