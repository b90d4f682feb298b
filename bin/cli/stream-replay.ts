import {
  type DynamoDBStreamsClient,
  ExpiredIteratorException,
  GetRecordsCommand,
  GetShardIteratorCommand,
  ResourceNotFoundException,
  type _Record as StreamRecord,
  TrimmedDataAccessException,
} from '@aws-sdk/client-dynamodb-streams';
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import {
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { type StreamSource, workers } from '../../lib/operations.ts';
import { lambdaRecords } from '../local/stream-poller.ts';
import { batchInfoOf, EMPTY_WAIT_SECONDS, inStream, peek, type StreamBatchInfo } from './dlq.ts';
import type { OpsTarget } from './target.ts';

// `herald stream replay [--dry-run]`: the stream relay's on-failure queue holds, per failed batch,
// only its pointers (shard and sequence range). While the table stream still has those records
// (24 hours) they are read again and handed to the stream relay function, as the event source
// mapping would; a message is deleted only once every one of its records was relayed.

export const RUNBOOK = 'docs/operator/runbooks.md#stream-replay';

/** The stream mapping's settings (lib/operations.ts): the entity filter and the batch size. */
function relaySource(): StreamSource & { id: string } {
  const w = workers.find((x) => x.trigger.kind === 'stream');
  if (w?.trigger.kind !== 'stream') throw new Error('the manifest has no stream worker');
  return { ...w.trigger, id: w.id };
}

export interface ReplayedMessage {
  message_id: string;
  shard_id?: string;
  start_sequence?: string;
  end_sequence?: string;
  batch_size?: number;
  condition?: string;
  /**
   * replayed: relayed and deleted; would_replay: --dry-run; failed: the relay reported a record
   * (kept); lost: the records are no longer in the stream (kept unless --drop-lost); unreadable:
   * not an on-failure record (kept).
   */
  status: 'replayed' | 'would_replay' | 'failed' | 'lost' | 'dropped' | 'unreadable';
  /** Records of the range the mapping's filter lets through (what the relay is given). */
  records?: number;
  /** Records of the range the filter drops (the relay never sees them, as in the mapping). */
  filtered_out?: number;
  entities?: Record<string, number>;
  failed_sequence?: string;
  error?: string;
  lost?: string;
}

export interface ReplayResult {
  dry_run: boolean;
  function?: string;
  messages: ReplayedMessage[];
  replayed: number;
  kept: number;
}

/** The records are gone: a sentence an operator can act on. */
class GoneError extends Error {}

const seqOf = (r: StreamRecord) => BigInt(r.dynamodb?.SequenceNumber ?? '0');

/**
 * The records of the range [start, end] of one shard: GetShardIterator AT_SEQUENCE_NUMBER start,
 * then GetRecords until past end (or the shard's end). Throws GoneError when the stream no longer
 * has them (trimmed after 24 hours, or the shard itself is gone).
 */
export async function readRange(
  streams: DynamoDBStreamsClient,
  streamArn: string,
  info: StreamBatchInfo,
): Promise<StreamRecord[]> {
  const end = BigInt(info.endSequenceNumber);
  const out: StreamRecord[] = [];
  try {
    let iterator = (
      await streams.send(
        new GetShardIteratorCommand({
          StreamArn: streamArn,
          ShardId: info.shardId,
          ShardIteratorType: 'AT_SEQUENCE_NUMBER',
          SequenceNumber: info.startSequenceNumber,
        }),
      )
    ).ShardIterator;
    // An open shard answers empty pages now and then before its next records: a few are allowed.
    let empty = 0;
    while (iterator && empty < 5) {
      const res = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
      const records = res.Records ?? [];
      empty = records.length ? 0 : empty + 1;
      for (const r of records) if (seqOf(r) <= end) out.push(r);
      if (records.some((r) => seqOf(r) >= end)) return out;
      iterator = res.NextShardIterator;
    }
  } catch (err) {
    if (
      err instanceof TrimmedDataAccessException ||
      err instanceof ExpiredIteratorException ||
      err instanceof ResourceNotFoundException
    )
      throw new GoneError(`${err.name}: ${err.message}`);
    throw err;
  }
  if (!out.length)
    throw new GoneError(`the shard has no records from ${info.startSequenceNumber} on any more`);
  return out;
}

const entityOf = (r: StreamRecord) =>
  (r.dynamodb?.NewImage as Record<string, { S?: string }> | undefined)?.entity?.S;

export interface ReplayClients {
  sqs: SQSClient;
  streams: DynamoDBStreamsClient;
  lambda: LambdaClient;
}

/** How long a message being replayed stays hidden (s): longer than the relay's invocations. */
const REPLAY_VISIBILITY_SECONDS = 300;

export async function replayStream(
  clients: ReplayClients,
  ops: OpsTarget,
  opts: { dryRun: boolean; dropLost?: boolean; now?: number },
): Promise<ReplayResult> {
  const url = ops.streamDlqUrl;
  if (!url)
    throw new Error(
      'the target does not name the stream DLQ (no StreamRelayDlqUrl output): deploy this version',
    );
  const streamArn = ops.tableStreamArn;
  if (!streamArn)
    throw new Error(
      'the target does not name the table stream (no TableStreamArn output): deploy this version',
    );
  const fn = ops.streamRelayFunction;
  if (!fn && !opts.dryRun)
    throw new Error(
      'the target does not name the stream relay function (no StreamRelayFunctionName output of the workers stack): deploy this version',
    );
  const source = relaySource();
  const messages = opts.dryRun ? await peek(clients.sqs, url, 1000) : await receiveAll(clients.sqs, url);
  const results: ReplayedMessage[] = [];
  for (const m of messages)
    results.push(await replayOne(clients, m, { url, streamArn, fn, source, ...opts }));
  return {
    dry_run: opts.dryRun,
    ...(fn ? { function: fn } : {}),
    messages: results,
    replayed: results.filter((r) => r.status === 'replayed').length,
    kept: results.filter(
      (r) => r.status !== 'replayed' && r.status !== 'dropped' && r.status !== 'would_replay',
    ).length,
  };
}

/** Every message, each hidden while it is replayed (they come back if this process dies). */
async function receiveAll(sqs: SQSClient, url: string): Promise<Message[]> {
  const out: Message[] = [];
  for (;;) {
    const res = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: REPLAY_VISIBILITY_SECONDS,
        WaitTimeSeconds: EMPTY_WAIT_SECONDS,
      }),
    );
    if (!res.Messages?.length) return out;
    out.push(...res.Messages);
  }
}

