import { SQSClient } from '@aws-sdk/client-sqs';
import { lean } from './sdk.ts';

// Separate module so only the functions that use SQS carry its client in their bundle.
// The endpoint comes from the region (or AWS_ENDPOINT_URL_SQS locally), never from a queue URL's host.
export const sqs = lean(new SQSClient({ maxAttempts: 3, useQueueUrlAsEndpoint: false }));
