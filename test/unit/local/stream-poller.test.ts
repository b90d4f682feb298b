import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  type GetRecordsCommandInput,
  GetShardIteratorCommand,
  type GetShardIteratorCommandInput,
  type Shard,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type StreamFailure,
  StreamPoller,
  type WindowedStreamEvent,
} from '../../../bin/local/stream-poller.ts';
import { lambdaContext } from '../support/fixtures.ts';

const streams = mockClient(DynamoDBStreamsClient);
const client = new DynamoDBStreamsClient({ region: 'us-east-1' });

const STREAM_ARN = 'arn:aws:dynamodb:us-east-1:000000000000:table/herald-test/stream/2030-01-01T00:00:00.000';
const seqOf = (n: number) => String(n).padStart(21, '0');

function record(n: number): StreamRecord {
  return {
    eventID: `ev-${n}`,
    eventName: 'MODIFY',
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'us-east-1',
    dynamodb: {
      Keys: { pk: { S: `ORG#o${n}` }, sk: { S: 'POST#p' } },
      SequenceNumber: seqOf(n),
      SizeBytes: 10,
      StreamViewType: 'NEW_AND_OLD_IMAGES',
      ApproximateCreationDateTime: new Date('2030-01-01T00:00:00Z'),
    },
  };
}

/**
 * A stream whose shards hold `records` (by shard id). Iterators are `<shard>@<index>`; a shard in
 * `closed` ends (no NextShardIterator) once read to its end.
 */
function fakeStream(shards: Shard[], records: Record<string, StreamRecord[]>, closed: string[] = []) {
  streams
    .on(DescribeStreamCommand)
    .resolves({ StreamDescription: { StreamArn: STREAM_ARN, Shards: shards } });
  streams.on(GetShardIteratorCommand).callsFake((input: GetShardIteratorCommandInput) => {
    const list = records[input.ShardId ?? ''] ?? [];
    const index =
      input.ShardIteratorType === 'AFTER_SEQUENCE_NUMBER'
        ? list.findIndex((r) => r.dynamodb?.SequenceNumber === input.SequenceNumber) + 1
        : 0;
    return { ShardIterator: `${input.ShardId}@${index}` };
  });
  streams.on(GetRecordsCommand).callsFake((input: GetRecordsCommandInput) => {
    const [shard = '', at = '0'] = (input.ShardIterator ?? '').split('@');
    const list = records[shard] ?? [];
    const from = Number(at);
    const batch = list.slice(from, from + (input.Limit ?? 100));
    const next = from + batch.length;
    const ended = closed.includes(shard) && next >= list.length;
    return { Records: batch, ...(ended ? {} : { NextShardIterator: `${shard}@${next}` }) };
  });
}

/** A handler that records what it saw and reports the sequence numbers in `failOnce` as failed once. */
function recordingHandler(failOnce: string[] = []) {
  const seen: string[][] = [];
  const pending = new Set(failOnce);
  const handler = async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
    const seqs = event.Records.map((r) => r.dynamodb?.SequenceNumber ?? '');
    seen.push(seqs);
    const failed = seqs.filter((s) => pending.delete(s));
    return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
  };
  return { handler, seen };
}

let dir: string;
let checkpointFile: string;

const poller = (
  handler: ReturnType<typeof recordingHandler>['handler'],
  errors: unknown[] = [],
  more: Partial<ConstructorParameters<typeof StreamPoller>[0]> = {},
) =>
  new StreamPoller({
    client,
    streamArn: STREAM_ARN,
    handler,
    context: () => lambdaContext('streamRelay'),
    checkpointFile,
    onError: (err) => errors.push(err),
    ...more,
  });

const checkpoint = () =>
  JSON.parse(readFileSync(checkpointFile, 'utf8')) as Record<string, { after?: string; closed?: boolean }>;

