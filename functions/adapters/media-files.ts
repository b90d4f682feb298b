import type { MediaInput } from '#adapters/platforms/types';
import type { MediaAssetRecord } from '#core/media';
import { mediaIdFromUrl } from '#core/media';
import type { VariantRecord } from '#core/posts';
import { keys } from './keys.ts';
import { readObject } from './media-store.ts';
import { batchGet, fromItem } from './table.ts';

// The media of a variant as connectors need it: type, alt text, content type, size and the bytes —
// read from the media bucket by the asset's object key (not fetched through the public url).
export async function mediaOf(orgId: string, variant: VariantRecord): Promise<MediaInput[]> {
  if (!variant.media.length) return [];
  const ids = variant.media.map((m) => mediaIdFromUrl(m.url) ?? '');
  const items = await batchGet(ids.map((id) => keys.media(orgId, id)));
  return variant.media.map((m, i) => {
    const item = items[i];
    const asset = item ? fromItem<MediaAssetRecord>(item) : null;
    return {
      type: m.type,
      alt: m.alt,
      url: m.url,
      contentType: asset?.content_type ?? 'application/octet-stream',
      filename: asset?.filename ?? 'media',
      sizeBytes: asset?.size_bytes ?? 0,
      read: async () => {
        if (asset?.status !== 'ready') throw new Error(`media ${m.url} is not a ready asset`);
        return readObject('media', asset.object_key);
      },
    };
  });
}
