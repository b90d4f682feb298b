import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import { workers } from '../../lib/operations.ts';
import { dlqNames, STREAM_DLQ } from './dlq-names.ts';
import type { OpsTarget } from './target.ts';

// `herald dlq list|show|redrive`: every dead-letter queue of the stack, what is in it, and the way
// back to the queue its messages came from. `stream` is the stream relay's on-failure queue: its
// messages point at table stream records (`herald stream replay`, stream-replay.ts).

/**
 * A receive waits this long (long polling) before answering empty: a short poll samples only some
 * of SQS's servers and may answer empty while messages wait, and the commands stop at an empty one.
 */
export const EMPTY_WAIT_SECONDS = 1;

/** What an operator needs to know about one DLQ: who reads it, and what a redrive does. */
interface About {
  consumer: string;
  redrive: string;
  /** Why `redrive` refuses this queue; undefined when it moves messages back. */
  refused?: string;
}

const consumerOf = (queue: string) =>
  workers.find((w) => w.trigger.kind === 'queue' && w.trigger.queue === queue && !w.trigger.dlq)?.id;

/**
 * Why each queue's messages are safe to send back (each consumer is idempotent for its own reason,
 * read in its use case). A queue added to the manifest later gets the general answer.
 */
const ABOUT: Record<string, About> = {
  delivery: {
    consumer:
      'deliveryDeadLetters: marks each delivery failed (category system), so its post ends failed and delivery.failed is sent; a message stays here only while that function fails on it',
    redrive:
      'refused: these deliveries used up their receives, and the consumer of this DLQ records them as failed once its own error (see its log) is fixed; to publish a failed post again, use publishPost',
    refused:
      'the delivery DLQ has a consumer (deliveryDeadLetters) that marks each delivery failed; its messages drain once that function stops failing (its log says why). A failed post is published again with the API (POST /v1/posts/{id}/publish), which starts a new round',
  },
  schedule: {
    consumer: 'none (dispatches that scheduleDispatcher failed on 5 times)',
    redrive:
      "back to the schedule queue: the dispatcher acts only on a post still scheduled for the message's scheduled_at, with conditional writes, so a late or repeated dispatch of a post rescheduled, deleted or already started does nothing",
  },
  events: {
    consumer: 'none (events webhookFanout failed on 5 times)',
    redrive:
      'back to the events queue: webhookFanout fans each event out again; the job ids derive from the event id, and the webhook-id a receiver sees is the event id, so an endpoint that already had the event gets the same one',
  },
  webhooks: {
    consumer: 'none (webhook attempts webhookDelivery failed on 5 times)',
    redrive:
      'back to the webhooks queue: webhookDelivery claims each attempt before sending and records its outcome, so a repeated or late attempt finds it claimed or recorded and stops; one whose due time passed is sent now',
  },
  channelSync: {
    consumer: 'none (due channel-sync entries channelSyncWorker failed on 5 times)',
    redrive:
      'back to the channelSync queue, harmless and rarely needed: the entry stays in the channel-sync index and the finder sends it again; the worker reads the channel again',
  },
  unpublish: {
    consumer: 'none (removals unpublishWorker failed on 5 times; their deliveries stay removing)',
    redrive:
      "back to the unpublish queue: the worker acts only on a delivery still removing at the message's attempt, and a platform's delete of something already gone counts as removed, so a repeated removal deletes nothing twice",
  },
  [STREAM_DLQ]: {
    consumer:
      "none: the stream relay's on-failure destination; each message points at a range of table stream records (shard and sequence numbers), not at a message of any queue",
    redrive: 'refused: use `herald stream replay`',
    refused:
      'the stream DLQ holds pointers to table stream records, not messages for a queue: replay them with `herald stream replay` (while the records are in the stream, 24 hours)',
  },
};

function aboutOf(queue: string): About {
  const known = ABOUT[queue];
  if (known) return known;
  const consumer = consumerOf(queue);
  return {
    consumer: `none (messages ${consumer ?? 'its consumer'} failed on)`,
    redrive: `back to the ${queue} queue, where ${consumer ?? 'its consumer'} takes them again (see its use case for why a repeat is safe)`,
  };
}

/** Why `dlq redrive` refuses this queue, as the CLI says it; undefined when it does not. */
export function redriveRefusal(queue: string): string | undefined {
  const refused = aboutOf(queue).refused;
  return refused ? `dlq redrive --queue ${queue} is refused: ${refused}` : undefined;
}