beforeEach(() => {
  streams.reset();
  dir = mkdtempSync(join(tmpdir(), 'herald-poller-'));
  checkpointFile = join(dir, 'stream-checkpoints.json');
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('StreamPoller', () => {
  it('delivers the records of a shard in order, as one Lambda-shaped event', async () => {
    // Arrange
    fakeStream([{ ShardId: 's1' }], { s1: [record(1), record(2), record(3)] });
    const { handler, seen } = recordingHandler();
    const events: DynamoDBStreamEvent[] = [];

    // Act
    const handled = await poller(async (e) => {
      events.push(e);
      return handler(e);
    }).pollOnce();

    // Assert
    expect(handled).toBe(3);
    expect(seen).toEqual([[seqOf(1), seqOf(2), seqOf(3)]]);
    expect(events[0]?.Records[0]).toMatchObject({
      eventSource: 'aws:dynamodb',
      eventSourceARN: STREAM_ARN,
      dynamodb: { ApproximateCreationDateTime: Date.parse('2030-01-01T00:00:00Z') / 1000 },
    });
  });

  it('does not advance past a reported failure and re-delivers from it on the next pass', async () => {
    // Arrange
    fakeStream([{ ShardId: 's1' }], { s1: [record(1), record(2), record(3)] });
    const { handler, seen } = recordingHandler([seqOf(2)]);
    const p = poller(handler);

    // Act
    const first = await p.pollOnce();
    const afterFailure = checkpoint();
    const second = await p.pollOnce();

    // Assert
    expect(first).toBe(1);
    expect(afterFailure).toEqual({ s1: { after: seqOf(1) } });
    expect(seen).toEqual([
      [seqOf(1), seqOf(2), seqOf(3)],
      [seqOf(2), seqOf(3)],
    ]);
    expect(second).toBe(2);
    expect(checkpoint()).toEqual({ s1: { after: seqOf(3) } });
    expect(streams.commandCalls(GetShardIteratorCommand)[1]?.args[0].input).toMatchObject({
      ShardIteratorType: 'AFTER_SEQUENCE_NUMBER',
      SequenceNumber: seqOf(1),
    });
  });

  it('re-delivers the whole batch when the first record fails', async () => {
    fakeStream([{ ShardId: 's1' }], { s1: [record(1), record(2)] });
    const { handler, seen } = recordingHandler([seqOf(1)]);
    const p = poller(handler);
    expect(await p.pollOnce()).toBe(0);
    await p.pollOnce();
    expect(seen).toEqual([
      [seqOf(1), seqOf(2)],
      [seqOf(1), seqOf(2)],
    ]);
  });

  it('treats a handler that throws as a failure of the whole batch and reports the error', async () => {
    // Arrange
    fakeStream([{ ShardId: 's1' }], { s1: [record(1)] });
    const errors: unknown[] = [];
    let calls = 0;
    const p = poller(async () => {
      calls += 1;
      if (calls === 1) throw new Error('relay down');
      return { batchItemFailures: [] };
    }, errors);

    // Act
    await p.pollOnce();
    await p.pollOnce();

    // Assert
    expect(calls).toBe(2);
    expect(errors).toEqual([expect.objectContaining({ message: 'relay down' })]);
    expect(checkpoint()).toEqual({ s1: { after: seqOf(1) } });
  });

  it('persists checkpoints so a restarted poller resumes after the last handled record', async () => {
    // Arrange: a first poller handles records 1–2, then the stream grows.
    const records = { s1: [record(1), record(2)] };
    fakeStream([{ ShardId: 's1' }], records);
    await poller(recordingHandler().handler).pollOnce();
    records.s1.push(record(3));

    // Act: a new poller (a restart) with the same checkpoint file.
    const { handler, seen } = recordingHandler();
    await poller(handler).pollOnce();

    // Assert
    expect(seen).toEqual([[seqOf(3)]]);
    expect(checkpoint()).toEqual({ s1: { after: seqOf(3) } });
  });

  it('reads a checkpoint file written earlier', async () => {
    writeFileSync(checkpointFile, JSON.stringify({ s1: { after: seqOf(2) } }));
    fakeStream([{ ShardId: 's1' }], { s1: [record(1), record(2), record(3)] });
    const { handler, seen } = recordingHandler();
    await poller(handler).pollOnce();
    expect(seen).toEqual([[seqOf(3)]]);
  });

  it.each([
    ['torn (a power cut mid-write)', '{"s1":{"after":"0000000'],
    ['empty', ''],
    ['not an object of shards', '[1,2]'],
  ])(
    'falls back to the oldest retained record, with a warning, on a checkpoint file that is %s',
    async (_, text) => {
      // Arrange
      writeFileSync(checkpointFile, text);
      fakeStream([{ ShardId: 's1' }], { s1: [record(1), record(2), record(3)] });
      const { handler, seen } = recordingHandler();
      const logged: string[] = [];

      // Act
      const p = poller(handler, [], { log: (line) => logged.push(line) });
      await p.pollOnce();

      // Assert: read again from the start (safe: the relay derives its ids from each change).
      expect(seen).toEqual([[seqOf(1), seqOf(2), seqOf(3)]]);
      expect(logged).toEqual([
        expect.stringMatching(/stream-checkpoints\.json is unreadable.*oldest record/),
      ]);
      expect(checkpoint()).toEqual({ s1: { after: seqOf(3) } });
    },
  );

  it('marks a shard without NextShardIterator closed and does not read it again', async () => {
    // Arrange
    fakeStream([{ ShardId: 's1' }], { s1: [record(1)] }, ['s1']);
    const p = poller(recordingHandler().handler);

    // Act
    await p.pollOnce();
    const readsAfterFirst = streams.commandCalls(GetRecordsCommand).length;
    await p.pollOnce();

    // Assert
    expect(checkpoint()).toEqual({ s1: { after: seqOf(1), closed: true } });
    expect(readsAfterFirst).toBe(1);
    expect(streams.commandCalls(GetRecordsCommand)).toHaveLength(1);
  });

  it('keeps a closed shard open while its last batch has a failure', async () => {
    fakeStream([{ ShardId: 's1' }], { s1: [record(1), record(2)] }, ['s1']);
    const { handler, seen } = recordingHandler([seqOf(2)]);
    const p = poller(handler);
    await p.pollOnce();
    expect(checkpoint().s1?.closed).toBeUndefined();
    await p.pollOnce();
    expect(seen.at(-1)).toEqual([seqOf(2)]);
    expect(checkpoint()).toEqual({ s1: { after: seqOf(2), closed: true } });
  });

  it.each([
    ['listed after its parent', [{ ShardId: 'parent' }, { ShardId: 'child', ParentShardId: 'parent' }]],
    ['listed before its parent', [{ ShardId: 'child', ParentShardId: 'parent' }, { ShardId: 'parent' }]],
  ])('reads a child shard %s only once the parent is closed', async (_order, shards: Shard[]) => {
    // Arrange: the parent holds records 1–2 and closes; the child holds 3.
    fakeStream(shards, { parent: [record(1), record(2)], child: [record(3)] }, ['parent']);
    const { handler, seen } = recordingHandler();
    const p = poller(handler);

    // Act
    await p.pollOnce();
    await p.pollOnce();

    // Assert
    expect(seen.flat()).toEqual([seqOf(1), seqOf(2), seqOf(3)]);
  });
});

describe('StreamPoller: the work of a pass', () => {
  it('lists the shards once a second rather than on every pass, and at once after a shard ended', async () => {
    // Arrange: the parent closes in the first pass; its child is listed only after that.
    const shards: Shard[] = [{ ShardId: 'parent' }];
    const records: Record<string, StreamRecord[]> = { parent: [record(1)], child: [record(2)] };
    fakeStream(shards, records, ['parent']);
    const { handler, seen } = recordingHandler();
    const p = poller(handler);
    const lists = () => streams.commandCalls(DescribeStreamCommand).length;

    // Act + Assert: the first pass lists, the parent ends; the next pass lists again and finds the child.
    await p.pollOnce();
    expect(lists()).toBe(1);
    shards.push({ ShardId: 'child', ParentShardId: 'parent' });
    await p.pollOnce();
    expect(lists()).toBe(2);
    expect(seen.flat()).toEqual([seqOf(1), seqOf(2)]);
    // Passes within the second reuse the list.
    await p.pollOnce();
    await p.pollOnce();
    expect(lists()).toBe(2);
  });
});

describe('StreamPoller with the stack’s mapping settings', () => {
  const SOURCE = {
    entities: ['post', 'channel'],
    batchSize: 100,
    retryAttempts: 2,
    maxRecordAgeSeconds: 86_400,
  };
  const entityRecord = (n: number, entity: string | null, at = new Date()): StreamRecord => {
    const r = record(n);
    return {
      ...r,
      dynamodb: {
        ...r.dynamodb,
        ApproximateCreationDateTime: at,
        ...(entity === null ? {} : { NewImage: { entity: { S: entity } } }),
      },
    };
  };
  const withSource = (handler: ReturnType<typeof recordingHandler>['handler'], failures: StreamFailure[]) =>
    poller(handler, [], {
      source: SOURCE,
      onFailure: async (f) => {
        failures.push(f);
      },
      onError: () => undefined,
    });

  it('hands the handler only the entities the filter lists (deletes have no new image) and moves past the rest', async () => {
    fakeStream([{ ShardId: 's1' }], {
      s1: [
        entityRecord(1, 'post'),
        entityRecord(2, 'usage'),
        entityRecord(3, null),
        entityRecord(4, 'channel'),
        entityRecord(5, 'usage'),
      ],
    });
    const { handler, seen } = recordingHandler();

    await withSource(handler, []).pollOnce();

    expect(seen).toEqual([[seqOf(1), seqOf(4)]]);
    expect(checkpoint()).toEqual({ s1: { after: seqOf(5) } });
  });

  it('bisects a batch that throws down to the poison record, retries it, then sends it to the on-failure destination and goes on', async () => {
    // Arrange: record 3 makes the handler throw whenever it is in the batch.
    fakeStream([{ ShardId: 's1' }], { s1: [1, 2, 3, 4].map((n) => entityRecord(n, 'post')) });
    const seen: string[][] = [];
    const failures: StreamFailure[] = [];
    const lines: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((line: string) => {
      lines.push(line);
    });
    const p = withSource(async (event) => {
      const seqs = event.Records.map((r) => r.dynamodb?.SequenceNumber ?? '');
      seen.push(seqs);
      if (seqs.includes(seqOf(3))) throw new Error('poison');
      return { batchItemFailures: [] };
    }, failures);

    // Act
    for (let i = 0; i < 10; i++) await p.pollOnce();
    spy.mockRestore();

    // Assert
    expect(seen).toEqual([
      [seqOf(1), seqOf(2), seqOf(3), seqOf(4)],
      [seqOf(1), seqOf(2)],
      [seqOf(3), seqOf(4)],
      [seqOf(3)],
      [seqOf(3)],
      [seqOf(3)],
      [seqOf(4)],
    ]);
    expect(failures).toEqual([
      expect.objectContaining({
        requestContext: { condition: 'RetryAttemptsExhausted', approximateInvokeCount: 3 },
        DDBStreamBatchInfo: expect.objectContaining({
          shardId: 's1',
          startSequenceNumber: seqOf(3),
          endSequenceNumber: seqOf(3),
          batchSize: 1,
          streamArn: STREAM_ARN,
        }),
      }),
    ]);
    expect(lines.filter((l) => l.startsWith('[ALARM]'))).toHaveLength(1);
    expect(checkpoint()).toEqual({ s1: { after: seqOf(4) } });
  });

  it('sends records older than the maximum age to the on-failure destination without handing them over', async () => {
    const old = new Date(Date.now() - 2 * 86_400_000);
    fakeStream([{ ShardId: 's1' }], { s1: [entityRecord(1, 'post', old), entityRecord(2, 'post')] });
    const { handler, seen } = recordingHandler();
    const failures: StreamFailure[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation(() => undefined);

    await withSource(handler, failures).pollOnce();
    spy.mockRestore();

    expect(seen).toEqual([[seqOf(2)]]);
    expect(
      failures.map((f) => [f.requestContext.condition, f.DDBStreamBatchInfo.startSequenceNumber]),
    ).toEqual([['RecordAgeExceeded', seqOf(1)]]);
  });

  it('writes a position past records the filter dropped at most once a second, and on stop; a delivered batch at once', async () => {
    // Arrange: gate-item changes (no listed entity) keep coming, as under API load.
    const s1 = [entityRecord(1, 'usage')];
    fakeStream([{ ShardId: 's1' }], { s1 });
    const { handler, seen } = recordingHandler();
    const p = withSource(handler, []);

    // Act + Assert: the first read is written; the next ones, within the second, only in memory.
    await p.pollOnce();
    expect(checkpoint()).toEqual({ s1: { after: seqOf(1) } });
    s1.push(entityRecord(2, 'usage'));
    await p.pollOnce();
    s1.push(entityRecord(3, 'usage'));
    await p.pollOnce();
    expect(checkpoint()).toEqual({ s1: { after: seqOf(1) } });
    // A record the relay takes is delivered, and its checkpoint written before the next read.
    s1.push(entityRecord(4, 'post'));
    await p.pollOnce();
    expect(seen).toEqual([[seqOf(4)]]);
    expect(checkpoint()).toEqual({ s1: { after: seqOf(4) } });
    // Dropped again, then a stop: the stop writes where the poller got to.
    s1.push(entityRecord(5, 'usage'));
    p.start();
    await p.stop();
    expect(checkpoint()).toEqual({ s1: { after: seqOf(5) } });
  });
});

describe('StreamPoller with a tumbling window (as Lambda runs a windowed mapping)', () => {
  const SOURCE = {
    entities: ['post'],
    batchSize: 100,
    retryAttempts: 2,
    maxRecordAgeSeconds: 86_400,
    windowSeconds: 300,
  };
  const T = Date.parse('2030-01-01T00:00:00Z');
  const at = (n: number, ms: number): StreamRecord => {
    const r = record(n);
    return {
      ...r,
      dynamodb: {
        ...r.dynamodb,
        ApproximateCreationDateTime: new Date(ms),
        NewImage: { entity: { S: 'post' } },
      },
    };
  };
  /** A handler that records each event and answers a state counting the records seen in the window. */
  function windowHandler(answer?: (e: WindowedStreamEvent) => unknown) {
    const events: WindowedStreamEvent[] = [];
    const handler = async (e: WindowedStreamEvent) => {
      events.push(structuredClone(e));
      if (answer) return answer(e) as never;
      const seen = Number(e.state?.seen ?? 0) + e.Records.length;
      return { batchItemFailures: [], state: { seen } };
    };
    return { handler, events };
  }
  const windowed = (handler: (e: WindowedStreamEvent) => Promise<never>, errors: unknown[] = []) =>
    poller(handler, errors, { source: SOURCE });

  beforeEach(() => {
    vi.useFakeTimers({ now: T + 60_000, toFake: ['Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('names the shard and the window in every batch, hands back the state answered last, and cuts batches at the window', async () => {
    // Arrange: two records in the first 5-minute window, one in the next.
    fakeStream([{ ShardId: 's1' }], { s1: [at(1, T), at(2, T + 10_000), at(3, T + 300_000)] });
    const { handler, events } = windowHandler();
    const p = windowed(handler as never);

    // Act
    await p.pollOnce();
    await p.pollOnce();

    // Assert: the first window's batch, its final invocation (no records, the state so far), the
    // next window's batch starting from an empty state.
    expect(
      events.map((e) => [e.shardId, e.window?.start, e.Records.length, e.state, e.isFinalInvokeForWindow]),
    ).toEqual([
      ['s1', '2030-01-01T00:00:00.000Z', 2, {}, false],
      ['s1', '2030-01-01T00:00:00.000Z', 0, { seen: 2 }, true],
      ['s1', '2030-01-01T00:05:00.000Z', 1, {}, false],
    ]);
    expect(events[0]).toMatchObject({
      eventSourceARN: STREAM_ARN,
      window: { end: '2030-01-01T00:05:00.000Z' },
      isWindowTerminatedEarly: false,
    });
    expect(checkpoint().s1?.after).toBe(seqOf(3));
  });

  it('takes an answer without a state as a failed invocation: the batch comes again', async () => {
    // Arrange: the first answer forgets the state.
    fakeStream([{ ShardId: 's1' }], { s1: [at(1, T)] });
    let calls = 0;
    const errors: unknown[] = [];
    const { handler, events } = windowHandler(() =>
      ++calls === 1 ? { batchItemFailures: [] } : { batchItemFailures: [], state: {} },
    );
    const p = windowed(handler as never, errors);

    // Act
    await p.pollOnce();
    const after = checkpoint().s1?.after;
    await p.pollOnce();

    // Assert
    expect(after).toBeUndefined();
    expect(events.map((e) => e.Records.length)).toEqual([1, 1]);
    expect(errors).toEqual([expect.objectContaining({ message: expect.stringContaining('state') })]);
    expect(checkpoint().s1?.after).toBe(seqOf(1));
  });

  it('ends a window with its final invocation once its time is over, and when its shard ends', async () => {
    // Arrange: a quiet open shard, and a closed one.
    fakeStream([{ ShardId: 's1' }, { ShardId: 's2' }], { s1: [at(1, T)], s2: [at(2, T)] }, ['s2']);
    const { handler, events } = windowHandler();
    const p = windowed(handler as never);

    // Act
    await p.pollOnce(); // s1's batch; s2's batch, then s2 ends: its window's final invocation
    await p.pollOnce(); // s1 is quiet, its window still open
    vi.setSystemTime(T + 301_000);
    await p.pollOnce(); // s1's window is over

    // Assert
    expect(events.map((e) => [e.shardId, e.Records.length, e.isFinalInvokeForWindow])).toEqual([
      ['s1', 1, false],
      ['s2', 1, false],
      ['s2', 0, true],
      ['s1', 0, true],
    ]);
    expect(checkpoint().s2?.closed).toBe(true);
  });

  it('hands no shard id without a window (as Lambda does)', async () => {
    fakeStream([{ ShardId: 's1' }], { s1: [at(1, T)] });
    const { handler, events } = windowHandler();
    await poller(handler as never, [], { source: { ...SOURCE, windowSeconds: undefined } }).pollOnce();
    expect(events[0]?.shardId).toBeUndefined();
    expect(events[0]?.state).toBeUndefined();
  });
});
