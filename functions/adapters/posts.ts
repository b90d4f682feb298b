import { randomBytes, randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keys, parseWorkEntry } from '#adapters/keys';
import {
  batchGet,
  conditionFailureItem,
  countAll,
  fromItem,
  isConditionFailure,
  neverApplied,
  queryAll,
  queryPage,
  sendWrite,
  setClause,
  TABLE_NAME,
} from '#adapters/table';
import type { ChannelRecord, Org } from '#core/accounts';
import type { PostStatus } from '#core/constants';
import type { MediaAssetRecord } from '#core/media';
import { type DeliveryRecord, dueAt, type PostRecord } from '#core/posts';
import { ddb } from '#shared/clients';

// Posts: one item per post holding its variants and per-channel deliveries, so a post is read and
// written in one request. GSI1 (`ORG#<org>#POSTS#<status>`) serves the status filter.
//
// The write rule, for every write of a post item here: each one moves `version`, and a write that
// carries attributes it did not mean to change (mutatePost's whole-item Put; updatePost's, which
// writes what differs from its read) is conditioned on the version it read. So no write undoes
// another: whatever landed since a read moved the version, and the writer reads again. A delivery
// write (writeDelivery) is conditioned on that one delivery's `rev` instead, so the channels of
// one post do not contend; it still moves the version (ADD), so the whole-post writers — the API's
// reschedule, delete and approval, the watchdog — re-read rather than overwrite it. A new write
// that did not move the version would be silently undone by the next whole-post write.

export class ConcurrentChangeError extends Error {
  /**
   * False when the failed write certainly did not land. True when that cannot be told: an earlier
   * SDK attempt may have applied it (its answer lost) before the post moved on or was deleted.
   */
  constructor(readonly mayHaveApplied = false) {
    super('the post changed concurrently');
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

/** updatePost's read: the org, the post, and the channels and media its new content names, in one round trip. */
export async function loadPostForEdit(
  orgId: string,
  postId: string,
  channelIds: string[],
  mediaIds: string[],
): Promise<{
  org: Org | null;
  post: PostRecord | null;
  channels: Map<string, ChannelRecord>;
  media: Map<string, MediaAssetRecord>;
}> {
  const [org, post, ...found] = await batchGet([
    keys.org(orgId),
    keys.post(orgId, postId),
    ...channelIds.map((id) => keys.channel(orgId, id)),
    ...mediaIds.map((id) => keys.media(orgId, id)),
  ]);
  const channels = new Map<string, ChannelRecord>();
  const media = new Map<string, MediaAssetRecord>();
  for (const item of found) {
    if (item?.entity === 'channel') channels.set(item.id as string, fromItem<ChannelRecord>(item));
    if (item?.entity === 'media') media.set(item.id as string, fromItem<MediaAssetRecord>(item));
  }
  return {
    org: org ? fromItem<Org>(org) : null,
    post: post ? fromItem<PostRecord>(post) : null,
    channels,
    media,
  };
}

/**
 * Whether a failed insertPost/updatePost/removePost may have landed all the same: an earlier SDK
 * attempt may have applied it and its answer been lost. False only when that is excluded.
 */
export function mayHaveLanded(err: unknown): boolean {
  if (err instanceof ConcurrentChangeError) return err.mayHaveApplied;
  return !neverApplied(err);
}

/** Writes a new post; a condition failure is our own write, applied by an earlier SDK attempt. */
export async function insertPost(post: PostRecord): Promise<void> {
  try {
    await sendWrite(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: toItem(post),
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
  } catch (err) {
    // Ids are fresh ULIDs: an item already under this one is our own write, applied by an
    // earlier SDK attempt whose answer was lost.
    if (conditionFailureItem(err)?.created_at === post.created_at) return;
    throw err;
  }
}

/** Index keys are always written (set, or removed when the post leaves the index): cheap, and exact. */
const INDEX_KEYS = new Set(['gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk']);

/** A value as DynamoDB stores it: undefined members dropped (the client's removeUndefinedValues). */
function stored(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stored);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).flatMap(([k, x]) => (x === undefined ? [] : [[k, stored(x)]])));
}

