import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { relayStreamBatch } from '#usecases/stream-relay';

/**
 * A batch of the table stream as Lambda hands it over with a tumbling window (lib/operations.ts):
 * the records of one shard, and the shard's id, which the counters' exactly-once marks key on.
 * The relay keeps no state across a window: it answers an empty `state` (which a windowed mapping
 * requires; without it Lambda takes the invocation as failed), and a window's final invocation has
 * nothing to do.
 */
export type StreamBatchEvent = DynamoDBStreamEvent & {
  shardId?: string;
  window?: { start: string; end: string };
  state?: Record<string, unknown>;
  isFinalInvokeForWindow?: boolean;
  isWindowTerminatedEarly?: boolean;
};

export const handler = async (
  event: StreamBatchEvent,
): Promise<DynamoDBBatchResponse & { state: Record<string, never> }> => ({
  ...(await relayStreamBatch(event.Records, event.shardId)),
  state: {},
});
