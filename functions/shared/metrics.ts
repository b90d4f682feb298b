import { Logger } from '@aws-lambda-powertools/logger';
import {
  CHANNEL_STATUS_CHANGED,
  DELIVERY_FAILED,
  DELIVERY_PUBLISHED,
  DELIVERY_RETRIED,
  INBOX_BILLED_READS,
  INBOX_ITEMS_RECEIVED,
  METRICS_NAMESPACE,
  PLATFORM_APP_REFUSED,
  PUBLISH_LATENESS,
  WEBHOOK_DELIVERY,
  type WebhookOutcome,
} from '#core/metrics';
import { logger } from './logger.ts';

// Outcome lines: each is one JSON log line an operator can search (org_id, post_id, channel_id…)
// and, through its `_aws` member, the CloudWatch metrics extracted from it (Embedded Metric
// Format). Written by hand rather than with @aws-lambda-powertools/metrics: that library writes its
// metrics as lines of their own, flushed at the end of an invocation, so an outcome would be two
// lines to keep in step (and one more dependency); here the line and its numbers cannot disagree.

/**
 * The outcome lines' logger: INFO whatever LOG_LEVEL / POWERTOOLS_LOG_LEVEL say (the local stack
 * runs at WARN), because a metric line that is filtered out is a metric that is lost. Only SILENT
 * (the unit tests' and benchmarks' setting: no output at all) silences them too. Lambda's own
 * application log level (advanced logging controls) must stay at INFO or below for the same reason.
 */
const outcomes = new Logger({
  serviceName: 'herald',
  logLevel:
    (process.env.POWERTOOLS_LOG_LEVEL || process.env.LOG_LEVEL || '').toUpperCase() === 'SILENT'
      ? 'SILENT'
      : 'INFO',
});

type Unit = 'Count' | 'Seconds';
/** CloudWatch's limit on the dimensions of one dimension set. */
const MAX_DIMENSIONS = 30;

/**
 * A line's metric members: each metric's value and each dimension's value as top-level members
 * (EMF requires both), and the `_aws` directive naming them. Every metric of one line shares the
 * line's dimension sets; the empty set is always added (the total across every dimension).
 */
export function metricMembers(
  metrics: ReadonlyArray<{ name: string; value: number; unit: Unit }>,
  dimensions: Readonly<Record<string, string>>,
  sets: ReadonlyArray<ReadonlyArray<string>>,
): Record<string, unknown> {
  for (const set of sets) {
    if (set.length > MAX_DIMENSIONS) throw new Error(`A dimension set has at most ${MAX_DIMENSIONS} names.`);
    for (const name of set)
      if (typeof dimensions[name] !== 'string') throw new Error(`Dimension ${name} has no value.`);
  }
  for (const m of metrics)
    if (!Number.isFinite(m.value)) throw new Error(`Metric ${m.name} needs a finite value, not ${m.value}.`);
  return {
    ...dimensions,
    ...Object.fromEntries(metrics.map((m) => [m.name, m.value])),
    _aws: {
      Timestamp: Date.now(),
      CloudWatchMetrics: [
        {
          Namespace: METRICS_NAMESPACE,
          Dimensions: [...sets.map((s) => [...s]), []],
          Metrics: metrics.map((m) => ({ Name: m.name, Unit: m.unit })),
        },
      ],
    },
  };
}

const count = (name: string) => ({ name, value: 1, unit: 'Count' as const });

/** One delivery (post, channel) as its outcome line names it: plain properties, never dimensions but platform. */
export interface DeliveryFacts {
  orgId: string;
  postId: string;
  channelId: string;
  /** The channel's platform; `unknown` when the channel no longer exists. */
  platform: string;
  /** The delivery's attempt count after this attempt. */
  attempt?: number | undefined;
}

const deliveryFields = (d: DeliveryFacts) => ({
  org_id: d.orgId,
  post_id: d.postId,
  channel_id: d.channelId,
  ...(d.attempt !== undefined ? { attempt: d.attempt } : {}),
});