/**
 * Writes `next` over `before`, the post as read, if it is still at that version (the write rule
 * above): one UpdateItem of the attributes that changed — not a transaction, which bills every unit
 * twice (GSI writes included).
 * `writeId` (`write_id` on the item) recognises this write when an earlier SDK attempt applied it
 * and its answer was lost. Throws ConcurrentChangeError when the post moved; `mayHaveApplied` is
 * false when every SDK attempt was refused (sendWrite), or when the post is exactly one version on
 * and that version is not ours (the one write since our read was another's); true when it cannot be
 * told (an attempt's answer was lost, and the post is gone or several writes on).
 */
export async function updatePost(before: PostRecord, next: PostRecord, writeId: string): Promise<PostRecord> {
  const written = { ...stamped(before, next), version: before.version + 1 };
  const old: Record<string, unknown> = toItem(before);
  const item: Record<string, unknown> = toItem(written);
  const set: Record<string, unknown> = { write_id: writeId };
  const remove = new Set<string>();
  for (const name of new Set([...Object.keys(old), ...Object.keys(item), ...INDEX_KEYS])) {
    if (name === 'pk' || name === 'sk') continue;
    const value = stored(item[name]);
    if (value === undefined) {
      if (INDEX_KEYS.has(name) || stored(old[name]) !== undefined) remove.add(name);
    } else if (INDEX_KEYS.has(name) || !isDeepStrictEqual(stored(old[name]), value)) set[name] = value;
  }
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ':expected': before.version };
  const removed = [...remove].map((name, i) => {
    names[`#r${i}`] = name;
    return `#r${i}`;
  });
  const update = [
    `SET ${setClause(set, names, values)}`,
    ...(removed.length ? [`REMOVE ${removed.join(', ')}`] : []),
  ].join(' ');
  try {
    await sendWrite(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.post(before.org_id, before.id),
        UpdateExpression: update,
        ConditionExpression: 'version = :expected',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    const current = conditionFailureItem(err);
    if (current?.write_id === writeId) return written;
    throw new ConcurrentChangeError(!neverApplied(err) && current?.version !== before.version + 1);
  }
  return written;
}

/**
 * Deletes the post as read (its version: a decision on an older post is retried). A post found
 * gone when an earlier attempt's answer was lost is taken as deleted by that attempt (or by a
 * concurrent delete: deleted either way); otherwise a post gone is a concurrent change (404 next).
 */
