import { countAppRefusal } from '#adapters/app-refusals';
import { credentialRedactor, getChannelWithSealedCredentials } from '#adapters/channel-credentials';
import { putNewInboxItems } from '#adapters/inbox';
import { deleteInboxPoll, getInboxPoll, recordInboxPollFailure, saveInboxPage } from '#adapters/inbox-polls';
import { pauseInForce } from '#adapters/pacing';
import { connectorFor } from '#adapters/platforms/index';
import { type InboxFetched, PlatformError } from '#adapters/platforms/types';
import { postIdsOf } from '#adapters/post-refs';
import type { ChannelRecord } from '#core/accounts';
import {
  backfillSince,
  channelInbox,
  type InboxItemRecord,
  type InboxPollRecord,
  inboxItemId,
  pollBackoffSeconds,
} from '#core/inbox';
import type { InboxPollMessage } from '#core/messages';
import { timeScale } from '#shared/config';
import { inboxDisabledPlatforms, inboxRetentionDays } from '#shared/inbox-settings';
import { logger } from '#shared/logger';
import { inboxPolled } from '#shared/metrics';
import { recordChannelFailure } from '#usecases/support/channel-health';
import { channelTokens } from '#usecases/support/channel-tokens';

// The inbox poller's worker (the finder: usecases/inbox-poll.ts): one message per channel, whose
// new comments, mentions and messages it reads page by page from the platform and keeps as inbox
// items. Each page is written before its cursor is saved, so a poll killed between the two reads
// the page again next time and the items' ids (derived from channel and platform id, written by a
// conditional put) make that, and any two polls that overlap, write each item once; the stream
// relay emits `inbox.received` from the item's creation, so once too. A refusal is handled by who
// has to act, as for a delivery (core/channel-health.ts): the person (reauth_required), the operator
// (counted for the channel sync finder's alarm line), or time (the poll state's backoff).

/** Pages one poll reads at most: a channel with more waiting goes on at its next turn. */
export const MAX_PAGES_PER_POLL = 5;

export type PollResult =
  /** Read (with or without new items). */
  | 'polled'
  /** Nothing to read: gone, disconnected, waiting for re-authorization, no inbox, turned off. */
  | 'skipped'
  /** A failed poll's backoff, or a rate-limit pause of the channel or its platform app, is in force. */
  | 'waiting'
  /** The platform refused for a while: backoff recorded. */
  | 'retrying'
  | 'reauth_required'
  | 'operator';

export interface PollOutcome {
  result: PollResult;
  pages: number;
  /** Items this poll created (the others were there already). */
  received: number;
  /** Items the platform returned, own ones included (what a duplicate poll reads again). */
  fetched: number;
  billedReads: number;
}

const outcome = (result: PollResult, more: Partial<PollOutcome> = {}): PollOutcome => ({
  result,
  pages: 0,
  received: 0,
  fetched: 0,
  billedReads: 0,
  ...more,
});

/** An item written by the channel's own account (its own reply in a thread) is not an inbox item. */
function ownItem(item: InboxFetched, channel: ChannelRecord): boolean {
  if (channel.account_id && item.author.platform_id === channel.account_id) return true;
  const handle = (h: string) => h.replace(/^@/, '').toLowerCase();
  return handle(item.author.handle) === handle(channel.handle);
}

/** The stored item of a fetched one (new: unread, no replies). */
export function inboxRecordOf(
  item: InboxFetched,
  channel: Pick<ChannelRecord, 'org_id' | 'id' | 'platform'>,
  postId: string | null,
  receivedAt: string,
): InboxItemRecord {
  return {
    id: inboxItemId(channel.id, item.platformId, item.createdAt),
    org_id: channel.org_id,
    channel_id: channel.id,
    platform: channel.platform,
    kind: item.kind,
    status: 'unread',
    text: item.text,
    url: item.url,
    author: item.author,
    post_id: postId,
    in_reply_to: item.inReplyTo,
    conversation_id: item.conversationId,
    platform_id: item.platformId,
    created_at: item.createdAt,
    received_at: receivedAt,
    replies: [],
    ref: item.ref ?? null,
    root_id: item.rootId,
    updated_at: receivedAt,
    version: 1,
  };
}

/** The item's expiry (epoch seconds): the retention after it was received. */
const ttlOf = (r: InboxItemRecord): number =>
  Math.ceil(Date.parse(r.received_at) / 1000) + inboxRetentionDays() * 86_400;

/**
 * Primary course: read the channel and its poll state; skip what cannot or need not be polled now
 * (disconnected, waiting for re-authorization, no inbox, turned off, backing off, paced); then read
 * pages from the state's cursor (7 days back on the first poll), and for each: drop the account's
 * own items, find the Herald posts they answer, write the new items, then save the cursor; stop
 * after MAX_PAGES_PER_POLL. A platform's refusal is recorded (see above); anything else (a bug,
 * DynamoDB) fails the message, which comes back and then goes to the queue's DLQ.
 */
