import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';

// The local stand-in for Lambda's SQS event source mapping: long-polls a queue with a few
// concurrent pollers, hands batches to the same handler, deletes what succeeded and leaves reported
// failures to come back after their visibility timeout (and to the DLQ after maxReceiveCount).

type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | undefined>;

export interface QueuePollerOptions {
  client: SQSClient;
  queueUrl: string;
  queueArn: string;
  handler: SqsHandler;
  context: () => Context;
  concurrency?: number;
  batchSize?: number;
  onError?: (err: unknown) => void;
}

export class QueuePoller {
  private running = false;
  private loops: Promise<void>[] = [];

  constructor(private readonly opts: QueuePollerOptions) {}

  start(): void {
    this.running = true;
    this.loops = Array.from({ length: this.opts.concurrency ?? 4 }, () => this.loop());
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private async loop(): Promise<void> {
    const { client, queueUrl } = this.opts;
    while (this.running) {
      try {
        const res = await client.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: this.opts.batchSize ?? 10,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
          }),
        );
        const messages = res.Messages ?? [];
        if (!messages.length) continue;
        const event: SQSEvent = {
          Records: messages.map((m) => ({
            messageId: m.MessageId ?? '',
            receiptHandle: m.ReceiptHandle ?? '',
            body: m.Body ?? '',
            attributes: {
              ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? '1',
              SentTimestamp: m.Attributes?.SentTimestamp ?? String(Date.now()),
              SenderId: 'local',
              ApproximateFirstReceiveTimestamp:
                m.Attributes?.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
            },
            messageAttributes: {},
            md5OfBody: m.MD5OfBody ?? '',
            eventSource: 'aws:sqs',
            eventSourceARN: this.opts.queueArn,
            awsRegion: 'us-east-1',
          })),
        };
        let failed = new Set<string>();
        try {
          const out = await this.opts.handler(event, this.opts.context());
          failed = new Set((out?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
        } catch (err) {
          this.opts.onError?.(err);
          failed = new Set(messages.map((m) => m.MessageId ?? ''));
        }
        const done = messages.filter((m) => !failed.has(m.MessageId ?? ''));
        if (done.length) {
          await client.send(
            new DeleteMessageBatchCommand({
              QueueUrl: queueUrl,
              Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
            }),
          );
        }
      } catch (err) {
        this.opts.onError?.(err);
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }
}
