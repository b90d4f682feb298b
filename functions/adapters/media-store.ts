import { createReadStream, createWriteStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { inLambda, requireEnv } from '#shared/config';
import { s3 } from '#shared/s3';

// The media bucket: presigned uploads, probing reads, posters, and the bytes connectors send.

// Two buckets: uploads (where clients PUT; never served; a lifecycle rule expires what is never
// completed) and media (probed copies and posters, served by the CDN).
export type BucketName = 'uploads' | 'media';
const bucketOf = (b: BucketName) =>
  requireEnv(b === 'uploads' ? 'HERALD_UPLOAD_BUCKET' : 'HERALD_MEDIA_BUCKET');

/** A presigned PUT bound to the key, the Content-Type and (when given) the length. */
export async function presignUpload(
  key: string,
  contentType: string,
  sizeBytes: number | undefined,
  expiresInSeconds: number,
): Promise<string> {
  const command = new PutObjectCommand({
    Bucket: bucketOf('uploads'),
    Key: key,
    ContentType: contentType,
    ...(sizeBytes !== undefined ? { ContentLength: sizeBytes } : {}),
  });
  const url = await getSignedUrl(s3, command, {
    expiresIn: expiresInSeconds,
    // Sign the content type (and length) so S3 refuses other headers.
    signableHeaders: new Set(['content-type', ...(sizeBytes !== undefined ? ['content-length'] : [])]),
  });
  return localUploadUrl(url);
}

/**
 * The local stack only (never in a Lambda): s3rver does not check signatures, so uploads go through
 * the local front door (`HERALD_LOCAL_UPLOAD_ORIGIN`), which checks the ticket and forwards them.
 */
function localUploadUrl(url: string): string {
  const origin = process.env.HERALD_LOCAL_UPLOAD_ORIGIN;
  if (inLambda() || !origin) return url;
  const u = new URL(url);
  return `${origin.replace(/\/+$/, '')}/_uploads${u.pathname}${u.search}`;
}

/** Size and type of an uploaded object, or null when nothing was uploaded. */
export async function headObject(
  b: BucketName,
  key: string,
): Promise<{ size: number; contentType: string; lastModified?: Date | undefined } | null> {
  try {
    const res = await s3.send(new HeadObjectCommand({ Bucket: bucketOf(b), Key: key }));
    return {
      size: res.ContentLength ?? 0,
      contentType: res.ContentType ?? '',
      lastModified: res.LastModified,
    };
  } catch (err) {
    const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
    if (e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404) return null;
    throw err;
  }
}

/** The first `bytes` bytes of an object (one ranged GET). */
export async function readHead(b: BucketName, key: string, bytes: number): Promise<Uint8Array> {
  const res = await s3.send(
    new GetObjectCommand({ Bucket: bucketOf(b), Key: key, Range: `bytes=0-${Math.max(0, bytes - 1)}` }),
  );
  return res.Body ? await res.Body.transformToByteArray() : new Uint8Array();
}

/** The whole object (images: small by their limit). */
export async function readObject(b: BucketName, key: string): Promise<Uint8Array> {
  const res = await s3.send(new GetObjectCommand({ Bucket: bucketOf(b), Key: key }));
  return res.Body ? await res.Body.transformToByteArray() : new Uint8Array();
}

/** Bytes [start, end) of an object: one ranged GET, so a chunked upload holds a chunk, not the file. */
export async function readRange(b: BucketName, key: string, start: number, end: number): Promise<Uint8Array> {
  if (end <= start) return new Uint8Array();
  const res = await s3.send(
    new GetObjectCommand({ Bucket: bucketOf(b), Key: key, Range: `bytes=${start}-${end - 1}` }),
  );
  const bytes = res.Body ? await res.Body.transformToByteArray() : new Uint8Array();
  // A store that ignores Range would hand back the whole object: never pass that on as a chunk.
  if (bytes.byteLength !== end - start)
    throw new Error(
      `media object ${key}: asked for ${end - start} bytes at ${start}, got ${bytes.byteLength}`,
    );
  return bytes;
}

/**
 * The object as a web stream, opened on first pull (a request that never sends its body never
 * opens a GET); its pace is the consumer's, so what is held is the socket's buffers.
 */
export function streamObject(b: BucketName, key: string): ReadableStream<Uint8Array> {
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!reader) {
        const res = await s3.send(new GetObjectCommand({ Bucket: bucketOf(b), Key: key }));
        if (!res.Body) throw new Error(`media object ${key} has no body`);
        reader = (res.Body.transformToWebStream() as ReadableStream<Uint8Array>).getReader();
      }
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    async cancel(reason) {
      await reader?.cancel(reason);
    },
  });
}

