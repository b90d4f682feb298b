import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { conditionFailureItem, fromItem, isConditionFailure, TABLE_NAME } from '#adapters/table';
import type { InboxItemRecord, InboxReply } from '#core/inbox';
import { ddb } from '#shared/clients';

// An inbox item's replies (core/inbox-replies.ts decides, this writes). Appending is conditioned
// on the item's version (a concurrent append or status change makes the writer read again); a
// claim or an outcome rewrites one reply in place — replies are only ever appended, so an index
// keeps naming the same reply — conditioned on that reply's id and the item's version as read: the
// reply is exactly as it was decided on. So two workers never both claim one reply, and a worker
// whose claim was taken over (its lease ran out) records nothing.

/** The item, strongly consistent (a reply's worker decides on it); null when missing. */
export async function getInboxItem(orgId: string, itemId: string): Promise<InboxItemRecord | null> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.inboxItem(orgId, itemId), ConsistentRead: true }),
  );
  return res.Item ? fromItem<InboxItemRecord>(res.Item) : null;
}

/**
 * The condition that the item is still at the version read, and the version a write gives it. An
 * item the poller wrote has no version: it counts as 1 (as the status writes count it), so the
 * first write makes it 2 and every write moves the item's ETag.
 */
function atVersion(item: Pick<InboxItemRecord, 'version'>): {
  condition: string;
  values: Record<string, number>;
} {
  if (item.version === undefined)
    return { condition: 'attribute_not_exists(version)', values: { ':next': 2 } };
  return { condition: 'version = :v', values: { ':v': item.version, ':next': item.version + 1 } };
}

/** Another writer changed the item first: read it again and decide again. */
export class ItemChangedError extends Error {
  constructor(readonly current: InboxItemRecord | null) {
    super('the inbox item changed meanwhile');
    this.name = 'ItemChangedError';
  }
}

/**
 * Appends `reply` to `item` as read: refused (ItemChangedError, with the item as it is now) when
 * its version moved or it is gone. Returns the item as written.
 */
export async function appendReply(
  item: InboxItemRecord,
  reply: InboxReply,
  now: Date,
): Promise<InboxItemRecord> {
  const { condition, values } = atVersion(item);
  try {
    const res = await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.inboxItem(item.org_id, item.id),
        UpdateExpression:
          'SET replies = list_append(if_not_exists(replies, :empty), :r), version = :next, updated_at = :at',
        ConditionExpression:
          'attribute_exists(pk) AND ' +
          // At the version read: the caller counted its replies (MAX_REPLIES_PER_ITEM) on that read.
          condition,
        ExpressionAttributeValues: {
          ':r': [reply],
          ':empty': [],
          ...values,
          ':at': now.toISOString(),
        },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return fromItem<InboxItemRecord>(res.Attributes ?? {});
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    const current = conditionFailureItem(err);
    throw new ItemChangedError(current ? fromItem<InboxItemRecord>(current) : null);
  }
}

/**
 * Writes `next` over the reply at `index` of `item` as read, only while the item is still at the
 * version read (every reply write moves it): the reply is then exactly as decided on. Returns the
 * item as written, or the item as it is now (null: gone) for the caller to decide again.
 */
export async function replaceReply(
  item: InboxItemRecord,
  index: number,
  next: InboxReply,
  now: Date,
): Promise<{ written: InboxItemRecord } | { current: InboxItemRecord | null }> {
  const { condition, values } = atVersion(item);
  const path = `replies[${Math.trunc(index)}]`;
  try {
    const res = await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.inboxItem(item.org_id, item.id),
        UpdateExpression: `SET ${path} = :reply, version = :next, updated_at = :at`,
        ConditionExpression: `${path}.#id = :id AND ${condition}`,
        ExpressionAttributeNames: { '#id': 'id' },
        ExpressionAttributeValues: {
          ':reply': next,
          ...values,
          ':at': now.toISOString(),
          ':id': next.id,
        },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { written: fromItem<InboxItemRecord>(res.Attributes ?? {}) };
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    const current = conditionFailureItem(err);
    return { current: current ? fromItem<InboxItemRecord>(current) : null };
  }
}