/** The platform accepted a delivery; `latenessSeconds`: from when it was due, when known. */
export function deliveryPublished(d: DeliveryFacts, latenessSeconds: number | null): void {
  const late = latenessSeconds === null ? null : Math.max(0, latenessSeconds);
  outcomes.info('delivery published', {
    outcome: 'published',
    ...deliveryFields(d),
    ...(late === null ? {} : { lateness_seconds: late }),
    ...metricMembers(
      [
        count(DELIVERY_PUBLISHED),
        ...(late === null ? [] : [{ name: PUBLISH_LATENESS, value: late, unit: 'Seconds' as const }]),
      ],
      { platform: d.platform },
      [['platform']],
    ),
  });
}

/** An attempt failed (`category`) or was held by pacing (`paced`): the delivery runs again at `nextAttemptAt`. */
export function deliveryRetrying(
  d: DeliveryFacts,
  why: { category: string; error: string } | { paced: string },
  nextAttemptAt: string | undefined,
): void {
  outcomes.info('delivery retrying', {
    outcome: 'retrying',
    ...deliveryFields(d),
    ...('paced' in why ? { paced: why.paced } : { category: why.category, error: why.error }),
    ...(nextAttemptAt ? { next_attempt_at: nextAttemptAt } : {}),
    ...metricMembers([count(DELIVERY_RETRIED)], { platform: d.platform }, [['platform']]),
  });
}

/** A delivery failed for good (the worker's last attempt, or the dead-letter consumer: `system`). */
export function deliveryFailed(d: DeliveryFacts, category: string, error: string): void {
  outcomes.warn('delivery failed', {
    outcome: 'failed',
    ...deliveryFields(d),
    error,
    ...metricMembers([count(DELIVERY_FAILED)], { platform: d.platform, category }, [
      ['platform', 'category'],
      ['platform'],
    ]),
  });
}

/** One webhook delivery attempt's outcome. */
export function webhookDelivered(
  outcome: WebhookOutcome,
  fields: {
    orgId: string;
    endpointId: string;
    eventId: string;
    eventType: string;
    attempt: number;
    statusCode: number | null;
    error?: string | null | undefined;
  },
): void {
  (outcome === 'failed' ? outcomes.warn : outcomes.info).call(outcomes, `webhook ${outcome}`, {
    org_id: fields.orgId,
    endpoint_id: fields.endpointId,
    event_id: fields.eventId,
    event_type: fields.eventType,
    attempt: fields.attempt,
    status_code: fields.statusCode,
    ...(fields.error ? { error: fields.error } : {}),
    ...metricMembers([count(WEBHOOK_DELIVERY)], { outcome }, [['outcome']]),
  });
}

/** A channel's status changed (`from` → `status`). */
export function channelStatusChanged(c: {
  orgId: string;
  channelId: string;
  platform: string;
  from: string;
  status: string;
}): void {
  outcomes.info('channel status changed', {
    org_id: c.orgId,
    channel_id: c.channelId,
    from: c.from,
    ...metricMembers([count(CHANNEL_STATUS_CHANGED)], { platform: c.platform, status: c.status }, [
      ['platform', 'status'],
    ]),
  });
}

/**
 * The platform refused Herald's app (its client id or secret, or its configuration) `channels`
 * times (channels' looks and deliveries, counted by adapters/app-refusals.ts): one line per
 * platform, not per channel, so a rotated secret is one page, not thousands. An error line of the
 * functions' logger: no log level an operator would run at filters it out.
 */
export function platformAppRefused(platform: string, channels: number, error: string): void {
  logger.error('the platform refused the platform app: the operator must act (herald platform-app set)', {
    channels,
    error,
    ...metricMembers([{ name: PLATFORM_APP_REFUSED, value: channels, unit: 'Count' }], { platform }, [
      ['platform'],
    ]),
  });
}

/**
 * One channel's inbox poll: the items it wrote and the reads the platform bills (X bills each post
 * it returns, new or not): the operator's bill is the sum of the second.
 */
export function inboxPolled(p: {
  orgId: string;
  channelId: string;
  platform: string;
  pages: number;
  received: number;
  billedReads: number;
}): void {
  outcomes.info('inbox polled', {
    org_id: p.orgId,
    channel_id: p.channelId,
    pages: p.pages,
    ...metricMembers(
      [
        { name: INBOX_ITEMS_RECEIVED, value: p.received, unit: 'Count' },
        { name: INBOX_BILLED_READS, value: p.billedReads, unit: 'Count' },
      ],
      { platform: p.platform },
      [['platform']],
    ),
  });
}
