import { existsSync, readFileSync } from 'node:fs';
import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  ExpiredIteratorException,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type Shard,
  type _Record as StreamRecord,
  TrimmedDataAccessException,
} from '@aws-sdk/client-dynamodb-streams';
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import type { StreamSource } from '#lib/operations';
import { writeFileDurably } from './durable-file.ts';

// The local stand-in for Lambda's DynamoDB Streams event source mapping, with the settings the
// stack gives it (lib/operations.ts): it reads every shard in order, drops records the filter does
// not match, hands batches to the same handler and checkpoints (to a file, so a restart resumes
// after the last handled record) after success. A reported item failure resumes from that record
// (ReportBatchItemFailures); a batch that throws is bisected down to the failing record, which is
// retried `retryAttempts` times and then sent to the on-failure destination, as are records older
// than `maxRecordAgeSeconds`. A crash between a handled batch and its checkpoint hands that batch
// to the handler again after the restart: at least once, as Lambda does, and harmless for the relay
// (messages name their delivery round, event ids derive from the record, counters dedupe).
// With a tumbling window (`windowSeconds`) it does what Lambda does then: every batch carries its
// shard id, the window (by the records' creation times; a batch never spans two) and the state the
// handler answered last in that window; an answer without `state` is a failed invocation; a window
// ends with a final invocation (no records) once a later window's record comes, the window's time
// is over or the shard ends, and the shard waits until that invocation succeeds.

/** A batch as Lambda hands it over; the window fields only with a tumbling window. */
export type WindowedStreamEvent = DynamoDBStreamEvent & {
  shardId?: string;
  eventSourceARN?: string;
  window?: { start: string; end: string };
  state?: Record<string, unknown>;
  isFinalInvokeForWindow?: boolean;
  isWindowTerminatedEarly?: boolean;
};

/** How long the shard list is used before it is listed again (ms). */
const SHARD_LIST_MS = 1_000;
/** How long a position past records the filter dropped may stay off disk (ms). */
const DROPPED_SAVE_MS = 1_000;

type StreamHandler = (
  event: WindowedStreamEvent,
  context: Context,
) => Promise<(DynamoDBBatchResponse & { state?: unknown }) | undefined>;

/** What the on-failure destination receives (Lambda's invocation record for a stream batch). */
export interface StreamFailure {
  requestContext: {
    condition: 'RetryAttemptsExhausted' | 'RecordAgeExceeded';
    approximateInvokeCount: number;
  };
  timestamp: string;
  DDBStreamBatchInfo: {
    shardId: string;
    startSequenceNumber: string;
    endSequenceNumber: string;
    approximateArrivalOfFirstRecord?: string;
    approximateArrivalOfLastRecord?: string;
    batchSize: number;
    streamArn: string;
  };
}

export interface StreamPollerOptions {
  client: DynamoDBStreamsClient;
  streamArn: string;
  handler: StreamHandler;
  context: () => Context;
  checkpointFile: string;
  /** The mapping's settings; without them every record is delivered and retried without end. */
  source?: StreamSource;
  /** The on-failure destination (the stack's stream DLQ). */
  onFailure?: (failure: StreamFailure) => Promise<void>;
  idleMs?: number;
  onError?: (err: unknown) => void;
  /** Where an unreadable checkpoint file is reported (default: stderr). */
  log?: (line: string) => void;
}

/** A failing head of a shard: its record, the attempts so far, the batch size after bisecting. */
interface Retry {
  seq: string;
  attempts: number;
  size: number;
}

interface ShardState {
  /** Last sequence number handled successfully. */
  after?: string;
  closed?: boolean;
  /** The open tumbling window: its start (epoch ms) and the state the handler answered last. */
  window?: { start: number; state: Record<string, unknown> };
}

export class StreamPoller {
  private running = false;
  private loop: Promise<void> | undefined;
  private readonly state: Record<string, ShardState>;
  private readonly iterators = new Map<string, string>();
  private readonly retries = new Map<string, Retry>();
  /** Wait before the next pass after a failure (grows with the attempts). */
  private backoffMs = 0;
  /** The stream's shards as last listed, and when (listed again when a shard ends, or after SHARD_LIST_MS). */
  private shards: Shard[] | undefined;
  private listedAt = 0;
  /** When the checkpoint file was last written. */
  private savedAt = 0;
  /** The read just handled held only records the filter drops (see save). */
  private onlyDropped = false;

