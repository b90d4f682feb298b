import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { lean } from './sdk.ts';

// Every SDK client is built once per container. Endpoints come from the SDK's own
// AWS_ENDPOINT_URL_<SERVICE> variables, which is how the local stack points them at its stand-ins.

export const dynamo = lean(new DynamoDBClient({ maxAttempts: 3 }));

export const ddb = DynamoDBDocumentClient.from(dynamo, {
  marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
});