function dlqUrlOf(ops: OpsTarget, queue: string): string {
  const url = queue === STREAM_DLQ ? ops.streamDlqUrl : ops.dlqs[queue]?.dlqUrl;
  if (!url)
    throw new Error(
      `the target does not name the ${queue} DLQ (a stack deployed by an older Herald has no ${queue === STREAM_DLQ ? 'StreamRelayDlqUrl' : `${queue.charAt(0).toUpperCase()}${queue.slice(1)}DlqUrl`} output): deploy this version`,
    );
  return url;
}

export interface DlqDepth {
  queue: string;
  url: string;
  /** Waiting, and received but not yet deleted or returned (in flight). */
  visible: number;
  in_flight: number;
  depth: number;
  consumer: string;
  redrive: string;
}

async function depthOf(sqs: SQSClient, url: string) {
  const res = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  const visible = Number(res.Attributes?.ApproximateNumberOfMessages ?? 0);
  const inFlight = Number(res.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
  return { visible, in_flight: inFlight, depth: visible + inFlight };
}

/** `herald dlq list`: every DLQ with its depth (SQS's approximate counts). */
export async function listDlqs(sqs: SQSClient, ops: OpsTarget): Promise<{ dlqs: DlqDepth[] }> {
  const dlqs = await Promise.all(
    dlqNames().map(async (queue) => {
      const url = dlqUrlOf(ops, queue);
      const about = aboutOf(queue);
      return { queue, url, ...(await depthOf(sqs, url)), consumer: about.consumer, redrive: about.redrive };
    }),
  );
  return { dlqs };
}

/** What a message is about: ids and types only (never a post's text, a token or a secret). */
export type Summary = Record<string, string | number | boolean>;

const ID_FIELDS = [
  'org_id',
  'post_id',
  'channel_id',
  'endpoint_id',
  'round',
  'scheduled_at',
  'start',
  'due',
  'attempt',
  'due_at',
  'at',
] as const;

/** The summary of a queue message's body (see core/messages.ts for the shapes). */
export function summarize(queue: string, body: string): Summary {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { unreadable: 'the body is not JSON', bytes: Buffer.byteLength(body, 'utf8') };
  }
  if (typeof parsed !== 'object' || parsed === null) return { unreadable: 'the body is not a JSON object' };
  const o = parsed as Record<string, unknown>;
  if ('$queue_body' in o) {
    const ref = o.$queue_body as { bytes?: unknown };
    return {
      by_reference: true,
      ...(typeof ref?.bytes === 'number' ? { bytes: ref.bytes } : {}),
      note: 'sent by reference: the body is stored in the upload bucket (queue-bodies/), and the message holds only its key',
    };
  }
  if (queue === STREAM_DLQ) return streamSummary(o);
  const out: Summary = {};
  for (const f of ID_FIELDS) {
    const v = o[f];
    if (typeof v === 'string' || typeof v === 'number') out[f] = v;
  }
  // An event (events queue) names itself; a webhook job (webhooks queue) carries one.
  const event = (queue === 'webhooks' ? o.event : o) as Record<string, unknown> | undefined;
  if (event && typeof event.type === 'string') out.event_type = event.type;
  if (event && typeof event.id === 'string' && (queue === 'webhooks' || queue === 'events'))
    out.event_id = event.id;
  if (queue === 'channelSync' && typeof o.id === 'string') out.id = o.id;
  if (o.snapshot !== undefined) out.snapshot = true;
  return out;
}

/** The stream's retention: records older than this are gone (AWS trims them). */
export const STREAM_RETENTION_MS = 24 * 3600_000;

export interface StreamBatchInfo {
  shardId: string;
  startSequenceNumber: string;
  endSequenceNumber: string;
  approximateArrivalOfFirstRecord?: string;
  approximateArrivalOfLastRecord?: string;
  batchSize?: number;
  streamArn?: string;
}

/** The on-failure record's batch pointers; undefined when the body is not one. */
export function batchInfoOf(o: Record<string, unknown>): StreamBatchInfo | undefined {
  const info = o.DDBStreamBatchInfo as StreamBatchInfo | undefined;
  if (!info || typeof info.shardId !== 'string' || typeof info.startSequenceNumber !== 'string')
    return undefined;
  if (typeof info.endSequenceNumber !== 'string') return undefined;
  return info;
}

