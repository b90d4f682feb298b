import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { batchGet, fromItem, ifConditionHolds, queryAll, queryPage, TABLE_NAME } from '#adapters/table';
import type { PostStatus } from '#core/constants';
import { type MediaAssetRecord, mediaIdFromUrl } from '#core/media';
import { ddb } from '#shared/clients';

// Media asset records (MEDIA#<id> under the organization).

export async function insertAsset(asset: MediaAssetRecord): Promise<void> {
  await ddb.send(
    new PutCommand({
      TableName: TABLE_NAME,
      Item: { ...keys.media(asset.org_id, asset.id), entity: 'media', ...asset },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
}

export async function getAsset(orgId: string, mediaId: string): Promise<MediaAssetRecord | null> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.media(orgId, mediaId), ConsistentRead: true }),
  );
  return res.Item ? fromItem<MediaAssetRecord>(res.Item) : null;
}

export async function queryAssets(
  orgId: string,
  opts: { limit: number; afterId?: string | undefined },
): Promise<{ assets: MediaAssetRecord[]; hasMore: boolean }> {
  const page = await queryPage<MediaAssetRecord>(
    {
      ConsistentRead: true,
      KeyConditionExpression: 'pk = :p AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':p': `ORG#${orgId}`, ':prefix': 'MEDIA#' },
    },
    opts.limit,
    opts.afterId ? keys.media(orgId, opts.afterId) : undefined,
  );
  return { assets: page.items, hasMore: page.hasMore };
}

/**
 * pending → ready with the probed metadata, only if still pending: of concurrent completes exactly
 * one writes; the others get null and read the ready asset.
 */
export async function markReady(
  asset: MediaAssetRecord,
  probed: Pick<
    MediaAssetRecord,
    'size_bytes' | 'width' | 'height' | 'duration_sec' | 'poster_url' | 'poster_key' | 'updated_at'
  > &
    Pick<MediaAssetRecord, 'page_count'>,
): Promise<MediaAssetRecord | null> {
  return ifConditionHolds(async () => {
    const res = await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.media(asset.org_id, asset.id),
        UpdateExpression:
          'SET #s = :ready, size_bytes = :size, width = :w, height = :h, duration_sec = :d, poster_url = :pu, poster_key = :pk, updated_at = :u, page_count = :pc',
        ConditionExpression: '#s = :pending',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: {
          ':ready': 'ready',
          ':pending': 'pending',
          ':size': probed.size_bytes,
          ':w': probed.width,
          ':h': probed.height,
          ':d': probed.duration_sec,
          ':pu': probed.poster_url,
          ':pk': probed.poster_key,
          ':u': probed.updated_at,
          ':pc': probed.page_count ?? null,
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return fromItem<MediaAssetRecord>(res.Attributes ?? {});
  });
}

/** Several assets in one BatchGetItem, in the order asked; null where there is none. */
export async function getAssets(orgId: string, ids: string[]): Promise<Array<MediaAssetRecord | null>> {
  const items = await batchGet(ids.map((id) => keys.media(orgId, id)));
  return items.map((item) => (item ? fromItem<MediaAssetRecord>(item) : null));
}

/** pending → failed with the reason, only if still pending (a ready asset is never failed). */
export async function markFailed(asset: MediaAssetRecord, error: string, now: Date): Promise<boolean> {
  return (
    (await ifConditionHolds(async () => {
      await ddb.send(
        new UpdateCommand({
          TableName: TABLE_NAME,
          Key: keys.media(asset.org_id, asset.id),
          UpdateExpression: 'SET #s = :failed, #e = :error, updated_at = :u REMOVE import_lease_until',
          ConditionExpression: '#s = :pending',
          ExpressionAttributeNames: { '#s': 'status', '#e': 'error' },
          ExpressionAttributeValues: {
            ':failed': 'failed',
            ':pending': 'pending',
            ':error': error,
            ':u': now.toISOString(),
          },
        }),
      );
      return true;
    })) ?? false
  );
}

/**
 * A background import takes the pending asset until `until`: false when it is no longer pending,
 * or another import holds it (its own message comes back if that one stops).
 */
export async function claimImport(asset: MediaAssetRecord, now: Date, until: Date): Promise<boolean> {
  return (
    (await ifConditionHolds(async () => {
      await ddb.send(
        new UpdateCommand({
          TableName: TABLE_NAME,
          Key: keys.media(asset.org_id, asset.id),
          UpdateExpression: 'SET import_lease_until = :until',
          ConditionExpression:
            '#s = :pending AND (attribute_not_exists(import_lease_until) OR import_lease_until < :now)',
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: {
            ':pending': 'pending',
            ':now': now.toISOString(),
            ':until': until.toISOString(),
          },
        }),
      );
      return true;
    })) ?? false
  );
}

/**
 * Removes the record. `onlyIf: 'pending'` (an import refused before it was answered) leaves an
 * asset a background import already finished; `status` (deleteMedia) removes it only in the state
 * it was checked in, so a concurrent change is not lost silently. False when the condition failed.
 */
export async function removeAsset(
  orgId: string,
  mediaId: string,
  onlyIf: MediaAssetRecord['status'],
): Promise<boolean> {
  return (
    (await ifConditionHolds(async () => {
      await ddb.send(
        new DeleteCommand({
          TableName: TABLE_NAME,
          Key: keys.media(orgId, mediaId),
          ConditionExpression: '#s = :s',
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: { ':s': onlyIf },
        }),
      );
      return true;
    })) ?? false
  );
}

type MediaRef = { url: string };
type VariantMedia = { media?: MediaRef[]; thread?: Array<{ media?: MediaRef[] }> };

/**
 * The ids of the organization's posts in these statuses whose variants (or thread items) attach
 * the asset: one Query of the status index per status, in parallel, reading only the variants.
 * The index is eventually consistent: a post written in the last moment may be missed.
 */
export async function postsUsingAsset(
  orgId: string,
  mediaId: string,
  statuses: PostStatus[],
): Promise<string[]> {
  const lists = await Promise.all(
    statuses.map((status) =>
      queryAll({
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :p',
        ProjectionExpression: 'id, variants',
        ExpressionAttributeValues: { ':p': keys.postsByStatus(orgId, status).gsi1pk },
      }),
    ),
  );
  const uses = (m: MediaRef[] | undefined) => (m ?? []).some((x) => mediaIdFromUrl(x.url) === mediaId);
  return lists.flat().flatMap((item) => {
    const variants = (item.variants ?? []) as VariantMedia[];
    const used = variants.some((v) => uses(v.media) || (v.thread ?? []).some((t) => uses(t.media)));
    return used ? [String(item.id)] : [];
  });
}
