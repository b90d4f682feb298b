import { QueueSendError, sendJobs } from '#adapters/queues';
import { listEndpoints } from '#adapters/webhook-endpoints';
import type { HeraldEvent, WebhookJob } from '#core/messages';
import { DELIVERING_STATES, type WebhookEndpointRecord } from '#core/webhooks';

// The event stream → one webhook job per subscribed endpoint (the delivery worker signs and sends).

/**
 * Every enabled, subscribed endpoint of each event's organization gets attempt 1, due now. A queue
 * batch is fanned out together: each organization's endpoints read once, the jobs sent together.
 * Per event, in order: how many endpoints it went to, or an Error (its record returns to the queue;
 * the job ids derive from the event, so a repeat is harmless).
 */
export async function fanOutAll(events: HeraldEvent[], now = Date.now()): Promise<Array<number | Error>> {
  const orgs = [...new Set(events.map((e) => e.org_id))];
  const endpointsOf = new Map<string, WebhookEndpointRecord[] | Error>();
  await Promise.all(
    orgs.map(async (org) => {
      endpointsOf.set(org, await listEndpoints(org).catch((err: Error) => err));
    }),
  );
  const due = new Date(now).toISOString();
  const jobs: WebhookJob[] = [];
  /** Which event each job is for. */
  const owners: number[] = [];
  const results = events.map((event, i): number | Error => {
    const endpoints = endpointsOf.get(event.org_id) ?? [];
    if (endpoints instanceof Error) return endpoints;
    const targets = endpoints.filter(
      (e) => e.enabled && DELIVERING_STATES.includes(e.state) && e.event_types.includes(event.type),
    );
    const { org_id: _org, ...payload } = event;
    for (const e of targets) {
      jobs.push({ org_id: event.org_id, endpoint_id: e.id, event: payload, attempt: 1, due_at: due });
      owners.push(i);
    }
    return targets.length;
  });
  try {
    await sendJobs(jobs, now);
  } catch (err) {
    // Only the events with a job not sent go back (their jobs that did go out are sent again:
    // the attempt's claim makes the copy harmless).
    const failed = err instanceof QueueSendError ? new Set(err.unsent.map((j) => owners[j])) : undefined;
    return results.map((r, i) =>
      typeof r === 'number' && r > 0 && (!failed || failed.has(i)) ? (err as Error) : r,
    );
  }
  return results;
}