/** Streams an object into a local file (for ffprobe/ffmpeg). */
export async function downloadObject(b: BucketName, key: string, filePath: string): Promise<void> {
  const res = await s3.send(new GetObjectCommand({ Bucket: bucketOf(b), Key: key }));
  if (!res.Body) throw new Error(`media object ${key} has no body`);
  await pipeline(res.Body as Readable, createWriteStream(filePath));
}

/** Into the media bucket (posters). */
export async function putMediaObject(key: string, body: Uint8Array, contentType: string): Promise<void> {
  await s3.send(
    new PutObjectCommand({ Bucket: bucketOf('media'), Key: key, Body: body, ContentType: contentType }),
  );
}

/**
 * A finished local file into the media bucket (renditions), a part at a time from the file (putStream):
 * the key holds nothing until the whole file is there.
 */
export async function putMediaFile(key: string, filePath: string, contentType: string): Promise<void> {
  await putStream('media', key, contentType, createReadStream(filePath));
}

/** The probed upload into the media bucket (server-side copy; single copies go up to 5 GB). */
export async function promoteUpload(
  uploadKey: string,
  objectKey: string,
  contentType: string,
): Promise<void> {
  await s3.send(
    new CopyObjectCommand({
      Bucket: bucketOf('media'),
      Key: objectKey,
      CopySource: `${bucketOf('uploads')}/${uploadKey.split('/').map(encodeURIComponent).join('/')}`,
      ContentType: contentType,
      MetadataDirective: 'REPLACE',
    }),
  );
}

export async function deleteUpload(uploadKey: string): Promise<void> {
  await s3.send(new DeleteObjectCommand({ Bucket: bucketOf('uploads'), Key: uploadKey }));
}

/** An object of either bucket, gone (S3 answers success for a key that is not there). */
export async function deleteObject(b: BucketName, key: string): Promise<void> {
  await s3.send(new DeleteObjectCommand({ Bucket: bucketOf(b), Key: key }));
}

/** Parts of a streamed upload: what is held in memory at a time (S3's least part is 5 MiB). */
export const UPLOAD_PART_BYTES = 8 * 1024 * 1024;

/**
 * Streams bytes of unknown length into a bucket: one PutObject when they fit in a part, else a
 * multipart upload, a part at a time (aborted on any failure, so no parts linger; S3 shows the
 * object only once its PUT or CompleteMultipartUpload is done). Answers the size. `signal` stops it
 * between parts. Each body is a Buffer of known length: a stream body would go aws-chunked, which
 * the local stack's s3rver stores framed.
 */
export async function putStream(
  b: BucketName,
  key: string,
  contentType: string,
  chunks: AsyncIterable<Uint8Array>,
  signal?: AbortSignal,
): Promise<number> {
  const Bucket = bucketOf(b);
  let buffered: Uint8Array[] = [];
  let bufferedBytes = 0;
  let total = 0;
  let uploadId: string | undefined;
  const parts: Array<{ ETag: string; PartNumber: number }> = [];
  const flush = async () => {
    const Body = Buffer.concat(buffered);
    buffered = [];
    bufferedBytes = 0;
    signal?.throwIfAborted();
    uploadId ??= (
      await s3.send(new CreateMultipartUploadCommand({ Bucket, Key: key, ContentType: contentType }))
    ).UploadId;
    const PartNumber = parts.length + 1;
    const res = await s3.send(
      new UploadPartCommand({ Bucket, Key: key, UploadId: uploadId, PartNumber, Body }),
    );
    parts.push({ ETag: res.ETag ?? '', PartNumber });
  };
  try {
    for await (const chunk of chunks) {
      buffered.push(chunk);
      bufferedBytes += chunk.length;
      total += chunk.length;
      if (bufferedBytes >= UPLOAD_PART_BYTES) await flush();
    }
    signal?.throwIfAborted();
    if (uploadId === undefined) {
      await s3.send(
        new PutObjectCommand({ Bucket, Key: key, Body: Buffer.concat(buffered), ContentType: contentType }),
      );
      return total;
    }
    if (bufferedBytes > 0) await flush();
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket,
        Key: key,
        UploadId: uploadId,
        MultipartUpload: { Parts: parts },
      }),
    );
    return total;
  } catch (err) {
    if (uploadId !== undefined)
      await s3
        .send(new AbortMultipartUploadCommand({ Bucket, Key: key, UploadId: uploadId }))
        .catch(() => undefined); // the bucket's lifecycle rule aborts what is left after a day
    throw err;
  }
}
