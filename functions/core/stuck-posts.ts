import { isDone } from './delivery.ts';
import type { PostRecord } from './posts.ts';

// What makes a post "stuck" for the operator's `herald posts stuck` (pure: the use case reads the
// due-work index and the posts, this decides). A post is stuck when it should have moved on and
// did not, for longer than the operator's threshold:
//   not_started     scheduled, and its time passed (the sweeper or the dispatcher missed it)
//   lease_expired   a delivery is `sending` but its worker's claim ran out (the worker died)
//   retrying/queued a delivery of the current round is still waiting, and the round began earlier
//   unsettled       every delivery is final but the post still says publishing (its last worker
//                   died before settling it)
// The watchdog repairs most of these within minutes; a post listed here for longer is one it did
// not repair.

export type StuckWhy = 'not_started' | 'lease_expired' | 'retrying' | 'queued' | 'unsettled';

export interface StuckFinding {
  org_id: string;
  post_id: string;
  status: PostRecord['status'];
  /** The channel concerned; null for what concerns the post as a whole. */
  channel_id: string | null;
  stage: string | null;
  why: StuckWhy;
  /** Since when it should have moved (ISO 8601). */
  since: string;
  attempts: number | null;
  error_category: string | null;
  error: string | null;
}

/**
 * When the post's current round began, as the post records it: the dispatch that started it, else
 * its place in the due-work index (`entryAt`: its scheduled time or the moment it was published
 * now; later only when a long retry wait re-filed it, which understates the age, never overstates).
 */
function roundStart(post: PostRecord, entryAt: string): string {
  const d = post.dispatched;
  return d && d.round === post.round ? d.at : entryAt;
}

/** The findings for one post read through its due-work entry at `entryAt`; empty when it is not stuck. */
export function stuckFindings(
  post: PostRecord,
  entryAt: string,
  now: Date,
  olderThanMs: number,
): StuckFinding[] {
  const before = now.getTime() - olderThanMs;
  const base = { org_id: post.org_id, post_id: post.id, status: post.status };
  const isOld = (iso: string | null | undefined) => Boolean(iso) && Date.parse(iso as string) <= before;
  if (post.status === 'scheduled') {
    if (!post.scheduled_at || !isOld(post.scheduled_at)) return [];
    return [
      {
        ...base,
        channel_id: null,
        stage: null,
        why: 'not_started',
        since: post.scheduled_at,
        attempts: null,
        error_category: null,
        error: null,
      },
    ];
  }
  if (post.status !== 'publishing') return [];
  const current = post.variants
    .map((v) => post.deliveries[v.channel_id])
    .filter((d) => d !== undefined && (d.round === post.round || isDone(d)));
  const started = roundStart(post, entryAt);
  const out: StuckFinding[] = [];
  for (const d of current) {
    if (!d) continue;
    const row = {
      ...base,
      channel_id: d.channel_id,
      stage: d.stage,
      attempts: d.attempts,
      error_category: d.error_category,
      error: d.error,
    };
    if (d.stage === 'sending') {
      const since = d.lease_until ?? d.attempt_started_at ?? d.updated_at;
      if (isOld(since)) out.push({ ...row, why: 'lease_expired', since });
    } else if ((d.stage === 'retrying' || d.stage === 'queued') && isOld(started)) {
      out.push({ ...row, why: d.stage, since: started });
    }
  }
  const allFinal =
    current.length === post.variants.length &&
    current.every((d) => d !== undefined && (isDone(d) || d.stage === 'failed'));
  if (allFinal && current.length) {
    const last = current.reduce((max, d) => (d && d.updated_at > max ? d.updated_at : max), '');
    if (isOld(last))
      out.push({
        ...base,
        channel_id: null,
        stage: null,
        why: 'unsettled',
        since: last,
        attempts: null,
        error_category: null,
        error: null,
      });
  }
  return out;
}
