import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Context, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { ChannelRecord } from '#core/accounts';
import type { PostRecord } from '#core/posts';
import { logger } from '#shared/logger';
import { relayChannelChange, relayPostChange } from '#usecases/relay-post-changes';
import { recordStats } from '#usecases/stats';

const processor = new BatchProcessor(EventType.DynamoDBStreams);

type Image = Record<string, AttributeValue> | undefined;
const entityOf = (image: Image) => image?.entity?.S;
const read = <T>(image: Image) => (image ? (unmarshall(image) as T) : undefined);

async function recordHandler(record: DynamoDBRecord): Promise<void> {
  const oldImage = record.dynamodb?.OldImage as Image;
  const newImage = record.dynamodb?.NewImage as Image;
  const entity = entityOf(newImage) ?? entityOf(oldImage);
  const base = {
    eventId: record.eventID ?? record.dynamodb?.SequenceNumber ?? '',
    timeMs: (record.dynamodb?.ApproximateCreationDateTime ?? Date.now() / 1000) * 1000,
  };
  let sent = 0;
  if (entity === 'post') {
    const change = { ...base, old: read<PostRecord>(oldImage), new: read<PostRecord>(newImage) };
    [sent] = await Promise.all([relayPostChange(change), recordStats(change)]);
  }
  if (entity === 'channel')
    sent = await relayChannelChange({
      ...base,
      old: read<ChannelRecord>(oldImage),
      new: read<ChannelRecord>(newImage),
    });
  if (sent) logger.debug('relayed', { count: sent, sequence: record.dynamodb?.SequenceNumber });
}

/** A failed record is reported back so the stream retries from it; later records wait (order kept). */
export const handler = async (event: DynamoDBStreamEvent, context: Context) =>
  processPartialResponse(event, recordHandler, processor, {
    context,
    throwOnFullBatchFailure: false,
    processInParallel: false,
  });
