import { countAppRefusal, takeAppRefusals } from '#adapters/app-refusals';
import { openPending } from '#adapters/channel-connection-secrets';
import { endExpiredSelection, getConnection } from '#adapters/channel-connections';
import { credentialRedactor, getChannelWithSealedCredentials } from '#adapters/channel-credentials';
import {
  advanceSyncCursor,
  moveSyncEntry,
  positionAt,
  readSyncCursor,
  type SyncEntry,
  saveSyncMarks,
  syncEntriesAfter,
} from '#adapters/channel-sync-index';
import { updateChannelHealth } from '#adapters/channels';
import { keys } from '#adapters/keys';
import { connectFor } from '#adapters/platforms/connect-registry';
import { PlatformError } from '#adapters/platforms/types';
import { sendChannelSyncs } from '#adapters/queues';
import type { Remedy } from '#core/channel-health';
import { isId } from '#core/ids';
import type { ChannelSyncMessage } from '#core/messages';
import type { Platform } from '#core/platforms';
import { platformAppRefused } from '#shared/alarms';
import { logger } from '#shared/logger';
import { nextSyncAt } from '#usecases/support/channel-connect';
import { recordChannelFailure } from '#usecases/support/channel-health';
import { revokeUnkept } from '#usecases/support/channel-revoke';
import { channelTokens } from '#usecases/support/channel-tokens';

// The channel sync keeps every connected channel healthy without waiting for a post to find out:
// each channel whose time has come gets its access token renewed ahead of expiry and its profile
// read again (handle, avatar, followers). A refusal is handled by who has to act
// (core/channel-health.ts): the person (reauth_required, one channel.reauth_required event, looked
// at again hourly so a grant that was fine after all comes back), the operator (live, last_error,
// one alarm line per platform and finder run), or time (live, last_error, a growing backoff).
//
// It scales with channels by fanning out: the finder (every 5 minutes in AWS; every 2 s in the
// local stack) reads the sync index oldest first from where its last run stopped and sends one
// message per due entry to the channel-sync queue; the workers (a bounded number of concurrent
// batches) look at one channel per message. Oldest first is nearest expiry first: a token's entry
// sits 30 minutes (or half its life) before it expires. When more is due than the workers get
// through, what is left waits in the index, still in that order, ahead of anything due later.
// Nothing is lost: the cursor moves only past entries that were sent, and an entry still in the
// index long after it was sent is sent again. Nothing is done twice: a worker looks only at a
// channel that is still due (a duplicate finds it synced), and a renewal takes the credentials'
// lease at the version it read (usecases/support/channel-tokens.ts), so two workers on one channel
// spend its refresh token once.

/** Renew when the token has this long left (syncs are scheduled for that moment, see nextSyncAt). */
const RENEW_WITHIN_MS = 30 * 60_000;
/** Days of the sync index a run reads back: a channel overdue by up to a week is still found. */
const LOOKBACK_DAYS = 7;
/**
 * Entries one run sends at most: about what the workers (lib/operations.ts: 8 batches of 10 at
 * once, a second or less per channel) get through before the next run. More than that stays in
 * the index, in order, so the queue never holds more than one run's work.
 */
export const MAX_SENT_PER_RUN = 20_000;
/** An entry the cursor passed this long ago and still in the index lost its message: sent again. */
export const RESEND_AFTER_MS = 15 * 60_000;
/** How often the cursor's position is noted for that (so a resend comes at most this much later). */
const MARK_EVERY_MS = 60_000;
/** Entries read (and sent, and moved) per step; the cursor moves after each step. */
const PAGE = 500;
const PARALLEL = 8;

export type SyncResult =
  | 'synced'
  | 'refreshed'
  | 'retrying'
  | 'reauth_required'
  | 'operator'
  | 'selection_expired'
  | 'skipped';

export interface FindResult {
  /** Entries sent to the workers this run. */
  sent: number;
  /** Entries found still waiting long after they were sent, moved to be sent again. */
  resent: number;
  /** Platforms reported as refusing the operator's app (one alarm line each). */
  alarms: number;
}

async function inParallel<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(PARALLEL, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i] as T);
    }),
  );
  return out;
}

const messageOf = (e: SyncEntry): ChannelSyncMessage => ({ org_id: e.orgId, id: e.id, at: e.at });

