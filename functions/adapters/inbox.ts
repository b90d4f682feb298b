import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { conditionFailureItem, fromItem, isConditionFailure, setClause, TABLE_NAME } from '#adapters/table';
import { mapLimit } from '#core/concurrency';
import { deterministicId } from '#core/ids';
import type { InboxItemRecord, InboxKind, InboxStatus } from '#core/inbox';
import { ddb } from '#shared/clients';

// Inbox items (entity `inbox_item`, core/inbox.ts): one per (channel, platform id), under the
// organization, newest first by id; by status in gsi1; expiring by TTL after the retention.

const WRITE_CONCURRENCY = 8;

/** The item as stored: its keys, its status entry, its expiry. */
export function inboxItemOf(r: InboxItemRecord, ttlSeconds: number): Record<string, unknown> {
  return {
    ...keys.inboxItem(r.org_id, r.id),
    ...keys.inboxByStatus(r.org_id, r.status, r.id),
    entity: 'inbox_item',
    ...r,
    ttl: ttlSeconds,
  };
}

/**
 * Writes the items not already there (a conditional put each: an item two polls read is written
 * once, and so emits one `inbox.received` from the stream). Returns the ones this call created.
 * `ttlSeconds`: when each expires (epoch seconds), from its received_at and the retention.
 */
export async function putNewInboxItems(
  records: readonly InboxItemRecord[],
  ttlOf: (r: InboxItemRecord) => number,
): Promise<InboxItemRecord[]> {
  const created = await mapLimit([...records], WRITE_CONCURRENCY, async (r) => {
    try {
      await ddb.send(
        new PutCommand({
          TableName: TABLE_NAME,
          Item: inboxItemOf(r, ttlOf(r)),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  });
  return records.filter((_, i) => created[i]);
}

/** One item of the organization (strongly consistent: a status just set reads back). */
export async function getInboxItem(orgId: string, itemId: string): Promise<InboxItemRecord | null> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.inboxItem(orgId, itemId), ConsistentRead: true }),
  );
  return res.Item ? fromItem<InboxItemRecord>(res.Item) : null;
}

export interface InboxFilter {
  status?: InboxStatus | undefined;
  kind?: InboxKind | undefined;
  channelId?: string | undefined;
  postId?: string | undefined;
}

/** Query requests one page may spend looking for items that pass the filters. */
const FILTERED_READS = 4;
/** Items each of those requests reads (the filters drop some after DynamoDB counted them). */
const FILTERED_PAGE = 200;

/**
 * One page of items, newest first (their ids' time part is the platform's created_at). With
 * `status`, its own gsi1 partition; the other filters are FilterExpressions, so a page keeps
 * reading (at most FILTERED_READS requests) until it has `limit` matches. `lastKey`: the id to
 * start the next page after — the last item returned, or, when the reads ran out first, the last
 * item read (which may not match: the next page simply starts there).
 */
