import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  ExpiredIteratorException,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
  TrimmedDataAccessException,
} from '@aws-sdk/client-dynamodb-streams';
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';

// The local stand-in for Lambda's DynamoDB Streams event source mapping: it reads every shard in
// order, hands batches to the same handler, checkpoints after success, and on a reported item
// failure resumes from that record (as the mapping does with ReportBatchItemFailures).

type StreamHandler = (
  event: DynamoDBStreamEvent,
  context: Context,
) => Promise<DynamoDBBatchResponse | undefined>;

export interface StreamPollerOptions {
  client: DynamoDBStreamsClient;
  streamArn: string;
  handler: StreamHandler;
  context: () => Context;
  checkpointFile: string;
  idleMs?: number;
  onError?: (err: unknown) => void;
}

interface ShardState {
  /** Last sequence number handled successfully. */
  after?: string;
  closed?: boolean;
}

export class StreamPoller {
  private running = false;
  private loop: Promise<void> | undefined;
  private readonly state: Record<string, ShardState>;
  private readonly iterators = new Map<string, string>();

  constructor(private readonly opts: StreamPollerOptions) {
    this.state = existsSync(opts.checkpointFile)
      ? (JSON.parse(readFileSync(opts.checkpointFile, 'utf8')) as Record<string, ShardState>)
      : {};
  }

  start(): void {
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  /** One pass over every shard; resolves with the number of records handled. */
  async pollOnce(): Promise<number> {
    const { client, streamArn } = this.opts;
    const shards = [];
    let start: string | undefined;
    do {
      const res = await client.send(
        new DescribeStreamCommand({ StreamArn: streamArn, ExclusiveStartShardId: start }),
      );
      shards.push(...(res.StreamDescription?.Shards ?? []));
      start = res.StreamDescription?.LastEvaluatedShardId;
    } while (start);

    let handled = 0;
    for (const shard of shards) {
      const id = shard.ShardId as string;
      this.state[id] ??= {};
      const st = this.state[id];
      if (st.closed) continue;
      // A child shard waits until its parent is drained, to keep per-item order (also when the
      // parent is listed after the child and has no state yet).
      const parent = shard.ParentShardId ? (this.state[shard.ParentShardId] ?? {}) : undefined;
      if (parent && !parent.closed && shards.some((s) => s.ShardId === shard.ParentShardId)) continue;
      handled += await this.drainShard(id, st);
    }
    return handled;
  }

  private async iterator(shardId: string, st: ShardState): Promise<string | undefined> {
    const cached = this.iterators.get(shardId);
    if (cached) return cached;
    const res = await this.opts.client.send(
      new GetShardIteratorCommand({
        StreamArn: this.opts.streamArn,
        ShardId: shardId,
        ...(st.after
          ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: st.after }
          : { ShardIteratorType: 'TRIM_HORIZON' }),
      }),
    );
    return res.ShardIterator;
  }

  private async drainShard(shardId: string, st: ShardState): Promise<number> {
    let iterator: string | undefined;
    let res: { Records?: StreamRecord[]; NextShardIterator?: string };
    try {
      iterator = await this.iterator(shardId, st);
      if (!iterator) return 0;
      res = await this.opts.client.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 100 }));
    } catch (err) {
      this.iterators.delete(shardId);
      if (err instanceof ExpiredIteratorException) return 0;
      if (err instanceof TrimmedDataAccessException) {
        st.after = undefined;
        return 0;
      }
      throw err;
    }
    const records = res.Records ?? [];
    if (records.length) {
      const failed = await this.deliver(records);
      const done =
        failed === undefined
          ? records
          : records.slice(
              0,
              records.findIndex((r) => r.dynamodb?.SequenceNumber === failed),
            );
      const last = done.at(-1)?.dynamodb?.SequenceNumber;
      if (last) st.after = last;
      this.save();
      if (failed !== undefined) {
        // Re-read from the failed record on the next pass.
        this.iterators.delete(shardId);
        return done.length;
      }
    }
    if (res.NextShardIterator) this.iterators.set(shardId, res.NextShardIterator);
    else {
      this.iterators.delete(shardId);
      st.closed = true;
      this.save();
    }
    return records.length;
  }

  /** Returns the sequence number of the first failed record, if any. */
  private async deliver(records: StreamRecord[]): Promise<string | undefined> {
    const event: DynamoDBStreamEvent = {
      Records: records.map((r) => ({
        eventID: r.eventID,
        eventName: r.eventName,
        eventVersion: r.eventVersion,
        eventSource: 'aws:dynamodb',
        awsRegion: r.awsRegion,
        eventSourceARN: this.opts.streamArn,
        dynamodb: {
          ...(r.dynamodb as object),
          NewImage: restoreEmptyMaps(r.dynamodb?.NewImage),
          OldImage: restoreEmptyMaps(r.dynamodb?.OldImage),
          ApproximateCreationDateTime: r.dynamodb?.ApproximateCreationDateTime
            ? Math.floor(r.dynamodb.ApproximateCreationDateTime.getTime() / 1000)
            : undefined,
        } as never,
      })),
    };
    try {
      const result = await this.opts.handler(event, this.opts.context());
      const failures = result?.batchItemFailures ?? [];
      if (!failures.length) return undefined;
      const ids = new Set(failures.map((f) => f.itemIdentifier));
      return (
        records.find((r) => ids.has(r.dynamodb?.SequenceNumber as string))?.dynamodb?.SequenceNumber ??
        records[0]?.dynamodb?.SequenceNumber
      );
    } catch (err) {
      this.opts.onError?.(err);
      return records[0]?.dynamodb?.SequenceNumber;
    }
  }

  private save(): void {
    const tmp = `${this.opts.checkpointFile}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.state));
    renameSync(tmp, this.opts.checkpointFile);
  }

  private async run(): Promise<void> {
    const idle = this.opts.idleMs ?? 100;
    while (this.running) {
      let handled = 0;
      try {
        handled = await this.pollOnce();
      } catch (err) {
        this.opts.onError?.(err);
      }
      if (!handled) await new Promise((r) => setTimeout(r, idle));
    }
  }
}

/**
 * The Streams SDK client deserializes an empty map `{"M":{}}` to `{}`, which is not an attribute
 * value at all; Lambda's stream events keep `{"M":{}}`. Restore it so handlers see what Lambda sends.
 */
function restoreEmptyMaps<T>(image: T): T {
  if (image === undefined || image === null) return image;
  const fix = (v: Record<string, unknown>): Record<string, unknown> => {
    if (Object.keys(v).length === 0) return { M: {} };
    if (v.M)
      return {
        M: Object.fromEntries(
          Object.entries(v.M as Record<string, Record<string, unknown>>).map(([k, x]) => [k, fix(x)]),
        ),
      };
    if (v.L) return { L: (v.L as Record<string, unknown>[]).map(fix) };
    return v;
  };
  return Object.fromEntries(
    Object.entries(image as Record<string, Record<string, unknown>>).map(([k, v]) => [k, fix(v)]),
  ) as T;
}