  constructor(private readonly opts: StreamPollerOptions) {
    this.state = readCheckpoints(opts.checkpointFile, opts.log ?? ((line) => console.error(line)));
  }

  start(): void {
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    // The position past records the filter dropped may not be on disk yet (see save).
    if (this.loop) this.save();
  }

  /**
   * The stream's shards. Listed once a second, and at once after a shard ended (its children are
   * read next), rather than on every pass: under steady writes a pass comes every few milliseconds.
   */
  private async listShards(): Promise<Shard[]> {
    if (this.shards && Date.now() - this.listedAt < SHARD_LIST_MS) return this.shards;
    const { client, streamArn } = this.opts;
    const shards: Shard[] = [];
    let start: string | undefined;
    do {
      const res = await client.send(
        new DescribeStreamCommand({ StreamArn: streamArn, ExclusiveStartShardId: start }),
      );
      shards.push(...(res.StreamDescription?.Shards ?? []));
      start = res.StreamDescription?.LastEvaluatedShardId;
    } while (start);
    this.shards = shards;
    this.listedAt = Date.now();
    return shards;
  }

  /** One pass over every shard; resolves with the number of records handled. */
  async pollOnce(): Promise<number> {
    const shards = await this.listShards();
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
      if (st.closed) this.shards = undefined;
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
    if (!records.length && st.window && Date.now() >= st.window.start + this.windowMs()) {
      // The window's time is over: its final invocation, before anything else of the shard.
      if (!(await this.closeWindow(shardId, st))) {
        this.iterators.delete(shardId);
        return 0;
      }
      this.save();
    }
    if (records.length) {
      const stop = await this.handle(shardId, st, records);
      this.save();
      if (stop !== undefined) {
        // Re-read from the checkpoint on the next pass.
        this.iterators.delete(shardId);
        return stop;
      }
    }
    if (res.NextShardIterator) this.iterators.set(shardId, res.NextShardIterator);
    else {
      this.iterators.delete(shardId);
      // The shard ended: so did its window (Lambda's windows do not outlive a shard).
      if (st.window && !(await this.closeWindow(shardId, st))) return records.length;
      st.closed = true;
      this.save();
    }
    return records.length;
  }

  /**
   * One read of a shard: filters, ages out, delivers (bisecting and retrying as configured) and
   * moves the checkpoint. Undefined when every record is done; else how many were, to re-read the
   * rest from the checkpoint on the next pass.
   */
  private async handle(
    shardId: string,
    st: ShardState,
    records: StreamRecord[],
  ): Promise<number | undefined> {
    const seq = (r: StreamRecord | undefined) => r?.dynamodb?.SequenceNumber as string;
    const source = this.opts.source;
    const maxAgeMs = source ? source.maxRecordAgeSeconds * 1000 : Number.POSITIVE_INFINITY;
    const old = records.filter(
      (r) => Date.now() - (r.dynamodb?.ApproximateCreationDateTime?.getTime() ?? Date.now()) > maxAgeMs,
    );
    const kept = records.filter((r) => !old.includes(r) && this.matches(r));
    if (st.window && kept[0] && this.windowOf(kept[0]) > st.window.start) {
      // A later window's record: the open window's final invocation goes first.
      if (!(await this.closeWindow(shardId, st))) return 0;
    }
    if (old.length) await this.fail(shardId, old, 'RecordAgeExceeded', 0);
    if (!kept.length) {
      st.after = seq(records.at(-1));
      this.onlyDropped = !old.length;
      return undefined;
    }
    const retry = this.retries.get(shardId);
    const fresh = !retry || retry.seq !== seq(kept[0]);
    const size = fresh ? kept.length : retry.size;
    const batch = kept.slice(0, size);
    if (this.windowMs()) {
      // A batch belongs to one window.
      const window = this.windowOf(batch[0] as StreamRecord);
      const cut = batch.findIndex((r) => this.windowOf(r) !== window);
      if (cut > 0) batch.splice(cut);
      if (!st.window) st.window = { start: window, state: {} };
    }
    const done = (upTo: StreamRecord | undefined) => {
      // Records up to this one are handled (or filtered out): the checkpoint moves past them.
      if (upTo) st.after = seq(upTo);
    };
    const failed = await this.deliver(batch, shardId, st);
    if (failed === undefined) {
      this.retries.delete(shardId);
      this.backoffMs = 0;
      if (batch.length === kept.length) {
        done(records.at(-1));
        return undefined;
      }
      done(batch.at(-1));
      return records.indexOf(batch.at(-1) as StreamRecord) + 1;
    }
    const at = failed.kind === 'item' ? batch.findIndex((r) => seq(r) === failed.seq) : 0;
    done(records[records.indexOf(batch[at] as StreamRecord) - 1]);
    const head = batch[at] as StreamRecord;
    const previous = this.retries.get(shardId);
    const attempts = (previous && previous.seq === seq(head) ? previous.attempts : 0) + 1;
    if (failed.kind === 'error' && batch.length > 1) {
      // Bisect: the first half alone next (bisecting does not spend the record's attempts).
      this.retries.set(shardId, {
        seq: seq(head),
        attempts: attempts - 1,
        size: Math.ceil(batch.length / 2),
      });
    } else if (source && attempts > source.retryAttempts) {
      const given = failed.kind === 'item' ? [head] : batch;
      await this.fail(shardId, given, 'RetryAttemptsExhausted', attempts);
      done(given.at(-1));
      this.retries.delete(shardId);
    } else {
      this.retries.set(shardId, {
        seq: seq(head),
        attempts,
        size: failed.kind === 'item' ? Number.MAX_SAFE_INTEGER : 1,
      });
      this.backoffMs = Math.min(5_000, 100 * 2 ** attempts);
    }
    return records.indexOf(head);
  }