/**
 * The finder. Primary course: report what the workers counted as refused for the operator's app
 * since the last run (one alarm line per platform); move entries sent long ago and still waiting in
 * front of the cursor; send the entries due since the cursor, oldest first, page by page, moving
 * the cursor past each page once it is sent. Stops at `limit` (MAX_SENT_PER_RUN) or at
 * `deadlineMs`: the rest is the next run's.
 */
export async function findDueChannels(
  now: Date,
  opts: { deadlineMs?: number; limit?: number } = {},
): Promise<FindResult> {
  const limit = opts.limit ?? MAX_SENT_PER_RUN;
  const timeUp = () => opts.deadlineMs !== undefined && Date.now() >= opts.deadlineMs;
  const [refused, { through: cursor, marks }] = await Promise.all([takeAppRefusals(), readSyncCursor()]);
  for (const { platform, channels, error } of refused) platformAppRefused(platform, channels, error);

  const sinceMs = now.getTime() - LOOKBACK_DAYS * 86_400_000;
  // Where the cursor was RESEND_AFTER_MS ago: an entry at or before it, still in the index, was
  // sent that long ago and its message lost or dead-lettered. Moved to now, it is in front of the
  // cursor and sent below.
  const passed = marks.filter(([at]) => at <= now.getTime() - RESEND_AFTER_MS).at(-1);
  let resent = 0;
  if (passed) {
    for await (const page of syncEntriesAfter({ after: null, until: passed[1], sinceMs, pageSize: PAGE })) {
      const moved = await inParallel(page, (e) => moveSyncEntry(e, now.toISOString()));
      resent += moved.filter(Boolean).length;
      if (resent >= limit || timeUp()) break;
    }
  }

  let sent = 0;
  let position = cursor;
  if (!timeUp()) {
    const pages = syncEntriesAfter({ after: cursor, until: positionAt(now), sinceMs, pageSize: PAGE });
    for await (const page of pages) {
      const batch = page.slice(0, limit - sent);
      const chunks: SyncEntry[][] = [];
      for (let i = 0; i < batch.length; i += 50) chunks.push(batch.slice(i, i + 50));
      await inParallel(chunks, (chunk) => sendChannelSyncs(chunk.map(messageOf)));
      position = (batch.at(-1) as SyncEntry).position;
      await advanceSyncCursor(position);
      sent += batch.length;
      if (sent >= limit || timeUp()) break;
    }
  }
  // Every entry up to `position` has been sent by now: noted (at most once a minute), it is the
  // resend bound of the run RESEND_AFTER_MS from now.
  const last = marks.at(-1);
  if (position && (!last || now.getTime() - last[0] >= MARK_EVERY_MS)) {
    const kept = marks.filter(([at]) => at > now.getTime() - RESEND_AFTER_MS);
    await saveSyncMarks([...(passed ? [passed] : []), ...kept, [now.getTime(), position]]);
  }
  return { sent, resent, alarms: refused.length };
}

/**
 * The worker, for one message: a channel that is still due is looked at (a duplicate, or a message
 * for a channel a reconnect, disconnect or earlier sync moved on, changes nothing); a session whose
 * account choice expired is ended. A refusal of the operator's app is counted for the finder's
 * alarm line.
 */
export async function syncDueEntry(msg: ChannelSyncMessage, now: Date): Promise<SyncResult> {
  if (isId('connection', msg.id)) return endSelection(msg.org_id, msg.id, now);
  const outcome = await syncOne(msg.org_id, msg.id, now, msg.at);
  if (outcome.result === 'operator' && outcome.platform)
    await countAppRefusal(outcome.platform, outcome.error ?? '');
  return outcome.result;
}

/**
 * A session whose account choice expired: the grant it kept for the choice is given back where that
 * ends just this grant (usecases/support/channel-revoke.ts), and erased.
 */
async function endSelection(orgId: string, id: string, now: Date): Promise<SyncResult> {
  const session = await getConnection(orgId, id);
  const rec = session?.rec;
  if (!rec || rec.status !== 'selecting_account' || Date.parse(rec.expires_at) > now.getTime())
    return 'skipped';
  const pending = await openPending(rec, session.pending);
  await revokeUnkept(rec.platform, Object.values(pending?.grants ?? {}), rec.id);
  return (await endExpiredSelection(rec, now.toISOString())) ? 'selection_expired' : 'skipped';
}

