import { channelsAt, channelsOf } from '#adapters/channel-reads';
import { positionAt, syncEntriesAfter } from '#adapters/channel-sync-index';
import { dueInBucket, getPost, loadPosts } from '#adapters/posts';
import { REAUTH_RECHECK_MS } from '#core/channel-health';
import { mapLimit } from '#core/concurrency';
import { isId } from '#core/ids';
import { type PostRecord, toPost } from '#core/posts';
import { type StuckFinding, stuckFindings } from '#core/stuck-posts';
import { postNotFound } from '#usecases/support/post-writes';

// What the operator's CLI shows of the table (docs/operator/cli.md): one post with everything its
// deliveries hold, the posts that should have moved on and did not, and the channels that fail.
// Read-only, across organizations, through the indexes the workers read (no Scan).

/** `herald post get`: the post as getPost answers it, plus what the workers keep on it. */
export async function inspectPost(orgId: string, postId: string, now = new Date()) {
  if (!isId('post', postId)) throw postNotFound();
  const rec = await getPost(orgId, postId);
  if (!rec) throw postNotFound();
  const channels = new Map(
    (
      await channelsOf(
        orgId,
        rec.variants.map((v) => v.channel_id),
      )
    ).map((c) => [c.id, c]),
  );
  return {
    org_id: rec.org_id,
    post: toPost(rec),
    round: rec.round,
    version: rec.version,
    watch_at: rec.watch_at ?? null,
    dispatched: rec.dispatched ?? null,
    deliveries: rec.variants.flatMap((v) => {
      const d = rec.deliveries[v.channel_id];
      if (!d) return [];
      const channel = channels.get(d.channel_id);
      return [
        {
          channel_id: d.channel_id,
          platform: channel?.platform ?? null,
          handle: channel?.handle ?? null,
          stage: d.stage,
          round: d.round,
          attempts: d.attempts,
          error_category: d.error_category,
          error: d.error,
          next_attempt_at: d.next_attempt_at ?? null,
          claim: d.claim_id
            ? {
                id: d.claim_id,
                lease_until: d.lease_until ?? null,
                expired: !d.lease_until || Date.parse(d.lease_until) <= now.getTime(),
                attempt_started_at: d.attempt_started_at ?? null,
              }
            : null,
          unresolved_since: d.unresolved_since ?? null,
          external_id: d.external_id,
          url: d.url,
          updated_at: d.updated_at,
        },
      ];
    }),
  };
}

/** Minute buckets of the due-work index read at once. */
const BUCKETS_AT_ONCE = 32;

/**
 * `herald posts stuck`: every post in the due-work index (GSI2 `DUE#<minute>`, where a post sits
 * while scheduled or publishing) with an entry in the last `lookbackMs` up to now, read and judged
 * by core/stuck-posts.ts. One small Query per minute bucket (keys only, mostly empty), then the
 * posts found by BatchGetItem. A post whose entry lies ahead (a retry waiting on a platform's hint
 * of more than 25 minutes re-files it there) shows once its time is reached.
 */
export async function stuckPosts(args: { now: Date; olderThanMs: number; lookbackMs: number }) {
  const { now, olderThanMs, lookbackMs } = args;
  const minute = (ms: number) => Math.floor(ms / 60_000);
  const first = minute(now.getTime() - lookbackMs);
  const buckets = Array.from(
    { length: minute(now.getTime()) - first + 1 },
    (_, i) => new Date((first + i) * 60_000),
  );
  const window = { after: new Date(now.getTime() - lookbackMs - 1), until: now };
  const entries = (await mapLimit(buckets, BUCKETS_AT_ONCE, (b) => dueInBucket(b, window))).flat();
  const entryOf = new Map(entries.map((e) => [`${e.orgId}#${e.postId}`, e.at]));
  const posts: PostRecord[] = entries.length
    ? await loadPosts(entries.map((e) => ({ orgId: e.orgId, postId: e.postId })))
    : [];
  const stuck: StuckFinding[] = posts
    .flatMap((p) => stuckFindings(p, entryOf.get(`${p.org_id}#${p.id}`) ?? p.updated_at, now, olderThanMs))
    .sort((a, b) => a.since.localeCompare(b.since) || a.post_id.localeCompare(b.post_id));
  return {
    now: now.toISOString(),
    older_than_seconds: Math.round(olderThanMs / 1000),
    lookback_seconds: Math.round(lookbackMs / 1000),
    buckets_read: buckets.length,
    posts_read: posts.length,
    stuck,
  };
}

/** How far back the channel-sync index is read: a day past what its finder still looks at (7). */
const SYNC_LOOKBACK_MS = 8 * 86_400_000;
/**
 * A failing channel's entry is never further ahead than this: reauth_required is looked at again
 * hourly, a failing sync after a backoff of at most 6 hours (core/channel-health.ts).
 */
const FAILING_AHEAD_MS = Math.max(REAUTH_RECHECK_MS, 6 * 3600_000);

export type FailingWhy = 'reauth_required' | 'error' | 'sync_failing';

/**
 * `herald channels failing`: channels whose status is reauth_required or error, and live ones
 * whose last syncs failed (sync_failures > 0), across organizations. Every connected channel sits
 * in the channel-sync index (GSI2 `CHSYNC#<day>`) at its next sync; a failing one at most 6 hours
 * ahead. So: the index from 8 days back to 6 hours ahead (keys only), then those channels by
 * BatchGetItem — healthy channels due in that window are read too, never the whole table.
 */
export async function failingChannels(args: { now: Date }) {
  const { now } = args;
  const refs: Array<{ pk: string; sk: string }> = [];
  for await (const page of syncEntriesAfter({
    after: null,
    until: positionAt(new Date(now.getTime() + FAILING_AHEAD_MS)),
    sinceMs: now.getTime() - SYNC_LOOKBACK_MS,
    pageSize: 500,
  }))
    for (const e of page) if (isId('channel', e.id)) refs.push({ pk: e.pk, sk: e.sk });
  const channels = refs.length ? await channelsAt(refs) : [];
  const failing = channels.flatMap((c) => {
    const why: FailingWhy | null =
      c.status === 'reauth_required' || c.status === 'error'
        ? c.status
        : c.status === 'live' && (c.sync_failures ?? 0) > 0
          ? 'sync_failing'
          : null;
    if (!why) return [];
    return [
      {
        org_id: c.org_id,
        channel_id: c.id,
        platform: c.platform,
        handle: c.handle,
        status: c.status,
        why,
        sync_failures: c.sync_failures ?? 0,
        last_error: c.last_error,
        last_sync_at: c.last_sync_at,
        next_sync_at: c.next_sync_at ?? null,
        updated_at: c.updated_at ?? null,
      },
    ];
  });
  failing.sort((a, b) => a.org_id.localeCompare(b.org_id) || a.channel_id.localeCompare(b.channel_id));
  return { now: now.toISOString(), channels_read: channels.length, channels: failing };
}
