import { randomUUID } from 'node:crypto';
import { sendJobs } from '#adapters/queues';
import { claimAttempt, markSkipped, recordAttempt } from '#adapters/webhook-deliveries';
import {
  disableGoneEndpoint,
  getEndpoint,
  recordEndpointFailure,
  recordEndpointSuccess,
} from '#adapters/webhook-endpoints';
import type { Resolver } from '#adapters/webhooks/safe-http';
import type { WebhookJob } from '#core/messages';
import {
  classify,
  DELIVERING_STATES,
  type DeliveryAttempt,
  MAX_ATTEMPTS,
  retryDelayMs,
} from '#core/webhooks';
import { timeScale } from '#shared/config';
import { logger } from '#shared/logger';
import { webhookDelivered } from '#shared/metrics';
import { activeSecrets, sendSigned } from '#usecases/support/webhook-send';

// One attempt of one event to one endpoint (the test delivery is in test-webhook-endpoint.ts, so its
// bundle carries no SQS client).

/** Longer than one attempt (15 s) and its bookkeeping, shorter than the queue's visibility (120 s). */
const LEASE_MS = 90_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One message of the webhooks queue. Not due yet: sent on (SQS delays are 15 minutes at most).
 * Due: claim the attempt, POST, record the outcome, update the endpoint's failure state, and send
 * the next attempt. A duplicate or late message finds the attempt claimed or recorded and stops; a
 * worker that died after recording but before sending the next attempt is caught up by the
 * redelivered message. Each recorded attempt is one outcome line and its WebhookDelivery metric
 * (delivered, retried, failed for good).
 */
export async function deliverJob(job: WebhookJob, resolver?: Resolver): Promise<string> {
  const wait = Date.parse(job.due_at) - Date.now();
  if (wait > 1000) {
    await sendJobs([job]);
    return 'deferred';
  }
  if (wait > 0) await sleep(wait);
  const ref = { orgId: job.org_id, endpointId: job.endpoint_id, eventId: job.event.id };
  const token = randomUUID();
  const [endpoint, claim] = await Promise.all([
    getEndpoint(job.org_id, job.endpoint_id),
    claimAttempt({ ...ref, eventType: job.event.type }, job.attempt, token, Date.now(), LEASE_MS),
  ]);
  if (!claim.claimed) {
    const cur = claim.current;
    // Recorded, but the next attempt may never have been sent (the worker died in between).
    if (
      cur?.status === 'pending' &&
      cur.done === job.attempt &&
      cur.next_attempt_at &&
      job.attempt < MAX_ATTEMPTS
    ) {
      await sendJobs([{ ...job, attempt: job.attempt + 1, due_at: cur.next_attempt_at }]);
      return 'resent-next';
    }
    return 'duplicate';
  }
  const nowIso = new Date().toISOString();
  if (!endpoint) {
    await markSkipped(ref, token, 'endpoint deleted', nowIso);
    return 'skipped';
  }
  if (!endpoint.enabled || !DELIVERING_STATES.includes(endpoint.state)) {
    await markSkipped(ref, token, `endpoint ${endpoint.state}`, nowIso);
    return 'skipped';
  }
  if (!(endpoint.event_types as string[]).includes(job.event.type)) {
    await markSkipped(ref, token, 'no longer subscribed', nowIso);
    return 'skipped';
  }

  const secrets = await activeSecrets(endpoint, Date.now());
  const attemptedAt = new Date().toISOString();
  const result = await sendSigned(endpoint, job.event, secrets, resolver);
  const outcome = classify(result.statusCode);
  const attempt: DeliveryAttempt = {
    attempt: job.attempt,
    attempted_at: attemptedAt,
    status_code: result.statusCode,
    duration_ms: result.durationMs,
    error: result.error,
  };
  const retry = outcome === 'failed' && job.attempt < MAX_ATTEMPTS;
  const nextAt = retry
    ? new Date(Date.now() + retryDelayMs(job.attempt + 1, timeScale(), Math.random())).toISOString()
    : null;
  const status = outcome === 'delivered' ? 'delivered' : retry ? 'pending' : 'failed';
  if (!(await recordAttempt(ref, job.attempt, token, attempt, status, nextAt))) return 'lost-claim';
  webhookDelivered(status === 'pending' ? 'retried' : status, {
    orgId: job.org_id,
    endpointId: job.endpoint_id,
    eventId: job.event.id,
    eventType: job.event.type,
    attempt: job.attempt,
    statusCode: result.statusCode,
    error: result.error,
  });

  if (outcome === 'delivered') {
    if (endpoint.failure.consecutive_failures > 0 || endpoint.state === 'warning')
      await recordEndpointSuccess(job.org_id, job.endpoint_id);
  } else if (outcome === 'gone') {
    await disableGoneEndpoint(job.org_id, job.endpoint_id, attemptedAt);
    logger.warn('webhook endpoint answered 410 Gone: disabled', { endpoint_id: job.endpoint_id });
  } else {
    await recordEndpointFailure(job.org_id, job.endpoint_id, {
      at: attemptedAt,
      statusCode: result.statusCode,
      error: result.error ?? 'failed',
    });
  }
  if (nextAt) await sendJobs([{ ...job, attempt: job.attempt + 1, due_at: nextAt }]);
  return status;
}
