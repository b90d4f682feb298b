import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { fromItem, isConditionFailure, pages, queryAll, TABLE_NAME, updateIf } from '#adapters/table';
import { type InboxPollRecord, pollSlotOf } from '#core/inbox';
import type { Platform } from '#core/platforms';
import { ddb } from '#shared/clients';

// What the inbox poller keeps per channel (entity `inbox_poll`, core/inbox.ts InboxPollRecord):
// the connector's cursor, the last poll and its error, the backoff; and the channel's entry in the
// poll index (gsi2 `INBOXSLOT#<slot>`). The channel's `inbox` state reads it.

export async function getInboxPoll(orgId: string, channelId: string): Promise<InboxPollRecord | null> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.inboxPoll(orgId, channelId) }),
  );
  return res.Item ? fromItem<InboxPollRecord>(res.Item) : null;
}

/** Every poll state of an organization, by channel id (the channel list's `inbox`: one Query). */
export async function inboxPollsOfOrg(orgId: string): Promise<Map<string, InboxPollRecord>> {
  const k = keys.inboxPollsOfOrg(orgId);
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
    ExpressionAttributeValues: { ':pk': k.pk, ':sk': k.skPrefix },
  });
  return new Map(items.map((i) => fromItem<InboxPollRecord>(i)).map((p) => [p.channel_id, p]));
}

/**
 * The channel's poll state and its place in the poll index, if it has none yet (a conditional put:
 * a state that exists keeps its cursor). True when this call created it.
 */
export async function ensureInboxPoll(
  channel: { org_id: string; id: string; platform: Platform },
  now: Date,
): Promise<boolean> {
  const at = now.toISOString();
  const rec: InboxPollRecord = {
    org_id: channel.org_id,
    channel_id: channel.id,
    platform: channel.platform,
    cursor: null,
    last_synced_at: null,
    error: null,
    failures: 0,
    next_poll_at: null,
    created_at: at,
    updated_at: at,
  };
  try {
    await ddb.send(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: {
          ...keys.inboxPoll(channel.org_id, channel.id),
          ...keys.inboxSlot(pollSlotOf(channel.id), channel.org_id, channel.id),
          entity: 'inbox_poll',
          ...rec,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/**
 * After a page's items are written: its cursor, and a clean bill (no error, no backoff). Only on a
 * state that still exists (a disconnect deleted it: nothing is recreated). False otherwise.
 */
export function saveInboxPage(
  orgId: string,
  channelId: string,
  cursor: Record<string, unknown>,
  now: Date,
): Promise<boolean> {
  const at = now.toISOString();
  return updateIf({
    Key: keys.inboxPoll(orgId, channelId),
    UpdateExpression:
      'SET #cursor = :c, last_synced_at = :at, #error = :null, failures = :zero, next_poll_at = :null, updated_at = :at',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeNames: { '#cursor': 'cursor', '#error': 'error' },
    ExpressionAttributeValues: { ':c': cursor, ':at': at, ':null': null, ':zero': 0 },
  });
}

/**
 * A poll the platform refused for a while (rate limited, down): one more failure in a row, no poll
 * before `nextPollAt` (the caller's backoff), and why. Conditioned on the failures the poller read,
 * so two polls that fail together count once. The cursor is untouched.
 */
export function recordInboxPollFailure(
  poll: Pick<InboxPollRecord, 'org_id' | 'channel_id' | 'failures'>,
  error: string,
  nextPollAt: Date,
  now: Date,
): Promise<boolean> {
  return updateIf({
    Key: keys.inboxPoll(poll.org_id, poll.channel_id),
    UpdateExpression: 'SET failures = :f, next_poll_at = :next, #error = :e, updated_at = :at',
    ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(failures) OR failures = :was)',
    ExpressionAttributeNames: { '#error': 'error' },
    ExpressionAttributeValues: {
      ':f': (poll.failures ?? 0) + 1,
      ':was': poll.failures ?? 0,
      ':next': nextPollAt.toISOString(),
      ':e': error.slice(0, 1000),
      ':at': now.toISOString(),
    },
  });
}

/** The channel is gone (disconnected): its poll state and index entry go with it. */
export async function deleteInboxPoll(orgId: string, channelId: string): Promise<void> {
  await ddb.send(new DeleteCommand({ TableName: TABLE_NAME, Key: keys.inboxPoll(orgId, channelId) }));
}

/** The channels of one slot of the poll index, a page at a time (the index holds their keys only). */
export async function* channelsInSlot(
  slot: number,
): AsyncGenerator<Array<{ orgId: string; channelId: string }>> {
  for await (const page of pages({
    IndexName: 'gsi2',
    KeyConditionExpression: 'gsi2pk = :b',
    ExpressionAttributeValues: { ':b': keys.inboxSlotBucket(slot).gsi2pk },
  })) {
    const refs = (page.Items ?? []).flatMap((item) => {
      const sk = String(item.gsi2sk ?? '');
      const at = sk.indexOf('#');
      return at > 0 ? [{ orgId: sk.slice(0, at), channelId: sk.slice(at + 1) }] : [];
    });
    if (refs.length) yield refs;
  }
}
