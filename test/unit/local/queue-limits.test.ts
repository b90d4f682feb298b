import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import {
  GetQueueAttributesCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_MESSAGE_BYTES, QUEUE_BODY_DAYS } from '#core/messages';
import { expireQueueBodies } from '../../../bin/local/queue-body-expiry.ts';
import {
  LOCAL_CREDENTIALS,
  LOCAL_REGION,
  type Queues,
  type S3Service,
  startQueues,
  startS3,
} from '../../../bin/local/services.ts';

// The local stack's stand-ins keep SQS's size limits as the stack sets them (fauxqs enforces them
// once told the queue's MaximumMessageSize), and the upload bucket's expiry of queue bodies.

let queues: Queues;
let sqs: SQSClient;

beforeAll(async () => {
  queues = await startQueues();
  sqs = new SQSClient({
    endpoint: queues.endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    useQueueUrlAsEndpoint: false,
  });
});
afterAll(async () => {
  sqs.destroy();
  await queues.stop();
});

describe('the local queues', () => {
  it('have the size limit the stack sets, queue and DLQ alike', async () => {
    for (const q of Object.values(queues.queues)) {
      for (const url of [q.url, q.dlqUrl]) {
        const res = await sqs.send(
          new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['MaximumMessageSize'] }),
        );
        expect(res.Attributes?.MaximumMessageSize).toBe(String(MAX_MESSAGE_BYTES));
      }
    }
  });

  it('refuse a message over it, and a batch request over 1 MiB, with SQS error names', async () => {
    const url = queues.queues.events.url;
    const big = 'x'.repeat(MAX_MESSAGE_BYTES + 1);
    await expect(sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: big }))).rejects.toMatchObject(
      {
        // fauxqs names it with the query protocol's prefix (AWS.SimpleQueueService.).
        name: expect.stringMatching(/InvalidParameterValue$/),
      },
    );
    const res = await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: url, Entries: [{ Id: '0', MessageBody: big }] }),
    );
    expect(res.Failed?.[0]).toMatchObject({ Id: '0', Code: 'InvalidParameterValue', SenderFault: true });
    const quarter = 'y'.repeat(MAX_MESSAGE_BYTES - 10);
    await expect(
      sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: url,
          Entries: [0, 1, 2, 3, 4].map((i) => ({ Id: String(i), MessageBody: quarter })),
        }),
      ),
    ).rejects.toMatchObject({ name: 'BatchRequestTooLong' });
  });
});

describe('the local expiry of queue bodies', () => {
  let s3: S3Service;
  let client: S3Client;
  let dir: string;
  const credentials = { accessKeyId: 'HERALDTEST', secretAccessKey: 'secret' };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'herald-s3-'));
    s3 = await startS3(dir, credentials);
    client = new S3Client({ endpoint: s3.endpoint, region: LOCAL_REGION, credentials, forcePathStyle: true });
  });
  afterAll(async () => {
    client.destroy();
    await s3.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('deletes the bodies older than the lifecycle rule, and nothing else', async () => {
    const put = (Key: string) =>
      client.send(new PutObjectCommand({ Bucket: s3.buckets.uploads, Key, Body: '{}' }));
    await put('queue-bodies/a');
    await put('uploads/org/med/file.png');

    expect(await expireQueueBodies(client, s3.buckets.uploads)).toBe(0);
    const later = Date.now() + (QUEUE_BODY_DAYS * 86_400 + 60) * 1000;
    expect(await expireQueueBodies(client, s3.buckets.uploads, later)).toBe(1);
    expect(await expireQueueBodies(client, s3.buckets.uploads, later)).toBe(0);
  });
});
