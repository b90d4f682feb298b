import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { ChannelRecord } from '#core/accounts';
import type { PostRecord } from '#core/posts';
import type { WebhookEndpointRecord } from '#core/webhooks';
import { logger } from '#shared/logger';
import { relayChannelChange, relayPostChange } from '#usecases/support/relay-post-changes';
import { recordStats } from '#usecases/support/stats';
import { startLadderOnChange } from '#usecases/support/webhook-ladder-start';

type Image = Record<string, AttributeValue> | undefined;
const entityOf = (image: Image) => image?.entity?.S;
const read = <T>(image: Image) => (image ? (unmarshall(image) as T) : undefined);

async function relay(record: DynamoDBRecord): Promise<void> {
  const oldImage = record.dynamodb?.OldImage as Image;
  const newImage = record.dynamodb?.NewImage as Image;
  const entity = entityOf(newImage) ?? entityOf(oldImage);
  const base = {
    eventId: record.eventID ?? record.dynamodb?.SequenceNumber ?? '',
    timeMs: (record.dynamodb?.ApproximateCreationDateTime ?? Date.now() / 1000) * 1000,
  };
  if (entity === 'post') {
    const change = { ...base, old: read<PostRecord>(oldImage), new: read<PostRecord>(newImage) };
    await Promise.all([relayPostChange(change), recordStats(change)]);
  } else if (entity === 'channel') {
    await relayChannelChange({
      ...base,
      old: read<ChannelRecord>(oldImage),
      new: read<ChannelRecord>(newImage),
    });
  } else if (entity === 'webhook_endpoint') {
    await startLadderOnChange(read<WebhookEndpointRecord>(oldImage), read<WebhookEndpointRecord>(newImage));
  }
}

const itemKey = (r: DynamoDBRecord) => `${r.dynamodb?.Keys?.pk?.S}\u0000${r.dynamodb?.Keys?.sk?.S}`;

/**
 * Records of one item are relayed in order; different items concurrently (a batch of 100 posts
 * starting to publish must not wait on each other). On failure the earliest failed record is
 * reported: the stream resumes from it, and records after it are relayed again (ids derived from
 * the change make that harmless).
 */
export const handler = async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
  const groups = new Map<string, DynamoDBRecord[]>();
  for (const r of event.Records) groups.set(itemKey(r), [...(groups.get(itemKey(r)) ?? []), r]);
  const failed: DynamoDBRecord[] = [];
  await Promise.all(
    [...groups.values()].map(async (records) => {
      for (const r of records) {
        try {
          await relay(r);
        } catch (err) {
          logger.error('relay failed', { error: err as Error, sequence: r.dynamodb?.SequenceNumber });
          failed.push(r);
          return;
        }
      }
    }),
  );
  const first = failed
    .map((r) => r.dynamodb?.SequenceNumber ?? '')
    .sort((a, b) => (BigInt(a || '0') < BigInt(b || '0') ? -1 : 1))[0];
  return { batchItemFailures: first ? [{ itemIdentifier: first }] : [] };
};
