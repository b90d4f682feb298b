import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { batchGet, fromItem, TABLE_NAME } from '#adapters/table';
import type { ChannelRecord, Org } from '#core/accounts';
import type { InboxItemRecord } from '#core/inbox';
import type { MediaAssetRecord } from '#core/media';
import type { VariantRecord } from '#core/posts';
import { ddb } from '#shared/clients';

/**
 * What a generation reads, in one round trip: the org, the task's channels, its media asset and
 * its inbox item (each of this organization only: the keys are under its partition).
 */
export async function loadGenerationContext(
  orgId: string,
  want: { channelIds: string[]; mediaId: string | null; itemId: string | null },
): Promise<{
  org: Org | null;
  channels: Map<string, ChannelRecord>;
  media: MediaAssetRecord | null;
  item: InboxItemRecord | null;
}> {
  const [org, ...found] = await batchGet([
    keys.org(orgId),
    ...want.channelIds.map((id) => keys.channel(orgId, id)),
    ...(want.mediaId ? [keys.media(orgId, want.mediaId)] : []),
    ...(want.itemId ? [keys.inboxItem(orgId, want.itemId)] : []),
  ]);
  const channels = new Map<string, ChannelRecord>();
  let media: MediaAssetRecord | null = null;
  let item: InboxItemRecord | null = null;
  for (const it of found) {
    if (it?.entity === 'channel') channels.set(it.id as string, fromItem<ChannelRecord>(it));
    if (it?.entity === 'media') media = fromItem<MediaAssetRecord>(it);
    if (it?.entity === 'inbox_item') item = fromItem<InboxItemRecord>(it);
  }
  return { org: org ? fromItem<Org>(org) : null, channels, media, item };
}

/**
 * The text of the post an inbox item answers, as the item's channel published it (null: the post
 * is gone or had no variant there). A second read, only for `reply` on an item of ours: the
 * post's id is on the item. Only the variants are read back.
 */
export async function readAnsweredPostText(
  orgId: string,
  postId: string,
  channelId: string,
): Promise<string | null> {
  const res = await ddb.send(
    new GetCommand({
      TableName: TABLE_NAME,
      Key: keys.post(orgId, postId),
      ProjectionExpression: 'variants',
    }),
  );
  const variants = (res.Item?.variants ?? []) as VariantRecord[];
  const text = variants.find((v) => v.channel_id === channelId)?.body ?? '';
  return text.trim() ? text : null;
}
