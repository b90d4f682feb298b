import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { relayStreamBatch } from '#usecases/stream-relay';

export const handler = (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> =>
  relayStreamBatch(event.Records);