export async function pollChannelInbox(msg: InboxPollMessage, now: Date): Promise<PollOutcome> {
  const [stored, poll] = await Promise.all([
    getChannelWithSealedCredentials(msg.org_id, msg.channel_id),
    getInboxPoll(msg.org_id, msg.channel_id),
  ]);
  const { channel } = stored;
  if (!poll) return outcome('skipped');
  if (!channel || channel.status === 'disconnected') {
    // The relay deletes it on disconnect; one left behind (a channel erased meanwhile) goes now.
    await deleteInboxPoll(msg.org_id, msg.channel_id);
    return outcome('skipped');
  }
  if (channel.status !== 'live') return outcome('skipped');
  const state = channelInbox({
    platform: channel.platform,
    grantedScopes: channel.granted_scopes,
    accountId: channel.account_id,
    poll,
    off: inboxDisabledPlatforms().has(channel.platform),
  });
  if (!state.available) return outcome('skipped');
  const connector = await connectorFor(channel.platform);
  if (!connector.inbox) return outcome('skipped');
  if (poll.next_poll_at && Date.parse(poll.next_poll_at) > now.getTime()) return outcome('waiting');
  if (await pauseInForce(channel, now)) return outcome('waiting');

  const credentials = await stored.open();
  const redactor = credentialRedactor();
  redactor.remember(credentials);
  const tokens = channelTokens({
    orgId: msg.org_id,
    channelId: msg.channel_id,
    platform: channel.platform,
    credentials,
    version: stored.version,
    remember: redactor.remember,
  });
  const done = { pages: 0, received: 0, fetched: 0, billedReads: 0 };
  let cursor = poll.cursor;
  const since = backfillSince(now);
  try {
    for (let more = true; more && done.pages < MAX_PAGES_PER_POLL; ) {
      const page = await connector.inbox.poll({
        channel: {
          id: channel.id,
          handle: channel.handle,
          platform: channel.platform,
          accountId: channel.account_id ?? null,
        },
        credentials: tokens.credentials,
        tokens,
        kinds: state.kinds,
        cursor,
        since,
        // Herald's recent posts would cost a read of every ref of the channel on every poll: the
        // connectors that read post by post list the account's recent posts from the platform.
        recentPosts: [],
        billedReads: (n) => {
          done.billedReads += n;
        },
      });
      done.pages++;
      done.fetched += page.items.length;
      const items = page.items.filter((i) => state.kinds.includes(i.kind) && !ownItem(i, channel));
      const posts = await postIdsOf(
        msg.org_id,
        msg.channel_id,
        items.flatMap((i) => [i.rootId, i.inReplyTo].filter((x): x is string => !!x)),
      );
      const receivedAt = now.toISOString();
      const records = items.map((i) =>
        inboxRecordOf(
          i,
          channel,
          (i.rootId ? posts.get(i.rootId) : undefined) ??
            (i.inReplyTo ? posts.get(i.inReplyTo) : undefined) ??
            null,
          receivedAt,
        ),
      );
      done.received += (await putNewInboxItems(records, ttlOf)).length;
      // Only now: a poll killed before this line reads the page again (its items dedupe).
      if (!(await saveInboxPage(msg.org_id, msg.channel_id, page.cursor, now))) break;
      cursor = page.cursor;
      more = page.more;
    }
  } catch (err) {
    if (!(err instanceof PlatformError)) throw err;
    const result = await recordFailure(channel, poll, err, tokens, redactor, now);
    return outcome(result, done);
  } finally {
    if (done.received || done.billedReads)
      inboxPolled({ orgId: msg.org_id, channelId: msg.channel_id, platform: channel.platform, ...done });
  }
  return outcome('polled', done);
}

/**
 * A platform refusal: the poll state backs off (the platform's retry-after when it is later), and a
 * refused grant or app goes through the channel's health as a delivery's would.
 */
async function recordFailure(
  channel: ChannelRecord,
  poll: InboxPollRecord,
  raw: PlatformError,
  tokens: ReturnType<typeof channelTokens>,
  redactor: ReturnType<typeof credentialRedactor>,
  now: Date,
): Promise<PollResult> {
  const failure = new PlatformError(raw.category, redactor.redact(tokens.explain(raw)), raw.opts);
  const failures = (poll.failures ?? 0) + 1;
  const waitMs = Math.max(
    pollBackoffSeconds(failures) * 1000 * timeScale(),
    (raw.opts.retryAfterSeconds ?? 0) * 1000,
  );
  await recordInboxPollFailure(poll, failure.message, new Date(now.getTime() + waitMs), now);
  let result: PollResult = 'retrying';
  if (failure.category === 'auth_expired' || failure.opts.operator) {
    const remedy = await recordChannelFailure(channel, failure, now, { backoff: false });
    if (remedy === 'operator') await countAppRefusal(channel.platform, failure.message);
    if (remedy === 'reauthorize') result = 'reauth_required';
    else if (remedy === 'operator') result = 'operator';
  }
  logger.warn('inbox poll failed', {
    org_id: channel.org_id,
    channel_id: channel.id,
    platform: channel.platform,
    category: failure.category,
    result,
    error: failure.message,
  });
  return result;
}
