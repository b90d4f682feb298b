import { randomUUID } from 'node:crypto';
import type { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { keys, parseWorkEntry } from '#adapters/keys';
import {
  batchGet,
  conditionFailureItem,
  countAll,
  fromItem,
  isConditionFailure,
  queryAll,
  queryPage,
  TABLE_NAME,
} from '#adapters/table';
import { countPostItem } from '#adapters/usage';
import type { ChannelRecord, Org, OrgSettings } from '#core/accounts';
import type { PostStatus } from '#core/constants';
import type { MediaAssetRecord } from '#core/media';
import { dueAt, type PostRecord } from '#core/posts';
import { ddb } from '#shared/clients';

// Posts: one item per post holding its variants and per-channel deliveries, so a post is read and
// written in one request. GSI1 (`ORG#<org>#POSTS#<status>`) serves the status filter.

export class ConcurrentChangeError extends Error {
  constructor() {
    super('the post or the workspace settings changed concurrently');
    this.name = 'ConcurrentChangeError';
  }
}

/** The organization's posts_per_month allowance is spent. */
export class PostQuotaError extends Error {
  constructor() {
    super('posts_per_month is exhausted');
    this.name = 'PostQuotaError';
  }
}

/** Count the post against posts_per_month in the same transaction as its write. */
export interface PostCount {
  period: string;
  limit: number;
}

/** Runs a transaction whose last item may be the posts_per_month count, naming which condition failed. */
async function transact(
  items: Record<string, unknown>[],
  count: PostCount | undefined,
  orgId: string,
): Promise<void> {
  const all = count ? [...items, countPostItem(orgId, count.period, count.limit)] : items;
  try {
    await ddb.send(new TransactWriteCommand({ TransactItems: all as never }));
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    const reasons = (err as TransactionCanceledException).CancellationReasons ?? [];
    if (count && reasons[all.length - 1]?.Code === 'ConditionalCheckFailed') throw new PostQuotaError();
    throw new ConcurrentChangeError();
  }
}

function toItem(post: PostRecord) {
  const due = dueAt(post);
  // Published posts sit in the same index by publish day, for the engagement sync (7 days back).
  const sync =
    post.status === 'published' && post.published_at
      ? keys.syncWork(post.published_at, post.org_id, post.id)
      : null;
  return {
    ...keys.post(post.org_id, post.id),
    ...keys.postByStatus(post.org_id, post.status, post.id),
    ...(due ? keys.dueWork(due, post.org_id, post.id) : {}),
    ...(sync ?? {}),
    entity: 'post',
    ...post,
  };
}

export async function getPost(orgId: string, postId: string): Promise<PostRecord | null> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.post(orgId, postId), ConsistentRead: true }),
  );
  return res.Item ? fromItem<PostRecord>(res.Item) : null;
}

/** The org (for its settings) and the post in one round trip. */
export async function getPostWithOrg(
  orgId: string,
  postId: string,
): Promise<{ org: Org | null; post: PostRecord | null }> {
  const [org, post] = await batchGet([keys.org(orgId), keys.post(orgId, postId)]);
  return { org: org ? fromItem<Org>(org) : null, post: post ? fromItem<PostRecord>(post) : null };
}

/** Everything createPost checks against, in one round trip: the org, the channels, the media assets. */
export async function loadPostContext(
  orgId: string,
  channelIds: string[],
  mediaIds: string[],
): Promise<{ org: Org | null; channels: Map<string, ChannelRecord>; media: Map<string, MediaAssetRecord> }> {
  const [org, ...found] = await batchGet([
    keys.org(orgId),
    ...channelIds.map((id) => keys.channel(orgId, id)),
    ...mediaIds.map((id) => keys.media(orgId, id)),
  ]);
  const channels = new Map<string, ChannelRecord>();
  const media = new Map<string, MediaAssetRecord>();
  for (const item of found) {
    if (item?.entity === 'channel') channels.set(item.id as string, fromItem<ChannelRecord>(item));
    if (item?.entity === 'media') media.set(item.id as string, fromItem<MediaAssetRecord>(item));
  }
  return { org: org ? fromItem<Org>(org) : null, channels, media };
}

