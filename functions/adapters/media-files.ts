import type { MediaInput } from '#adapters/platforms/types';
import type { VariantRecord } from '#core/posts';
import { keys } from './keys.ts';
import { batchGet } from './table.ts';

// The media of a variant as connectors need it: type, alt text, content type, size and the bytes.
export async function mediaOf(orgId: string, variant: VariantRecord): Promise<MediaInput[]> {
  if (!variant.media.length) return [];
  const ids = variant.media.map((m) => /\/media\/(med_[0-9A-Z]{26})/.exec(m.url)?.[1] ?? '');
  const assets = await batchGet(ids.map((id) => keys.media(orgId, id)));
  return variant.media.map((m, i) => {
    const asset = assets[i];
    return {
      type: m.type,
      alt: m.alt,
      url: m.url,
      contentType: String(asset?.content_type ?? 'application/octet-stream'),
      filename: String(asset?.filename ?? 'media'),
      sizeBytes: Number(asset?.size_bytes ?? 0),
      read: async () => {
        const res = await fetch(m.url, { signal: AbortSignal.timeout(60_000) });
        if (!res.ok) throw new Error(`media ${m.url}: ${res.status}`);
        return new Uint8Array(await res.arrayBuffer());
      },
    };
  });
}
