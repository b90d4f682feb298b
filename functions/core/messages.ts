import type { PostRecord } from '#core/posts';
import type { EventType, WebhookEvent } from '#core/webhooks';

// The messages the workers pass each other over SQS. The queues' names and the variables holding
// their URLs are in core/vocabulary.ts, which the manifest reads too.

/** SQS delays are at most 15 minutes; longer waits are chained by the receiver. */
export const MAX_DELAY_SECONDS = 900;

/**
 * Every queue's MaximumMessageSize (set so in the stack and the local stack alike): 256 KiB keeps a
 * batch of ten within Lambda's 6 MB invocation payload. A message over it goes by reference
 * (shared/queue-bodies.ts).
 */
export const MAX_MESSAGE_BYTES = 262_144;

/**
 * Message bodies sent by reference live in the upload bucket under this prefix; the stack grants
 * it only to the functions whose messages can be that large (manifest access `queueBodies`).
 */
export const QUEUE_BODY_PREFIX = 'queue-bodies/';

/**
 * Days a body is kept after its last send (a lifecycle rule): longer than any message lives (a
 * standard queue's message expires by its first enqueue time, and the DLQs keep 14 days).
 */
export const QUEUE_BODY_DAYS = 15;

/** The variable naming that bucket (set only for the functions granted the prefix). */
export const QUEUE_BODY_BUCKET_ENV = 'HERALD_QUEUE_BODY_BUCKET';

/** One message per (post, channel, round); the delivery worker claims it, so duplicates are harmless. */
export interface DeliveryMessage {
  org_id: string;
  post_id: string;
  channel_id: string;
  round: number;
  /**
   * Set by the dispatcher: the scheduled_at this round starts for. The first worker to claim starts
   * the post (scheduled → publishing) in its claim; a post rescheduled or deleted meanwhile is skipped.
   */
  start?: string;
  /**
   * Set by the dispatcher on the message of a post with one channel to start: the post as it read
   * it (a consistent read). The claim is written against that version without reading first; if
   * the post changed since, the version check fails and the claim reads it as usual.
   */
  snapshot?: PostRecord;
  /**
   * Set on a retry's own message: the `next_attempt_at` it was sent for. Only that message waits on
   * (re-sent until the retry is due); any other copy that finds the retry not due yet is dropped.
   */
  due?: string;
}

/** The scheduler's dispatch of a post at its time. */
export interface DispatchMessage {
  org_id: string;
  post_id: string;
  /** The scheduled_at this dispatch is for; a rescheduled post ignores it. */
  scheduled_at: string;
}

/**
 * One entry of the channel-sync index that fell due: a channel (`ch_…`) to look at, or a session
 * (`conn_…`) whose account choice expired. The worker reads the item again, so duplicates are harmless.
 */
export interface ChannelSyncMessage {
  org_id: string;
  id: string;
  /** The entry's time in the index when it was found (its due time). */
  at: string;
}

/**
 * The engagement sync's work: up to POSTS_PER_MESSAGE (usecases/engagement-sync.ts) posts
 * published in the last 7 days, by reference (the worker reads them).
 */
export interface EngagementSyncMessage {
  posts: Array<{ org_id: string; post_id: string }>;
}

/** An event on the durable event stream the webhooks consume. */
export interface HeraldEvent {
  /** `msg_…`, stable for the change that caused it (the webhook-id). */
  id: string;
  type: EventType;
  timestamp: string;
  org_id: string;
  data: Record<string, unknown>;
}

/** One attempt of one event to one endpoint, due at `due_at` (the receiver re-sends until then). */
export interface WebhookJob {
  org_id: string;
  endpoint_id: string;
  event: WebhookEvent;
  attempt: number;
  due_at: string;
}

/**
 * One delivery to take down from its platform (unpublishPost): sent by the stream relay when the
 * delivery turns `removing`, and by the worker itself for a retry. The worker reads the post again
 * and acts only on a delivery still `removing`, so duplicates are harmless.
 */
export interface UnpublishMessage {
  org_id: string;
  post_id: string;
  channel_id: string;
  /** A retry's own message: the removal attempts made before it (a stale copy is dropped). */
  attempt?: number;
  /** When the retry is due, if later than SQS's 15-minute delay: the message is sent on until then. */
  due?: string;
}

/** A media import to finish (or to check on) in the background: the asset, pending until it is done. */
export interface MediaImportMessage {
  org_id: string;
  media_id: string;
}

/**
 * One channel to poll for new inbox items (sent by the inbox finder, one per channel of its slot,
 * delayed over the minute). The worker reads the poll state again; a duplicate reads what the first
 * already wrote and writes no second item.
 */
export interface InboxPollMessage {
  org_id: string;
  channel_id: string;
}

/**
 * One reply to send (replyToInboxItem): sent by the stream relay when the reply is recorded
 * `queued`, and by the worker for its own retries. The worker acts only on a reply still `queued`
 * (or `sending` under an expired claim: reconciled first), so duplicates are harmless.
 */
export interface InboxReplyMessage {
  org_id: string;
  item_id: string;
  reply_id: string;
  attempt?: number;
  /** When the retry is due, if later than SQS's 15-minute delay: the message is sent on until then. */
  due?: string;
}
