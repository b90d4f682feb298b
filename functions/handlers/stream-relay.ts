import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Context, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { PostRecord } from '#core/posts';
import { logger } from '#shared/logger';
import { relayPostChange } from '#usecases/relay-post-changes';

const processor = new BatchProcessor(EventType.DynamoDBStreams);

type Image = Record<string, AttributeValue> | undefined;
const post = (image: Image) =>
  image && image.entity?.S === 'post' ? (unmarshall(image) as PostRecord) : undefined;

async function recordHandler(record: DynamoDBRecord): Promise<void> {
  const sent = await relayPostChange(
    post(record.dynamodb?.OldImage as Image),
    post(record.dynamodb?.NewImage as Image),
  );
  if (sent)
    logger.info('delivery messages enqueued', { count: sent, sequence: record.dynamodb?.SequenceNumber });
}

/** A failed record is reported back so the stream retries from it; later records wait (order kept). */
export const handler = async (event: DynamoDBStreamEvent, context: Context) =>
  processPartialResponse(event, recordHandler, processor, { context });