export async function queryInbox(
  orgId: string,
  opts: { limit: number; afterId?: string | undefined } & InboxFilter,
): Promise<{ items: InboxItemRecord[]; hasMore: boolean; lastKey: string | null }> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const filters: string[] = [];
  const eq = (attr: string, value: string | undefined) => {
    if (value === undefined) return;
    names[`#${attr}`] = attr;
    values[`:${attr}`] = value;
    filters.push(`#${attr} = :${attr}`);
  };
  eq('kind', opts.kind);
  eq('channel_id', opts.channelId);
  eq('post_id', opts.postId);
  const byStatus = opts.status !== undefined;
  const partition = byStatus
    ? {
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :p',
        ExpressionAttributeValues: {
          ...values,
          ':p': keys.inboxOfStatus(orgId, opts.status as string).gsi1pk,
        },
      }
    : {
        ConsistentRead: true,
        KeyConditionExpression: 'pk = :p AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: {
          ...values,
          ':p': keys.inboxOfOrg(orgId).pk,
          ':prefix': keys.inboxOfOrg(orgId).skPrefix,
        },
      };
  const keyOf = (id: string): Record<string, unknown> => ({
    ...keys.inboxItem(orgId, id),
    ...(byStatus ? keys.inboxByStatus(orgId, opts.status as string, id) : {}),
  });
  const filtered = filters.length > 0;
  let start = opts.afterId ? keyOf(opts.afterId) : undefined;
  const found: InboxItemRecord[] = [];
  for (let read = 0; read < (filtered ? FILTERED_READS : 1); read++) {
    const res = await ddb.send(
      new QueryCommand({
        ...partition,
        ...(filtered ? { FilterExpression: filters.join(' AND '), ExpressionAttributeNames: names } : {}),
        TableName: TABLE_NAME,
        ScanIndexForward: false,
        // One more than the page tells whether another follows, without a second request.
        Limit: filtered ? Math.max(FILTERED_PAGE, opts.limit + 1) : opts.limit + 1,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of res.Items ?? []) found.push(fromItem<InboxItemRecord>(item));
    if (found.length > opts.limit) {
      const items = found.slice(0, opts.limit);
      return { items, hasMore: true, lastKey: items.at(-1)?.id ?? null };
    }
    if (!res.LastEvaluatedKey) return { items: found, hasMore: false, lastKey: null };
    start = res.LastEvaluatedKey;
  }
  // The reads ran out before the page filled: the next page starts after the last item read.
  const sk = String(start?.sk ?? '');
  return { items: found, hasMore: true, lastKey: sk.slice(keys.inboxOfOrg(orgId).skPrefix.length) };
}

/**
 * Gives the item `status`: moves its gsi1 entry with it, bumps its version and sets updated_at, in
 * one UpdateItem. Conditioned on the item existing, on its status being another one, and, with
 * `expectedVersion`, on the version the caller read (null: an item never written since the poller
 * created it, which has none). Idempotent: an item that already has the status is answered as it
 * is, unwritten (a retried call, or an SDK retry of a write whose answer was lost). Null when the
 * item is gone or changed since the version read (read it again).
 */
export async function setInboxStatus(
  orgId: string,
  itemId: string,
  status: InboxStatus,
  now: string,
  expectedVersion?: number | null,
): Promise<InboxItemRecord | null> {
  const names: Record<string, string> = { '#version': 'version', '#status': 'status' };
  const values: Record<string, unknown> = { ':one': 1, ':status': status };
  const set = setClause({ ...keys.inboxByStatus(orgId, status, itemId), updated_at: now }, names, values);
  const versionCheck =
    expectedVersion === undefined
      ? ''
      : expectedVersion === null
        ? ' AND attribute_not_exists(#version)'
        : ' AND #version = :expected';
  if (typeof expectedVersion === 'number') values[':expected'] = expectedVersion;
  try {
    const res = await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.inboxItem(orgId, itemId),
        // An item the poller created has no version: it counts as 1 (core/inbox.ts inboxItemVersion).
        UpdateExpression: `SET #status = :status, ${set}, #version = if_not_exists(#version, :one) + :one`,
        ConditionExpression: `attribute_exists(pk) AND #status <> :status${versionCheck}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return res.Attributes ? fromItem<InboxItemRecord>(res.Attributes) : null;
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    const current = conditionFailureItem(err);
    return current?.status === status ? fromItem<InboxItemRecord>(current) : null;
  }
}

/**
 * How many unread items the organization has, up to `cap` (the console's navigation shows "99+"):
 * Select COUNT on the unread gsi1 partition, stopping once `cap` is reached. Eventually consistent.
 */
export async function countUnread(orgId: string, cap: number): Promise<number> {
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const res = await ddb.send(
      new QueryCommand({
        TableName: TABLE_NAME,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :p',
        ExpressionAttributeValues: { ':p': keys.inboxOfStatus(orgId, 'unread').gsi1pk },
        Select: 'COUNT',
        Limit: cap - count,
        ExclusiveStartKey: start,
      }),
    );
    count += res.Count ?? 0;
    start = res.LastEvaluatedKey;
  } while (start && count < cap);
  return Math.min(count, cap);
}

/**
 * Items polled before the post they answer had its ref (the relay writes refs a moment after the
 * part is published): those of the channel created since `sinceMs`, whose root or parent is one of
 * `postOf`'s platform ids and that carry no post_id yet, get it. One Query of the org's items since
 * then (ids sort by the platform's created_at, so only that window is read) and one conditional
 * write per item found, at the version read; an item that has a post_id already is left as it is.
 */
export async function linkInboxItemsToPosts(
  orgId: string,
  channelId: string,
  postOf: ReadonlyMap<string, string>,
  sinceMs: number,
): Promise<number> {
  const k = keys.inboxOfOrg(orgId);
  const from = deterministicId('inbox', Math.max(0, sinceMs), new Uint8Array(16));
  const res = await ddb.send(
    new QueryCommand({
      TableName: TABLE_NAME,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      FilterExpression: 'channel_id = :ch',
      ExpressionAttributeValues: {
        ':pk': k.pk,
        ':from': `${k.skPrefix}${from}`,
        ':to': `${k.skPrefix}~`,
        ':ch': channelId,
      },
      Limit: 200,
    }),
  );
  const found = (res.Items ?? [])
    .map((i) => fromItem<InboxItemRecord>(i))
    .flatMap((r) => {
      if (r.post_id) return [];
      const postId = postOf.get(r.root_id ?? '') ?? postOf.get(r.in_reply_to ?? '');
      return postId ? [{ r, postId }] : [];
    });
  const linked = await mapLimit(found, WRITE_CONCURRENCY, async ({ r, postId }) => {
    try {
      await ddb.send(
        new UpdateCommand({
          TableName: TABLE_NAME,
          Key: keys.inboxItem(orgId, r.id),
          UpdateExpression: 'SET post_id = :p, version = if_not_exists(version, :one) + :one',
          // At the version read: a write since (a status, a reply, another link) wins.
          ConditionExpression: r.version
            ? 'attribute_exists(pk) AND version = :v'
            : 'attribute_exists(pk) AND attribute_not_exists(version)',
          ExpressionAttributeValues: { ':p': postId, ':one': 1, ...(r.version ? { ':v': r.version } : {}) },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  });
  return linked.filter(Boolean).length;
}
