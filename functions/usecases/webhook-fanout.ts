import { sendJobs } from '#adapters/queues';
import { listEndpoints } from '#adapters/webhook-endpoints';
import type { HeraldEvent } from '#core/messages';
import { DELIVERING_STATES } from '#core/webhooks';

// The event stream → one webhook job per subscribed endpoint (the delivery worker signs and sends).

/** Every enabled, subscribed endpoint of the event's organization gets attempt 1, due now. */
export async function fanOut(event: HeraldEvent, now = Date.now()): Promise<number> {
  const endpoints = await listEndpoints(event.org_id);
  const targets = endpoints.filter(
    (e) => e.enabled && DELIVERING_STATES.includes(e.state) && e.event_types.includes(event.type),
  );
  const { org_id: _org, ...payload } = event;
  const due = new Date(now).toISOString();
  await sendJobs(
    targets.map((e) => ({
      org_id: event.org_id,
      endpoint_id: e.id,
      event: payload,
      attempt: 1,
      due_at: due,
    })),
    now,
  );
  return targets.length;
}
