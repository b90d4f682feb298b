import { S3Client } from '@aws-sdk/client-s3';
import { lean } from './sdk.ts';

// Separate module so only the functions that touch media carry the S3 client in their bundle.
// Locally AWS_ENDPOINT_URL_S3 points at s3rver, which only understands path-style addresses.
export const s3 = lean(
  new S3Client({
    maxAttempts: 3,
    forcePathStyle: Boolean(process.env.AWS_ENDPOINT_URL_S3),
  }),
);
