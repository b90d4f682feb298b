import { createHash } from 'node:crypto';
import { QUEUE_BODY_BUCKET_ENV, QUEUE_BODY_PREFIX } from '#core/messages';
import { requireEnv } from './config.ts';

// Queue messages too large for their queue go by reference (a claim check): the body is stored in
// the upload bucket under QUEUE_BODY_PREFIX (a lifecycle rule expires it after QUEUE_BODY_DAYS; both
// in core/messages.ts) and the message carries only its key. The key is the body's SHA-256, so a
// retried send stores the same object again (refreshing its age) and a receiver can tell the bytes
// are the ones that were sent. Nothing deletes a body on receipt: a duplicate or a redelivered
// message still needs it. The queue adapter (adapters/queues.ts) sends by reference; a reference is
// resolved where a record's body is read (sqs-batch.ts), so no use case ever sees one.

/** The message sent instead of a body stored by reference. */
export interface QueueBodyRef {
  $queue_body: { key: string; bytes: number };
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

// Loaded on first use: every SQS consumer reads its bodies here, and most never meet a reference,
// so their cold start builds no S3 client.
const s3Module = () => Promise.all([import('@aws-sdk/client-s3'), import('./s3.ts')]);

/** Stores `body` and answers the (small) message body that refers to it. */
export async function storeQueueBody(body: string): Promise<string> {
  const key = `${QUEUE_BODY_PREFIX}${sha256(body)}`;
  const [{ PutObjectCommand }, { s3 }] = await s3Module();
  await s3.send(
    new PutObjectCommand({
      Bucket: requireEnv(QUEUE_BODY_BUCKET_ENV),
      Key: key,
      Body: body,
      ContentType: 'application/json',
    }),
  );
  const ref: QueueBodyRef = { $queue_body: { key, bytes: Buffer.byteLength(body, 'utf8') } };
  return JSON.stringify(ref);
}

function refOf(parsed: unknown): QueueBodyRef['$queue_body'] | undefined {
  if (typeof parsed !== 'object' || parsed === null || !('$queue_body' in parsed)) return undefined;
  const ref = (parsed as QueueBodyRef).$queue_body;
  if (typeof ref?.key !== 'string' || !ref.key.startsWith(QUEUE_BODY_PREFIX))
    throw new Error('malformed queue body reference');
  return ref;
}

/**
 * A received message's body, parsed: the stored body when the message is a reference (checked
 * against the hash its key names; a mismatch or a missing body throws, and the record goes back).
 */
export async function receivedBody<T>(raw: string): Promise<T> {
  const parsed = JSON.parse(raw) as unknown;
  const ref = refOf(parsed);
  if (!ref) return parsed as T;
  const [{ GetObjectCommand }, { s3 }] = await s3Module();
  const res = await s3.send(
    new GetObjectCommand({ Bucket: requireEnv(QUEUE_BODY_BUCKET_ENV), Key: ref.key }),
  );
  const text = (await res.Body?.transformToString('utf8')) ?? '';
  if (`${QUEUE_BODY_PREFIX}${sha256(text)}` !== ref.key)
    throw new Error(`queue body ${ref.key} does not match its reference`);
  return JSON.parse(text) as T;
}