async function replayOne(
  { sqs, streams, lambda }: ReplayClients,
  m: Message,
  opts: {
    url: string;
    streamArn: string;
    fn: string | undefined;
    source: StreamSource & { id: string };
    dryRun: boolean;
    dropLost?: boolean;
    now?: number;
  },
): Promise<ReplayedMessage> {
  const id = m.MessageId as string;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(m.Body ?? '') as Record<string, unknown>;
  } catch {
    return { message_id: id, status: 'unreadable', error: 'the body is not JSON' };
  }
  const info = batchInfoOf(body);
  if (!info)
    return {
      message_id: id,
      status: 'unreadable',
      error: 'not a stream on-failure record (no DDBStreamBatchInfo)',
    };
  const condition = (body.requestContext as { condition?: string } | undefined)?.condition;
  const head: ReplayedMessage = {
    message_id: id,
    shard_id: info.shardId,
    start_sequence: info.startSequenceNumber,
    end_sequence: info.endSequenceNumber,
    ...(typeof info.batchSize === 'number' ? { batch_size: info.batchSize } : {}),
    ...(condition ? { condition } : {}),
    status: 'failed',
  };
  const lost = async (why: string): Promise<ReplayedMessage> => {
    const drop = Boolean(opts.dropLost) && !opts.dryRun;
    if (drop)
      await sqs.send(new DeleteMessageCommand({ QueueUrl: opts.url, ReceiptHandle: m.ReceiptHandle }));
    return {
      ...head,
      status: drop ? 'dropped' : 'lost',
      lost: `the records ${info.startSequenceNumber}…${info.endSequenceNumber} of shard ${info.shardId} are no longer in the table stream (${why}); the events, failure-ladder starts and analytics counts of those changes are lost: see ${RUNBOOK}${drop ? '' : '. The message stays in the DLQ (--drop-lost deletes such messages)'}`,
    };
  };
  if (inStream(info, opts.now) === 'no') return lost('the first record is older than the 24-hour retention');
  let records: StreamRecord[];
  try {
    records = await readRange(streams, info.streamArn ?? opts.streamArn, info);
  } catch (err) {
    if (err instanceof GoneError) return lost(err.message);
    throw err;
  }
  const kept = records.filter((r) => {
    const e = entityOf(r);
    return e !== undefined && opts.source.entities.includes(e);
  });
  const entities: Record<string, number> = {};
  for (const r of kept) entities[entityOf(r) as string] = (entities[entityOf(r) as string] ?? 0) + 1;
  const counted = { ...head, records: kept.length, filtered_out: records.length - kept.length, entities };
  if (opts.dryRun) return { ...counted, status: 'would_replay' };

  // The mapping's batches (at most batchSize records, one shard); the first failure stops the rest.
  for (let i = 0; i < kept.length; i += opts.source.batchSize) {
    const batch = kept.slice(i, i + opts.source.batchSize);
    const failure = await invokeRelay(
      lambda,
      opts.fn as string,
      batch,
      info.shardId,
      info.streamArn ?? opts.streamArn,
    );
    if (failure) return { ...counted, status: 'failed', ...failure };
  }
  await sqs.send(new DeleteMessageCommand({ QueueUrl: opts.url, ReceiptHandle: m.ReceiptHandle }));
  return { ...counted, status: 'replayed' };
}