export async function removePost(post: PostRecord): Promise<void> {
  try {
    await sendWrite(
      new DeleteCommand({
        TableName: TABLE_NAME,
        Key: keys.post(post.org_id, post.id),
        ConditionExpression: 'version = :v',
        ExpressionAttributeValues: { ':v': post.version },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    if (conditionFailureItem(err) || neverApplied(err)) throw new ConcurrentChangeError();
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
 * returns the next one (or null: nothing to write). Concurrent writers (the sweeper, the
 * dead-letter consumer, a dispatch starting the post) each retry from a fresh read, so no change
 * is ever lost. One delivery's own state goes through writeDelivery instead.
 */
export async function mutatePost(
  orgId: string,
  postId: string,
  change: (post: PostRecord) => PostRecord | null,
  attempts = 12,
  known?: PostRecord,
): Promise<{ before: PostRecord; after: PostRecord } | null> {
  for (let i = 0; i < attempts; i++) {
    // `known`: the post as the caller last wrote or read it (the dispatcher's read) — written
    // against first without a read; a version check that fails (someone wrote since) falls back
    // to reading.
    const fresh = !(i === 0 && known);
    const before = fresh ? await getPost(orgId, postId) : known;
    if (!before) return null;
    const next = change(before);
    // Nothing to write is decided on a read, never on `known` (which may be stale).
    if (!next) {
      if (fresh) return { before, after: before };
      continue;
    }
    const res = await putPost(before, next);
    if ('after' in res) return { before, after: res.after };
    // A stale `known` is no contention: read at once.
    if (fresh) await new Promise((r) => setTimeout(r, Math.random() * 20 * (i + 1)));
  }
  throw new ConcurrentChangeError();
}

/**
 * One whole-item Put of `next` over `before` if the post is still at `before`'s version. On a
 * version that moved: the post as it is now (the refused write's ALL_OLD; null when it is gone).
 */
export async function putPost(
  before: PostRecord,
  next: PostRecord,
): Promise<{ after: PostRecord } | { current: PostRecord | null }> {
  const after = { ...stamped(before, next), version: before.version + 1 };
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
    return { after };
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    const current = conditionFailureItem(err);
    // The SDK retried a write DynamoDB had applied (its answer was lost): the item is ours.
    if (current?.write_id === writeId) return { after };
    return { current: current ? fromItem<PostRecord>(current) : null };
  }
}

/** A delivery revision: short (it is stored on every delivery of the item), unguessable enough. */
const newRev = () => randomBytes(6).toString('base64url');

/** `next` with a fresh `rev` on each delivery that differs from `before`'s. */
function stamped(before: PostRecord, next: PostRecord): PostRecord {
  let deliveries: Record<string, DeliveryRecord> | undefined;
  for (const [id, d] of Object.entries(next.deliveries)) {
    const { rev: _a, ...was } = before.deliveries[id] ?? ({} as Partial<DeliveryRecord>);
    const { rev: _b, ...now } = d;
    if (before.deliveries[id] && isDeepStrictEqual(stored(was), stored(now))) continue;
    deliveries ??= { ...next.deliveries };
    deliveries[id] = { ...d, rev: newRev() };
  }
  return deliveries ? { ...next, deliveries } : next;
}

/** The post's aggregate, as a delivery write may carry it (the rest is the delivery itself). */
const AGGREGATE = ['status', 'published_at', 'watch_at', 'watch_entry', ...INDEX_KEYS];

/**
 * Writes one delivery of a publishing post: one UpdateItem of `deliveries.<channel>` and the post's
 * `updated_at`, conditioned on that delivery being as `post` has it (its `rev`) and the post still
 * publishing that round — not on the post's version, so sibling channels never refuse each other.
 * It moves the version all the same (the write rule above). `settled`, when given, is the post as
 * this write settles it (core/delivery.ts, settledPost: published or failed by its last delivery, a
 * watchdog time moved on): its aggregate rides on the same write — sound without a version check,
 * as a final delivery never changes within its round, and the watchdog time only needs to be no
 * later than due. Returns the post after the write (ReturnValues ALL_NEW: the writer sees every
 * sibling, so a last delivery whose siblings went final meanwhile still settles the post), or, when
 * the condition failed, the post as it is now (null when it is gone).
 */
export async function writeDelivery(
  post: PostRecord,
  delivery: DeliveryRecord,
  now: Date,
  settled?: PostRecord | null,
): Promise<{ after: PostRecord } | { current: PostRecord | null }> {
  const expected = post.deliveries[delivery.channel_id]?.rev;
  const rev = newRev();
  const names: Record<string, string> = {
    '#d': 'deliveries',
    '#c': delivery.channel_id,
    '#rev': 'rev',
    '#s': 'status',
    '#r': 'round',
    '#u': 'updated_at',
    '#v': 'version',
  };
  const values: Record<string, unknown> = {
    ':d': stored({ ...delivery, rev }),
    ':now': now.toISOString(),
    ':one': 1,
    ':publishing': 'publishing',
    ':round': post.round,
    ...(expected ? { ':rev': expected } : {}),
  };
  const set = ['#d.#c = :d', '#u = :now'];
  const remove: string[] = [];
  if (settled) {
    const old: Record<string, unknown> = toItem(post);
    const item: Record<string, unknown> = toItem(settled);
    for (const [i, name] of AGGREGATE.entries()) {
      const value = stored(item[name]);
      names[`#a${i}`] = name;
      if (value === undefined) {
        if (INDEX_KEYS.has(name) || old[name] !== undefined) remove.push(`#a${i}`);
      } else {
        values[`:a${i}`] = value;
        set.push(`#a${i} = :a${i}`);
      }
    }
  }
  try {
    const res = await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.post(post.org_id, post.id),
        UpdateExpression: `SET ${set.join(', ')}${remove.length ? ` REMOVE ${remove.join(', ')}` : ''} ADD #v :one`,
        ConditionExpression: `attribute_exists(#d.#c) AND #s = :publishing AND #r = :round AND ${
          expected ? '#d.#c.#rev = :rev' : 'attribute_not_exists(#d.#c.#rev)'
        }`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { after: fromItem<PostRecord>(res.Attributes ?? {}) };
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    const current = conditionFailureItem(err);
    const found = current ? fromItem<PostRecord>(current) : null;
    // The SDK retried a write DynamoDB had applied (its answer was lost): the delivery is ours.
    if (found?.deliveries[delivery.channel_id]?.rev === rev) return { after: found };
    return { current: found };
  }
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
