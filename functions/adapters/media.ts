import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { batchGet, fromItem, ifConditionHolds, queryPage, TABLE_NAME } from '#adapters/table';
import type { MediaAssetRecord } from '#core/media';
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
  >,
): Promise<MediaAssetRecord | null> {
  return ifConditionHolds(async () => {
    const res = await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.media(asset.org_id, asset.id),
        UpdateExpression:
          'SET #s = :ready, size_bytes = :size, width = :w, height = :h, duration_sec = :d, poster_url = :pu, poster_key = :pk, updated_at = :u',
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
