import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { DATA_MODEL_KEY } from '#core/data-model';
import { installDataModelGate } from './data-model-gate.ts';
import { lean } from './sdk.ts';

// Every SDK client is built once per container. Endpoints come from the SDK's own
// AWS_ENDPOINT_URL_<SERVICE> variables, which is how the local stack points them at its stand-ins.

export const dynamo = lean(new DynamoDBClient({ maxAttempts: 3 }));

export const ddb = DynamoDBDocumentClient.from(dynamo, {
  marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
});

// No command touches the table before its data model is known to be one this code reads.
installDataModelGate(dynamo, async (table) => {
  const res = await ddb.send(
    new GetCommand({
      TableName: table,
      Key: DATA_MODEL_KEY,
      ConsistentRead: true,
      ProjectionExpression: 'version',
    }),
  );
  const version = res?.Item?.version;
  return typeof version === 'number' ? version : null;
});
