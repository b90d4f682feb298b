import { describe, expect, it } from 'vitest';
import { dynamo } from '#shared/clients';
import { s3 } from '#shared/s3';
import { sqs } from '#shared/sqs';

// The SDK clients carry no logger middleware (functions/shared/sdk.ts): it masked every request
// and response for a logger that discards them.

describe('SDK clients', () => {
  it.each([
    ['DynamoDB', dynamo],
    ['SQS', sqs],
    ['S3', s3],
  ])('%s has no logger middleware, and keeps the rest of its stack', (_, client) => {
    const names = client.middlewareStack.identify().join('\n');
    expect(names).not.toMatch(/loggerMiddleware/);
    expect(names).toMatch(/retryMiddleware/);
  });
});
