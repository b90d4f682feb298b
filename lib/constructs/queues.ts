import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { MAX_MESSAGE_BYTES } from '../../functions/core/messages.ts';
import { type QueueName, type QueueSpec, queues } from '../operations.ts';
import { pascal } from './ids.ts';

export interface QueuePair {
  readonly spec: QueueSpec;
  readonly queue: Queue;
  readonly dlq: Queue;
}

const DLQ_RETENTION = Duration.days(14);

/**
 * Every queue of the manifest with its DLQ (visibility timeouts and maxReceiveCount from the
 * manifest), and the table stream's on-failure destination.
 */
export class Queues {
  readonly pairs: ReadonlyMap<QueueName, QueuePair>;
  /** Where the stream relay's event source mapping sends the records it gave up on. */
  readonly streamRelayDlq: Queue;

  /** RETAIN on protected stages: messages waiting in a queue outlive a stack's deletion or a mistake. */
  constructor(scope: Construct, { removalPolicy }: { removalPolicy: RemovalPolicy }) {
    const pairs = new Map<QueueName, QueuePair>();
    for (const spec of queues) {
      const name = pascal(spec.name);
      // The size limit stated, not defaulted: the adapter sends larger messages by reference.
      const dlq = new Queue(scope, `${name}Dlq`, {
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: DLQ_RETENTION,
        maxMessageSizeBytes: MAX_MESSAGE_BYTES,
        ...(spec.dlqVisibilityTimeoutSeconds
          ? { visibilityTimeout: Duration.seconds(spec.dlqVisibilityTimeoutSeconds) }
          : {}),
        removalPolicy,
      });
      const queue = new Queue(scope, `${name}Queue`, {
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        maxMessageSizeBytes: MAX_MESSAGE_BYTES,
        visibilityTimeout: Duration.seconds(spec.visibilityTimeoutSeconds),
        deadLetterQueue: { queue: dlq, maxReceiveCount: spec.maxReceiveCount },
        removalPolicy,
      });
      pairs.set(spec.name, { spec, queue, dlq });
    }
    this.pairs = pairs;

    this.streamRelayDlq = new Queue(scope, 'StreamRelayDlq', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: DLQ_RETENTION,
      removalPolicy,
    });
  }

  of(name: QueueName): QueuePair {
    const pair = this.pairs.get(name);
    if (!pair) throw new Error(`no queue ${name}`);
    return pair;
  }
}
