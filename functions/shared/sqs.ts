import { SQSClient } from '@aws-sdk/client-sqs';

// Separate module so only the functions that use SQS carry its client in their bundle.
export const sqs = new SQSClient({ maxAttempts: 3 });
