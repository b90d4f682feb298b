// The metrics Herald writes itself (CloudWatch Embedded Metric Format, functions/shared/metrics.ts)
// and the stack alarms on and charts (lib/constructs/alarms.ts, lib/constructs/dashboard.ts):
// named once here for both. Dimensions never carry an organization id (one time series per
// organization would be unbounded); the log line that carries the metric names it instead.

export const METRICS_NAMESPACE = 'Herald';
/** Channels whose platform refused Herald's app (a client id or secret): the operator must act. */
export const PLATFORM_APP_REFUSED = 'PlatformAppRefused';

/** A delivery reached the platform. Dimensions: [platform], []. */
export const DELIVERY_PUBLISHED = 'DeliveryPublished';
/** A delivery failed for good. Dimensions: [platform, category], [platform], []. */
export const DELIVERY_FAILED = 'DeliveryFailed';
/** A delivery attempt failed (or was paced) and the delivery will be tried again. Dimensions: [platform], []. */
export const DELIVERY_RETRIED = 'DeliveryRetried';
/**
 * Seconds from when a delivery was due (the post's scheduled_at, or when its publishing round started
 * for one published now, approved or published again) to its publication, unit Seconds; p50/p99 are CloudWatch percentiles of it. Dimensions: [platform], [].
 */
export const PUBLISH_LATENESS = 'PublishLateness';
/** A webhook delivery attempt's outcome (delivered, retried, failed). Dimensions: [outcome], []. */
export const WEBHOOK_DELIVERY = 'WebhookDelivery';
/** A channel's status changed (live, reauth_required, error, disconnected). Dimensions: [platform, status], []. */
export const CHANNEL_STATUS_CHANGED = 'ChannelStatusChanged';
/** Inbox items a poll wrote (new comments, mentions, messages). Dimensions: [platform], []. */
export const INBOX_ITEMS_RECEIVED = 'InboxItemsReceived';
/** Items a platform bills as reads (X), counted by the inbox poller. Dimensions: [platform], []. */
export const INBOX_BILLED_READS = 'InboxBilledReads';

/** The dimension names, for the emitters and the stack alike. */
export const METRIC_DIMENSIONS = {
  platform: 'platform',
  category: 'category',
  outcome: 'outcome',
  status: 'status',
} as const;

export const WEBHOOK_OUTCOMES = ['delivered', 'retried', 'failed'] as const;
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];
