import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { putStream, UPLOAD_PART_BYTES } from '#adapters/media-store';

// Streamed uploads of fetched bytes (importMedia): one PutObject when they fit a part, else a
// multipart upload holding one part at a time, aborted when the source fails.

const s3 = mockClient(S3Client);
const KEY = 'uploads/org_1/med_1/clip.mp4';

async function* source(sizes: number[], failAfter?: number): AsyncGenerator<Uint8Array> {
  for (const [i, n] of sizes.entries()) {
    if (i === failAfter) throw new Error('the download broke off');
    yield new Uint8Array(n).fill(i + 1);
  }
}

beforeEach(() => {
  s3.reset();
  s3.on(CreateMultipartUploadCommand).resolves({ UploadId: 'up-1' });
  s3.on(UploadPartCommand).callsFake((input: { PartNumber: number }) => ({ ETag: `"e${input.PartNumber}"` }));
  s3.on(CompleteMultipartUploadCommand).resolves({});
  s3.on(PutObjectCommand).resolves({});
  s3.on(AbortMultipartUploadCommand).resolves({});
});

describe('putStream', () => {
  it('puts a small file in one PutObject', async () => {
    expect(await putStream('uploads', KEY, 'image/png', source([1000, 2000]))).toBe(3000);
    const put = s3.commandCalls(PutObjectCommand)[0]?.args[0].input;
    expect(put).toMatchObject({ Bucket: 'herald-test-uploads', Key: KEY, ContentType: 'image/png' });
    expect((put?.Body as Buffer | undefined)?.length).toBe(3000);
    expect(s3.commandCalls(CreateMultipartUploadCommand)).toHaveLength(0);
  });

  it('sends a large file in parts of 8 MiB, in order, and completes it', async () => {
    const half = UPLOAD_PART_BYTES / 2;
    expect(await putStream('uploads', KEY, 'video/mp4', source([half, half, half, 1000]))).toBe(
      3 * half + 1000,
    );
    const parts = s3.commandCalls(UploadPartCommand).map((c) => c.args[0].input);
    expect(parts.map((p) => [p.PartNumber, (p.Body as Buffer).length])).toEqual([
      [1, UPLOAD_PART_BYTES],
      [2, half + 1000],
    ]);
    expect(s3.commandCalls(CompleteMultipartUploadCommand)[0]?.args[0].input.MultipartUpload).toEqual({
      Parts: [
        { ETag: '"e1"', PartNumber: 1 },
        { ETag: '"e2"', PartNumber: 2 },
      ],
    });
    expect(s3.commandCalls(PutObjectCommand)).toHaveLength(0);
  });

  it('aborts the multipart upload when the source fails, leaving no parts', async () => {
    const attempt = putStream('uploads', KEY, 'video/mp4', source([UPLOAD_PART_BYTES, 10, 10], 2));
    await expect(attempt).rejects.toThrow(/broke off/);
    expect(s3.commandCalls(AbortMultipartUploadCommand)[0]?.args[0].input).toMatchObject({
      Key: KEY,
      UploadId: 'up-1',
    });
    expect(s3.commandCalls(CompleteMultipartUploadCommand)).toHaveLength(0);
  });

  it('stops between parts once its signal aborts', async () => {
    const stop = new AbortController();
    stop.abort();
    await expect(putStream('uploads', KEY, 'video/mp4', source([10]), stop.signal)).rejects.toThrow();
    expect(s3.commandCalls(PutObjectCommand)).toHaveLength(0);
  });
});