/**
 * One invocation, with the event the windowed mapping sends: the records, and the shard's id, which
 * the analytics counters' marks key on, so a record counted before is not counted again.
 */
async function invokeRelay(
  lambda: LambdaClient,
  fn: string,
  records: StreamRecord[],
  shardId: string,
  streamArn: string,
): Promise<{ failed_sequence?: string; error: string } | undefined> {
  const window = relaySource().windowSeconds ?? 0;
  const start = window ? Math.floor(Date.now() / (window * 1000)) * window * 1000 : Date.now();
  const event = {
    Records: lambdaRecords(records, streamArn),
    shardId,
    eventSourceARN: streamArn,
    window: { start: new Date(start).toISOString(), end: new Date(start + window * 1000).toISOString() },
    state: {},
    isFinalInvokeForWindow: false,
    isWindowTerminatedEarly: false,
  };
  const res = await lambda.send(
    new InvokeCommand({
      FunctionName: fn,
      InvocationType: 'RequestResponse',
      Payload: new TextEncoder().encode(JSON.stringify(event)),
    }),
  );
  const text = res.Payload ? new TextDecoder().decode(res.Payload) : '';
  if (res.FunctionError) {
    let message = text;
    try {
      message = (JSON.parse(text) as { errorMessage?: string }).errorMessage ?? text;
    } catch {}
    return {
      failed_sequence: records[0]?.dynamodb?.SequenceNumber as string,
      error: `the relay failed: ${message}`,
    };
  }
  const answer = (text ? JSON.parse(text) : {}) as { batchItemFailures?: Array<{ itemIdentifier?: string }> };
  const first = answer.batchItemFailures?.[0]?.itemIdentifier;
  if (first)
    return {
      failed_sequence: first,
      error: `the relay could not handle the record ${first} (its log says why)`,
    };
  return undefined;
}
