import { sendEmail } from '#adapters/email';
import { listOwnerEmails } from '#adapters/users';
import { climbLadder, getEndpoint } from '#adapters/webhook-endpoints';
import { DELIVERING_STATES, ladderDeadlines, type WebhookEndpointRecord } from '#core/webhooks';
import { timeScale } from '#shared/config';
import { logger } from '#shared/logger';

// The failure ladder (docs/api/webhooks.md). A streak starts with an endpoint's first failure after a
// success (failure.failing_since); the table stream starts one Step Functions execution per streak,
// which waits until 24 h (warning) and 72 h (auto_disabled) after its start. Each step acts only
// if the same streak is still running, so a success, a re-enable or a deletion in between makes the
// remaining steps no-ops, whether or not deliveries were attempted meanwhile.

export interface LadderStepInput {
  step: 'warn' | 'disable';
  org_id: string;
  endpoint_id: string;
  failing_since: string;
}

const sameStreak = (e: WebhookEndpointRecord | null, failingSince: string): e is WebhookEndpointRecord =>
  e !== null && e.failure.failing_since === failingSince && DELIVERING_STATES.includes(e.state);

export async function ladderStep(
  input: LadderStepInput,
  now = new Date(),
): Promise<{ still_failing: boolean }> {
  const endpoint = await getEndpoint(input.org_id, input.endpoint_id);
  if (!sameStreak(endpoint, input.failing_since)) return { still_failing: false };
  const at = now.toISOString();
  if (input.step === 'disable') {
    const done = await climbLadder(input.org_id, input.endpoint_id, 'disable', input.failing_since, at);
    if (done)
      logger.warn('webhook endpoint auto-disabled after 72 h of failures', {
        endpoint_id: input.endpoint_id,
      });
    return { still_failing: done !== null };
  }
  if (endpoint.state === 'warning') return { still_failing: true };
  // Email first: a retried step may send it twice, but never loses it.
  await notifyOwners(endpoint);
  const warned = await climbLadder(input.org_id, input.endpoint_id, 'warn', input.failing_since, at);
  if (warned) {
    logger.warn('webhook endpoint failing for 24 h: owner warned', {
      endpoint_id: input.endpoint_id,
      failing_since: input.failing_since,
    });
  }
  const after = warned ?? (await getEndpoint(input.org_id, input.endpoint_id));
  return { still_failing: sameStreak(after, input.failing_since) };
}

async function notifyOwners(endpoint: WebhookEndpointRecord): Promise<void> {
  const to = await listOwnerEmails(endpoint.org_id);
  const since = endpoint.failure.failing_since ?? '';
  const { disable_at } = ladderDeadlines(since, timeScale());
  await sendEmail({
    what: 'webhook warning',
    to,
    subject: `Herald: webhook endpoint ${endpoint.id} has been failing for 24 hours`,
    text: [
      `Deliveries to ${endpoint.url} have failed continuously since ${since}.`,
      `Last error: ${endpoint.failure.last_error ?? 'unknown'}.`,
      `Unless a delivery succeeds, the endpoint will be disabled at ${disable_at}.`,
      'Fix the receiver, then send a test with POST /v1/webhook-endpoints/{id}/test.',
    ].join('\n'),
  });
}
