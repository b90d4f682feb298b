import { DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { QUEUE_BODY_DAYS, QUEUE_BODY_PREFIX } from '#core/messages';

// The local stand-in for the upload bucket's lifecycle rule on queue bodies sent by reference
// (lib/constructs/media.ts): s3rver has no lifecycle rules, so bodies older than QUEUE_BODY_DAYS
// (since their last send, which stores them again) are deleted here, at start and then hourly.

/** How often the local stack looks (S3 applies lifecycle rules about once a day). */
export const QUEUE_BODY_SWEEP_MS = 3_600_000;

/** Deletes the bodies last written more than QUEUE_BODY_DAYS before `now`; answers how many. */
export async function expireQueueBodies(s3: S3Client, bucket: string, now = Date.now()): Promise<number> {
  const before = now - QUEUE_BODY_DAYS * 86_400_000;
  let token: string | undefined;
  let deleted = 0;
  do {
    const page = await s3.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: QUEUE_BODY_PREFIX, ContinuationToken: token }),
    );
    const old = (page.Contents ?? []).filter(
      (o) => o.Key && o.LastModified && o.LastModified.getTime() < before,
    );
    if (old.length) {
      await s3.send(
        new DeleteObjectsCommand({
          Bucket: bucket,
          Delete: { Objects: old.map((o) => ({ Key: o.Key as string })), Quiet: true },
        }),
      );
      deleted += old.length;
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return deleted;
}
