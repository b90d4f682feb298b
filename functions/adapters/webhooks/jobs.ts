import type { WebhookEvent } from '#core/webhooks';
import { requireEnv } from '#shared/config';
import { MAX_DELAY_SECONDS, sendBatch } from '../work-queues.ts';

/** One attempt of one event to one endpoint, due at `due_at` (the receiver re-sends until then). */
export interface WebhookJob {
  org_id: string;
  endpoint_id: string;
  event: WebhookEvent;
  attempt: number;
  due_at: string;
}

/** Each job is delayed until its due time, at most SQS's 15 minutes at a time. */
export function sendJobs(jobs: WebhookJob[], now = Date.now()): Promise<void> {
  return sendBatch(
    requireEnv('WEBHOOKS_QUEUE_URL'),
    jobs.map((job) => ({
      body: job,
      delaySeconds: Math.min(
        MAX_DELAY_SECONDS,
        Math.max(0, Math.floor((Date.parse(job.due_at) - now) / 1000)),
      ),
    })),
  );
}
