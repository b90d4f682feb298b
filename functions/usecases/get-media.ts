import { getAsset } from '#adapters/media';
import { notFound } from '#core/errors';
import { isId } from '#core/ids';
import { toMediaAsset } from '#core/media';

/** getMedia: one asset of the organization (another organization's id is 404, like no asset). */
export async function getMedia(orgId: string, mediaId: string) {
  const asset = isId('media', mediaId) ? await getAsset(orgId, mediaId) : null;
  if (!asset) throw notFound('media asset');
  return toMediaAsset(asset);
}