export async function insertPost(post: PostRecord, count?: PostCount): Promise<void> {
  const put = { TableName: TABLE_NAME, Item: toItem(post), ConditionExpression: 'attribute_not_exists(pk)' };
  if (!count) {
    try {
      await ddb.send(new PutCommand({ ...put, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }));
    } catch (err) {
      // Ids are fresh ULIDs: an item already under this one is our own write, applied by an
      // earlier SDK attempt whose answer was lost.
      if (conditionFailureItem(err)?.created_at === post.created_at) return;
      throw err;
    }
    return;
  }
  await transact([{ Put: put }], count, post.org_id);
}

/** The settings a decision was based on must still hold when it is written. */
function settingsGuard(orgId: string, settings: Partial<OrgSettings>) {
  const names: Record<string, string> = { '#s': 'settings' };
  const values: Record<string, unknown> = {};
  const conds = Object.entries(settings).map(([k, v]) => {
    names[`#${k}`] = k;
    values[`:${k}`] = v;
    return `#s.#${k} = :${k}`;
  });
  return {
    ConditionCheck: {
      TableName: TABLE_NAME,
      Key: keys.org(orgId),
      ConditionExpression: ['attribute_exists(pk)', ...conds].join(' AND '),
      ...(conds.length ? { ExpressionAttributeNames: names, ExpressionAttributeValues: values } : {}),
    },
  };
}

/**
 * Writes `next` over the version that was read, atomically with a check that the org settings the
 * decision used are unchanged. Throws ConcurrentChangeError when either moved.
 */
export async function replacePost(
  next: PostRecord,
  readVersion: number,
  settings: Partial<OrgSettings>,
  count?: PostCount,
): Promise<PostRecord> {
  const written = { ...next, version: readVersion + 1 };
  await transact(
    [
      settingsGuard(next.org_id, settings),
      {
        Put: {
          TableName: TABLE_NAME,
          Item: toItem(written),
          ConditionExpression: 'version = :v',
          ExpressionAttributeValues: { ':v': readVersion },
        },
      },
    ],
    count,
    next.org_id,
  );
  return written;
}

/** Deletes the post as read, only while dangerous operations are still on. */
export async function removePost(post: PostRecord): Promise<void> {
  try {
    await ddb.send(
      new TransactWriteCommand({
        TransactItems: [
          settingsGuard(post.org_id, { dangerous_ops: true }),
          {
            Delete: {
              TableName: TABLE_NAME,
              Key: keys.post(post.org_id, post.id),
              ConditionExpression: 'version = :v',
              ExpressionAttributeValues: { ':v': post.version },
            },
          },
        ],
      }),
    );
  } catch (err) {
    if (isConditionFailure(err)) throw new ConcurrentChangeError();
    throw err;
  }
}

/** One page of posts, newest first; `afterId` is the last post id of the previous page. */
export async function queryPosts(
  orgId: string,
  opts: { limit: number; afterId?: string | undefined; status?: PostStatus | undefined },
): Promise<{ posts: PostRecord[]; hasMore: boolean }> {
  const after = opts.afterId ? keys.post(orgId, opts.afterId) : undefined;
  const page = opts.status
    ? await queryPage<PostRecord>(
        {
          IndexName: 'gsi1',
          KeyConditionExpression: 'gsi1pk = :p',
          ExpressionAttributeValues: { ':p': keys.postsByStatus(orgId, opts.status).gsi1pk },
        },
        opts.limit,
        after && opts.afterId
          ? { ...after, ...keys.postByStatus(orgId, opts.status, opts.afterId) }
          : undefined,
      )
    : await queryPage<PostRecord>(
        {
          ConsistentRead: true,
          KeyConditionExpression: 'pk = :p AND begins_with(sk, :prefix)',
          ExpressionAttributeValues: {
            ':p': keys.postsOfOrg(orgId).pk,
            ':prefix': keys.postsOfOrg(orgId).skPrefix,
          },
        },
        opts.limit,
        after,
      );
  return { posts: page.items, hasMore: page.hasMore };
}