/** Whether the records are still in the stream, by the first one's arrival (24 h retention). */
export function inStream(info: StreamBatchInfo, now = Date.now()): 'yes' | 'no' | 'unknown' {
  const first = info.approximateArrivalOfFirstRecord ? Date.parse(info.approximateArrivalOfFirstRecord) : NaN;
  if (!Number.isFinite(first)) return 'unknown';
  return now - first < STREAM_RETENTION_MS ? 'yes' : 'no';
}

function streamSummary(o: Record<string, unknown>, now = Date.now()): Summary {
  const info = batchInfoOf(o);
  if (!info) return { unreadable: 'not a stream on-failure record (no DDBStreamBatchInfo)' };
  const condition = (o.requestContext as { condition?: unknown } | undefined)?.condition;
  const first = info.approximateArrivalOfFirstRecord;
  return {
    shard_id: info.shardId,
    start_sequence: info.startSequenceNumber,
    end_sequence: info.endSequenceNumber,
    ...(typeof info.batchSize === 'number' ? { batch_size: info.batchSize } : {}),
    ...(typeof condition === 'string' ? { condition } : {}),
    ...(first ? { first_record_at: first } : {}),
    in_stream: inStream(info, now),
    ...(first ? { in_stream_until: new Date(Date.parse(first) + STREAM_RETENTION_MS).toISOString() } : {}),
  };
}

export interface Peeked {
  message_id: string;
  sent_at: string | null;
  receive_count: number;
  about: Summary;
}

/**
 * Receives up to `limit` distinct messages with visibility 0: nothing is hidden or consumed, but
 * every receive counts (ApproximateReceiveCount goes up).
 */
export async function peek(sqs: SQSClient, url: string, limit: number): Promise<Message[]> {
  const seen = new Map<string, Message>();
  for (let round = 0; seen.size < limit && round < Math.ceil(limit / 10) + 3; round++) {
    const res = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: Math.min(10, limit - seen.size),
        VisibilityTimeout: 0,
        WaitTimeSeconds: EMPTY_WAIT_SECONDS,
        MessageSystemAttributeNames: ['SentTimestamp', 'ApproximateReceiveCount'],
        MessageAttributeNames: ['All'],
      }),
    );
    const fresh = (res.Messages ?? []).filter((m) => m.MessageId && !seen.has(m.MessageId));
    if (!fresh.length) break;
    for (const m of fresh) seen.set(m.MessageId as string, m);
  }
  return [...seen.values()].slice(0, limit);
}

/** `herald dlq show --queue Q [--limit N]`. */
export async function showDlq(sqs: SQSClient, ops: OpsTarget, queue: string, limit: number) {
  const url = dlqUrlOf(ops, queue);
  const messages = await peek(sqs, url, limit);
  const about = aboutOf(queue);
  return {
    queue,
    url,
    consumer: about.consumer,
    note: 'peeked with visibility timeout 0: nothing was consumed, but each message shown had its receive count raised by one',
    messages: messages.map(
      (m): Peeked => ({
        message_id: m.MessageId as string,
        sent_at: m.Attributes?.SentTimestamp
          ? new Date(Number(m.Attributes.SentTimestamp)).toISOString()
          : null,
        receive_count: Number(m.Attributes?.ApproximateReceiveCount ?? 0),
        about: summarize(queue, m.Body ?? ''),
      }),
    ),
  };
}

/** A refusal the CLI reports as bad usage (exit 2). */
export class RefusedError extends Error {
  readonly kind = 'refused';
}

export interface RedriveResult {
  queue: string;
  from: string;
  to: string;
  how: 'message-move-task' | 'receive-send-delete';
  why_safe: string;
  status: string;
  moved?: number;
  to_move?: number;
  task_handle?: string;
  failure_reason?: string;
}

/**
 * `herald dlq redrive --queue Q [--wait]`. On AWS, SQS's own redrive (StartMessageMoveTask from the
 * DLQ back to its source queue; `--wait` polls ListMessageMoveTasks). Locally fauxqs has no move
 * task, so the messages are moved by `moveMessages`.
 */
