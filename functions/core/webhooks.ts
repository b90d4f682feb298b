import { randomBytes } from 'node:crypto';

// Webhook endpoints, deliveries and the failure ladder (docs/api/webhooks.md). Pure: no I/O.

export const EVENT_TYPES = [
  'post.published',
  'post.failed',
  'delivery.failed',
  'channel.connected',
  'channel.reauth_required',
  // unpublishPost's removals are over: each chosen delivery `removed`, or back to `published` with its error.
  'post.unpublished',
  // A new comment, mention or message in a channel's inbox (once per item, whatever the polls' overlap).
  'inbox.received',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/** Sent only by testWebhookEndpoint, whatever the subscription. */
export const TEST_EVENT_TYPE = 'webhook.test';

export const ENDPOINT_STATES = ['active', 'warning', 'auto_disabled', 'disabled'] as const;
export type EndpointState = (typeof ENDPOINT_STATES)[number];
/** States whose endpoints receive deliveries. */
export const DELIVERING_STATES: readonly EndpointState[] = ['active', 'warning'];

/** Endpoints per organization: bounds the fan-out of every event to one small Query. */
export const MAX_ENDPOINTS_PER_ORG = 20;

/**
 * Seconds before each attempt, counted from the end of the previous one: now, +5 s, +5 min, +30 min,
 * +2 h, +5 h, +10 h, +14 h (the Standard Webhooks example schedule cut at its 14 h step).
 */
export const RETRY_SCHEDULE_SECONDS = [0, 5, 300, 1800, 7200, 18000, 36000, 50400] as const;
export const MAX_ATTEMPTS = RETRY_SCHEDULE_SECONDS.length;
/** Each wait is shortened by up to this fraction, so the schedule's span is never exceeded. */
export const JITTER = 0.1;
/** A delivery succeeds on a 2xx within this budget; anything slower is a failure. */
export const DELIVERY_TIMEOUT_MS = 15_000;

export const LADDER = {
  /** Continuous failure (no success since the first failure) until the owner is warned. */
  warnAfterMs: 24 * 3600_000,
  /** …and until the endpoint is auto-disabled. */
  disableAfterMs: 72 * 3600_000,
} as const;

/** After a rotation the previous secret keeps signing (a second signature) for this long. */
export const SECRET_OVERLAP_MS = 24 * 3600_000;

/** Delivery-log entries expire after this long (DynamoDB TTL). */
export const DELIVERY_LOG_DAYS = 30;

/** `whsec_` + base64 of 32 random bytes, the format the standardwebhooks libraries take. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** Milliseconds to wait before attempt `next` (2…8); `rand` in [0, 1) picks the jitter. */
export function retryDelayMs(next: number, timeScale: number, rand: number): number {
  const base = RETRY_SCHEDULE_SECONDS[next - 1];
  if (base === undefined || next < 2) throw new RangeError(`no attempt ${next}`);
  return Math.round(base * 1000 * timeScale * (1 - JITTER * rand));
}

export type AttemptOutcome = 'delivered' | 'gone' | 'failed';

/** 2xx is a success; 410 Gone disables the endpoint; anything else (3xx included) is a failure. */
export function classify(statusCode: number | null): AttemptOutcome {
  if (statusCode === null) return 'failed';
  if (statusCode >= 200 && statusCode < 300) return 'delivered';
  if (statusCode === 410) return 'gone';
  return 'failed';
}

export interface FailureState {
  consecutive_failures: number;
  /** Absent (not null) while healthy, so `if_not_exists` can set it on the first failure. */
  failing_since?: string;
  last_failure_at?: string;
  last_status_code?: number;
  last_error?: string;
  warned_at?: string;
  disabled_at?: string;
}

export interface WebhookEndpointRecord {
  entity: 'webhook_endpoint';
  id: string;
  org_id: string;
  url: string;
  description: string | null;
  event_types: EventType[];
  enabled: boolean;
  state: EndpointState;
  failure: FailureState;
  /** KMS ciphertexts (base64) of the signing secrets; never leave the service. */
  secret: { current: string; previous?: string; previous_until?: string };
  created_at: string;
  updated_at: string;
  version: number;
}

export function toWebhookEndpoint(rec: WebhookEndpointRecord) {
  const f = rec.failure;
  return {
    id: rec.id,
    url: rec.url,
    description: rec.description,
    event_types: rec.event_types,
    enabled: rec.enabled,
    state: rec.state,
    failure: {
      consecutive_failures: f.consecutive_failures,
      failing_since: f.failing_since ?? null,
      last_failure_at: f.last_failure_at ?? null,
      last_status_code: f.last_status_code ?? null,
      last_error: f.last_error ?? null,
      warned_at: f.warned_at ?? null,
      disabled_at: f.disabled_at ?? null,
    },
    created_at: rec.created_at,
    updated_at: rec.updated_at,
  };
}

/** The ladder's deadlines for a failure streak that began at `failingSince`. */
export function ladderDeadlines(failingSince: string, timeScale: number) {
  const start = Date.parse(failingSince);
  return {
    warn_at: new Date(start + LADDER.warnAfterMs * timeScale).toISOString(),
    disable_at: new Date(start + LADDER.disableAfterMs * timeScale).toISOString(),
  };
}

/** Step Functions execution names allow 80 of [A-Za-z0-9-_]; one streak, one execution. */
export function ladderExecutionName(endpointId: string, failingSince: string): string {
  return `${endpointId}-${Date.parse(failingSince)}`;
}

export interface DeliveryAttempt {
  attempt: number;
  attempted_at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
}

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'skipped'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One event's deliveries to one endpoint: every attempt, at most MAX_ATTEMPTS. */
export interface WebhookDeliveryRecord {
  entity: 'webhook_delivery';
  org_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: DeliveryAttempt[];
  /** Attempts whose outcome is recorded. */
  done: number;
  next_attempt_at?: string;
  updated_at: string;
}

export function toWebhookDelivery(rec: WebhookDeliveryRecord) {
  return {
    event_id: rec.event_id,
    event_type: rec.event_type,
    status: rec.status,
    attempts: rec.attempts,
    next_attempt_at: rec.next_attempt_at ?? null,
    updated_at: rec.updated_at,
  };
}

/** What a webhook body carries (Standard Webhooks: `{type, timestamp, data}`). */
export interface WebhookEvent {
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

export const webhookBody = (e: WebhookEvent): string =>
  JSON.stringify({ type: e.type, timestamp: e.timestamp, data: e.data });

/** A short, loggable reason for a failed attempt (never the response body). */
export function attemptError(statusCode: number | null, reason: string | null): string | null {
  if (reason) return reason;
  if (statusCode === null || (statusCode >= 200 && statusCode < 300)) return null;
  if (statusCode >= 300 && statusCode < 400) return `redirect (HTTP ${statusCode}) not followed`;
  return `HTTP ${statusCode}`;
}