/**
 * Read-modify-write of one post under optimistic locking: `change` gets the current post and
 * returns the next one (or null: nothing to write). Concurrent writers (one worker per channel,
 * the sweeper, API calls) each retry from a fresh read, so no change is ever lost.
 */
export async function mutatePost(
  orgId: string,
  postId: string,
  change: (post: PostRecord) => PostRecord | null,
  attempts = 12,
): Promise<{ before: PostRecord; after: PostRecord } | null> {
  for (let i = 0; i < attempts; i++) {
    const before = await getPost(orgId, postId);
    if (!before) return null;
    const next = change(before);
    if (!next) return { before, after: before };
    const after = { ...next, version: before.version + 1 };
    const writeId = randomUUID();
    try {
      await ddb.send(
        new PutCommand({
          TableName: TABLE_NAME,
          Item: { ...toItem(after), write_id: writeId },
          ConditionExpression: 'version = :v',
          ExpressionAttributeValues: { ':v': before.version },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { before, after };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      // The SDK retried a write DynamoDB had applied (its answer was lost): the item is ours.
      if (conditionFailureItem(err)?.write_id === writeId) return { before, after };
      await new Promise((r) => setTimeout(r, Math.random() * 20 * (i + 1)));
    }
  }
  throw new ConcurrentChangeError();
}

/** The entries of one bucket of the work index (GSI2), parsed. */
async function workBucket(gsi2pk: string) {
  const items = await queryAll({
    IndexName: 'gsi2',
    KeyConditionExpression: 'gsi2pk = :p',
    ExpressionAttributeValues: { ':p': gsi2pk },
  });
  return items.flatMap((item) => parseWorkEntry(item.gsi2sk) ?? []);
}

/**
 * Post ids in one minute bucket of the due-work index, optionally only those due after `after`
 * and at or before `until` (the entries' sort key starts with their ISO time, so this is a range
 * read of just those entries, however full the bucket is).
 */
export async function dueInBucket(
  minute: Date,
  range: { after?: Date; until?: Date } = {},
): Promise<Array<{ orgId: string; postId: string; at: string }>> {
  const { after, until } = range;
  const from = after ? `${new Date(after.getTime() + 1).toISOString()}` : '';
  const to = until ? `${until.toISOString()}#~` : '';
  const items = await queryAll({
    IndexName: 'gsi2',
    KeyConditionExpression: `gsi2pk = :p${from && to ? ' AND gsi2sk BETWEEN :from AND :to' : from ? ' AND gsi2sk >= :from' : to ? ' AND gsi2sk <= :to' : ''}`,
    ExpressionAttributeValues: {
      ':p': keys.dueBucket(minute).gsi2pk,
      ...(from ? { ':from': from } : {}),
      ...(to ? { ':to': to } : {}),
    },
  });
  return items.flatMap((item) => {
    const e = parseWorkEntry(item.gsi2sk);
    return e ? [{ at: e.at, orgId: e.orgId, postId: e.id }] : [];
  });
}

/** Posts published on one UTC day (`day` is YYYY-MM-DD), across organizations (GSI2, paginated). */
export async function postsPublishedOn(day: string): Promise<Array<{ orgId: string; postId: string }>> {
  const entries = await workBucket(keys.syncBucket(day).gsi2pk);
  return entries.map((e) => ({ orgId: e.orgId, postId: e.id }));
}

/** The posts, strongly consistent; missing ones (deleted since) are left out. */
export async function loadPosts(refs: Array<{ orgId: string; postId: string }>): Promise<PostRecord[]> {
  const items = await batchGet(refs.map((r) => keys.post(r.orgId, r.postId)));
  return items.flatMap((item) => (item ? [fromItem<PostRecord>(item)] : []));
}

/** Posts of one status in the organization (GSI1, paginated; eventually consistent). */
export function countPostsByStatus(orgId: string, status: PostStatus): Promise<number> {
  return countAll({
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :p',
    ExpressionAttributeValues: { ':p': keys.postsByStatus(orgId, status).gsi1pk },
  });
}
