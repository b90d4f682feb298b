import { startLadder } from '#adapters/webhooks/ladder';
import { DELIVERING_STATES, ladderDeadlines, type WebhookEndpointRecord } from '#core/webhooks';
import { timeScale } from '#shared/config';

// Apart from the ladder's steps, so the stream relay bundles the Step Functions client only.

/** From the table stream: a new failure streak starts its ladder. */
export async function startLadderOnChange(
  before: WebhookEndpointRecord | undefined,
  after: WebhookEndpointRecord | undefined,
): Promise<boolean> {
  const since = after?.failure.failing_since;
  if (!after || !since || since === before?.failure.failing_since) return false;
  if (!DELIVERING_STATES.includes(after.state)) return false;
  await startLadder({
    org_id: after.org_id,
    endpoint_id: after.id,
    failing_since: since,
    ...ladderDeadlines(since, timeScale()),
  });
  return true;
}