export async function redriveDlq(
  sqs: SQSClient,
  ops: OpsTarget,
  queue: string,
  opts: { native: boolean; wait: boolean; pollMs?: number },
): Promise<RedriveResult> {
  const about = aboutOf(queue);
  const refusal = redriveRefusal(queue);
  if (refusal) throw new RefusedError(refusal);
  const from = dlqUrlOf(ops, queue);
  const base = { queue, from, why_safe: about.redrive };
  if (opts.native) {
    const arn = (
      await sqs.send(new GetQueueAttributesCommand({ QueueUrl: from, AttributeNames: ['QueueArn'] }))
    ).Attributes?.QueueArn;
    if (!arn) throw new Error(`SQS did not answer the ARN of ${from}`);
    // Without a destination SQS moves each message back to the queue it was dead-lettered from.
    const started = await sqs.send(new StartMessageMoveTaskCommand({ SourceArn: arn }));
    const result: RedriveResult = {
      ...base,
      to: `the ${queue} queue (its source)`,
      how: 'message-move-task',
      status: 'RUNNING',
      ...(started.TaskHandle ? { task_handle: started.TaskHandle } : {}),
    };
    for (;;) {
      const list = await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: arn, MaxResults: 1 }));
      const task = list.Results?.[0];
      if (task) {
        result.status = task.Status ?? 'UNKNOWN';
        if (task.ApproximateNumberOfMessagesMoved !== undefined)
          result.moved = task.ApproximateNumberOfMessagesMoved;
        if (task.ApproximateNumberOfMessagesToMove !== undefined)
          result.to_move = task.ApproximateNumberOfMessagesToMove;
        if (task.FailureReason) result.failure_reason = task.FailureReason;
      }
      if (!opts.wait || result.status !== 'RUNNING') return result;
      await new Promise((r) => setTimeout(r, opts.pollMs ?? 2_000));
    }
  }
  const to = ops.dlqs[queue]?.queueUrl;
  if (!to) throw new Error(`the target does not name the ${queue} queue`);
  const moved = await moveMessages(sqs, from, to);
  return { ...base, to, how: 'receive-send-delete', status: 'COMPLETED', moved };
}

/** How long a message being moved stays hidden in the DLQ (s): ample for one send and delete. */
const MOVE_VISIBILITY_SECONDS = 60;

/**
 * Receive → send (the same body and message attributes) → delete, ten at a time: a message is
 * deleted from the DLQ only after SQS took its copy, so a crash midway sends at most one batch
 * twice and loses none (each queue's consumer is idempotent: see ABOUT). Stops at the depth the
 * DLQ had when it began (visible and in flight), so messages that fail again and come back are not chased forever.
 */
export async function moveMessages(sqs: SQSClient, from: string, to: string): Promise<number> {
  // In flight counts too: a message just peeked (visibility 0) may still be counted so.
  const { depth } = await depthOf(sqs, from);
  let moved = 0;
  while (moved < depth) {
    const res = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: from,
        MaxNumberOfMessages: Math.min(10, depth - moved),
        VisibilityTimeout: MOVE_VISIBILITY_SECONDS,
        WaitTimeSeconds: EMPTY_WAIT_SECONDS,
        MessageAttributeNames: ['All'],
      }),
    );
    const batch = res.Messages ?? [];
    if (!batch.length) break;
    const sent = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: to,
        Entries: batch.map((m, i) => ({
          Id: String(i),
          MessageBody: m.Body ?? '',
          ...(m.MessageAttributes && Object.keys(m.MessageAttributes).length
            ? { MessageAttributes: m.MessageAttributes }
            : {}),
        })),
      }),
    );
    const ok = (sent.Successful ?? []).map((s) => batch[Number(s.Id)]).filter((m): m is Message => !!m);
    if (ok.length) {
      const deleted = await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: from,
          Entries: ok.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle as string })),
        }),
      );
      if (deleted.Failed?.length)
        throw new Error(
          `moved ${moved + ok.length} message(s), but ${deleted.Failed.length} copied one(s) could not be deleted from the DLQ (${deleted.Failed[0]?.Message ?? deleted.Failed[0]?.Code}): they are in both queues, which their consumer tolerates; run the redrive again later`,
        );
    }
    moved += ok.length;
    if (sent.Failed?.length)
      throw new Error(
        `moved ${moved} message(s); SQS refused ${sent.Failed.length} (${sent.Failed[0]?.Code}: ${sent.Failed[0]?.Message}); they stay in the DLQ and show again in ${MOVE_VISIBILITY_SECONDS} s`,
      );
  }
  return moved;
}