  /** Records the mapping's filter lets through: the new image's `entity` is one of the listed. */
  private matches(r: StreamRecord): boolean {
    const entities = this.opts.source?.entities;
    if (!entities) return true;
    const entity = (r.dynamodb?.NewImage as Record<string, { S?: string }> | undefined)?.entity?.S;
    return entity !== undefined && entities.includes(entity);
  }

  /** Hands records to the on-failure destination with a line an operator's alarm can match. */
  private async fail(
    shardId: string,
    records: StreamRecord[],
    condition: StreamFailure['requestContext']['condition'],
    attempts: number,
  ): Promise<void> {
    const first = records[0]?.dynamodb;
    const last = records.at(-1)?.dynamodb;
    const failure: StreamFailure = {
      requestContext: { condition, approximateInvokeCount: attempts },
      timestamp: new Date().toISOString(),
      DDBStreamBatchInfo: {
        shardId,
        startSequenceNumber: first?.SequenceNumber as string,
        endSequenceNumber: last?.SequenceNumber as string,
        approximateArrivalOfFirstRecord: first?.ApproximateCreationDateTime?.toISOString(),
        approximateArrivalOfLastRecord: last?.ApproximateCreationDateTime?.toISOString(),
        batchSize: records.length,
        streamArn: this.opts.streamArn,
      },
    };
    console.error(
      `[ALARM] stream: ${records.length} record(s) of shard ${shardId} (${failure.DDBStreamBatchInfo.startSequenceNumber}…${failure.DDBStreamBatchInfo.endSequenceNumber}) sent to the on-failure destination: ${condition}${attempts ? ` after ${attempts} attempts` : ''}`,
    );
    await this.opts.onFailure?.(failure);
  }

  /** The tumbling window's length, 0 without one. */
  private windowMs(): number {
    return (this.opts.source?.windowSeconds ?? 0) * 1000;
  }

  /** The start (epoch ms) of the window a record belongs to, by its creation time. */
  private windowOf(r: StreamRecord): number {
    const w = this.windowMs();
    const at = r.dynamodb?.ApproximateCreationDateTime?.getTime() ?? Date.now();
    return w ? Math.floor(at / w) * w : 0;
  }

  /** The window's final invocation; true once it succeeded (the window is then closed). */
  private async closeWindow(shardId: string, st: ShardState): Promise<boolean> {
    const failed = await this.deliver([], shardId, st, true);
    if (failed) {
      this.backoffMs = Math.max(this.backoffMs, 1_000);
      return false;
    }
    st.window = undefined;
    return true;
  }