/** What a recorded failure counts as (null from recordChannelFailure: a reconnect won, skipped). */
const RESULT_OF: Record<Remedy, SyncResult> = {
  reauthorize: 'reauth_required',
  operator: 'operator',
  retry: 'retrying',
};

/**
 * One channel now, due or not (`herald channel sync`): renew its token if it expires soon, read its
 * profile, record its health.
 */
export async function syncChannel(orgId: string, channelId: string, now: Date): Promise<SyncResult> {
  return (await syncOne(orgId, channelId, now, null)).result;
}

/**
 * `dueAt`: the index time a message found the channel at; it is looked at only if due by then or by
 * `now` (null: whatever its time).
 */
async function syncOne(
  orgId: string,
  channelId: string,
  now: Date,
  dueAt: string | null,
): Promise<{ result: SyncResult; platform?: Platform; error?: string }> {
  const stored = await getChannelWithSealedCredentials(orgId, channelId);
  const { channel, version } = stored;
  if (!channel || channel.status === 'disconnected') return { result: 'skipped' };
  if (dueAt !== null) {
    // A sync since the message was sent moved next_sync_at past both: nothing to do (no KMS call).
    const due = Date.parse(String(channel.next_sync_at ?? ''));
    const dueBy = Date.parse(dueAt);
    const by = Number.isFinite(dueBy) ? Math.max(now.getTime(), dueBy) : now.getTime();
    if (!(due <= by)) {
      // Its entry should be at next_sync_at; one still where this message found it (written from
      // an older read, or resent) would come back again and again: put it there.
      if (channel.next_sync_at && dueAt)
        await moveSyncEntry(
          {
            ...keys.channel(orgId, channelId),
            orgId,
            id: channelId,
            at: dueAt,
            position: keys.channelSync(dueAt, orgId, channelId).gsi2sk,
          },
          channel.next_sync_at,
        );
      return { result: 'skipped' };
    }
  }
  const credentials = await stored.open();
  const redactor = credentialRedactor();
  redactor.remember(credentials);
  const tokens = channelTokens({
    orgId,
    channelId,
    platform: channel.platform,
    credentials,
    version,
    remember: redactor.remember,
  });
  let refreshed = false;
  try {
    const expires = Date.parse(String(credentials.expires_at ?? ''));
    // A channel waiting for re-authorization tries its refresh token again: the refusal may have
    // been the operator's app (since repaired) or a platform's passing mistake.
    if (
      (Number.isFinite(expires) && expires - now.getTime() <= RENEW_WITHIN_MS) ||
      channel.status === 'reauth_required'
    )
      refreshed = await tokens.refresh();
    const connect = await connectFor(channel.platform);
    let account: Awaited<ReturnType<typeof connect.profile>>;
    try {
      account = await connect.profile(tokens.credentials);
    } catch (err) {
      // The token refused: renew it once and look again, as a delivery would.
      if (!(err instanceof PlatformError && err.category === 'auth_expired') || refreshed) throw err;
      if (!(await tokens.refreshAfter401())) throw err;
      refreshed = true;
      account = await connect.profile(tokens.credentials);
    }
    const at = now.toISOString();
    const written = await updateChannelHealth(
      channel,
      {
        handle: account.handle,
        avatar_url: account.avatar_url,
        followers: account.followers,
        status: 'live',
        last_sync_at: at,
        last_error: null,
        sync_failures: 0,
        next_sync_at: nextSyncAt(tokens.credentials, now),
      },
      at,
    );
    // Null: reconnected or disconnected meanwhile; what this look found is about the old grant.
    if (!written) return { result: 'skipped' };
    return { result: refreshed ? 'refreshed' : 'synced' };
  } catch (err) {
    const raw = err instanceof PlatformError ? err : new PlatformError('system', (err as Error).message);
    const failure = new PlatformError(raw.category, redactor.redact(tokens.explain(raw)), raw.opts);
    const remedy = await recordChannelFailure(channel, failure, now, { backoff: true });
    if (remedy === 'retry')
      logger.warn('channel sync failed; retrying later', {
        channel_id: channel.id,
        platform: channel.platform,
        error: failure.message,
      });
    return {
      result: remedy ? RESULT_OF[remedy] : 'skipped',
      platform: channel.platform,
      error: failure.message,
    };
  }
}