  /** Undefined when the handler took every record; else the first reported one, or its error. */
  private async deliver(
    records: StreamRecord[],
    shardId: string,
    st: ShardState,
    final = false,
  ): Promise<{ kind: 'item'; seq: string } | { kind: 'error' } | undefined> {
    const w = this.windowMs();
    const open = st.window;
    const windowed: Partial<WindowedStreamEvent> =
      w && open
        ? {
            shardId,
            eventSourceARN: this.opts.streamArn,
            window: {
              start: new Date(open.start).toISOString(),
              end: new Date(open.start + w).toISOString(),
            },
            state: open.state,
            isFinalInvokeForWindow: final,
            isWindowTerminatedEarly: false,
          }
        : {};
    const event: WindowedStreamEvent = {
      ...windowed,
      Records: lambdaRecords(records, this.opts.streamArn),
    };
    try {
      const result = await this.opts.handler(event, this.opts.context());
      if (open) {
        const state = result?.state;
        if (state === null || typeof state !== 'object' || Array.isArray(state))
          throw new Error('a windowed stream invocation must answer a state object');
        // The state goes on only with a batch that succeeded (a failed one is retried with the old).
        if (!result?.batchItemFailures?.length) open.state = state as Record<string, unknown>;
      }
      const failures = result?.batchItemFailures ?? [];
      if (!failures.length) return undefined;
      const ids = new Set(failures.map((f) => f.itemIdentifier));
      const first = records.find((r) => ids.has(r.dynamodb?.SequenceNumber as string));
      return { kind: 'item', seq: (first ?? records[0])?.dynamodb?.SequenceNumber as string };
    } catch (err) {
      this.opts.onError?.(err);
      return { kind: 'error' };
    }
  }

  /**
   * Writes the checkpoints durably (two syncs, on the event loop the API's requests share). After
   * a read whose records the filter dropped, all of them, at most once a second: every request's
   * gate write is such a record, so that was a write per read; a crash re-reads at most a second
   * of them, and drops them again.
   */
  private save(): void {
    const lazy = this.onlyDropped;
    this.onlyDropped = false;
    if (lazy && Date.now() - this.savedAt < DROPPED_SAVE_MS) return;
    writeFileDurably(this.opts.checkpointFile, JSON.stringify(this.state));
    this.savedAt = Date.now();
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
      const wait = this.backoffMs || (handled ? 0 : idle);
      if (wait) await new Promise((r) => setTimeout(r, wait));
    }
  }
}

/**
 * The checkpoints of an earlier run. One that cannot be read (damaged on disk, or torn by a power
 * cut under a Herald that wrote it without syncing) is not fatal: every shard is read again from
 * the oldest record the stream retains (TRIM_HORIZON, 24 hours). That hands records handled before
 * to the relay again, which is safe for the reason a retried batch is: the relay derives every
 * message, event id, counter marker and execution name from the change itself.
 */
function readCheckpoints(file: string, log: (line: string) => void): Record<string, ShardState> {
  if (!existsSync(file)) return {};
  try {
    const state = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    if (state && typeof state === 'object' && !Array.isArray(state))
      return state as Record<string, ShardState>;
    throw new Error('not an object of shards');
  } catch (err) {
    log(
      `[WARN] stream: ${file} is unreadable (${(err as Error).message}); reading the table stream again from the oldest record it retains. Records handled before are relayed again, which repeats no work (ids derive from each change).`,
    );
    return {};
  }
}

/**
 * Stream records as GetRecords answers them, in the shape Lambda's event source mapping hands them
 * to a function (also `herald stream replay`, bin/cli/stream-replay.ts).
 */
export function lambdaRecords(
  records: readonly StreamRecord[],
  streamArn: string,
): DynamoDBStreamEvent['Records'] {
  return records.map((r) => ({
    eventID: r.eventID,
    eventName: r.eventName,
    eventVersion: r.eventVersion,
    eventSource: 'aws:dynamodb',
    awsRegion: r.awsRegion,
    eventSourceARN: streamArn,
    dynamodb: {
      ...(r.dynamodb as object),
      NewImage: restoreEmptyMaps(r.dynamodb?.NewImage),
      OldImage: restoreEmptyMaps(r.dynamodb?.OldImage),
      ApproximateCreationDateTime: r.dynamodb?.ApproximateCreationDateTime
        ? Math.floor(r.dynamodb.ApproximateCreationDateTime.getTime() / 1000)
        : undefined,
    } as never,
  }));
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
