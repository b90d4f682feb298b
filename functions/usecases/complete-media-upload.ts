import { getAsset } from '#adapters/media';
import { headObject } from '#adapters/media-store';
import { conflict, notFound } from '#core/errors';
import { isId } from '#core/ids';
import { toMediaAsset } from '#core/media';
import { probeUpload } from '#usecases/support/probe-upload';

const assetNotFound = () => notFound('media asset');

/**
 * completeMediaUpload: probe the uploaded bytes and make the asset ready. Ready assets are returned
 * as they are; a ticket past its expiry or an object never uploaded is 409; bytes that are not
 * what content_type says are 400 and the asset stays pending. Video and audio are probed by the
 * probe function (usecases/probe-media.ts), which stores a video's poster. Nothing reaches S3 or the probe before
 * the request is admitted: a refused request (401 at the gate, 429) costs the asset read only.
 */
export async function completeMediaUpload(
  orgId: string,
  mediaId: string,
  now: Date,
  gate: { admitted: () => Promise<unknown> },
) {
  if (!isId('media', mediaId)) throw assetNotFound();
  // The gate started before this read, so waiting for it here adds no round trip.
  const [asset] = await Promise.all([getAsset(orgId, mediaId), gate.admitted()]);
  if (!asset) throw assetNotFound();
  if (asset.status === 'ready') return toMediaAsset(asset);
  // An import (importMedia) completes by itself; it has no upload ticket to complete.
  if (asset.source_url || asset.status === 'failed')
    throw conflict('This asset is imported from a URL; it becomes ready (or failed) by itself.');
  if (now.getTime() > Date.parse(asset.expires_at))
    throw conflict('The upload ticket expired; create a new upload.');
  const object = await headObject('uploads', asset.upload_key);
  if (!object) {
    // A concurrent complete may have made it ready (and removed the upload) meanwhile.
    const current = await getAsset(orgId, mediaId);
    if (current?.status === 'ready') return toMediaAsset(current);
    throw conflict('No bytes were uploaded for this asset yet; PUT them to upload_url first.');
  }
  const ready = await probeUpload(asset, object.size, now);
  if (ready) return toMediaAsset(ready);
  // A concurrent complete won the race: answer with the asset it made ready.
  const current = await getAsset(orgId, mediaId);
  if (!current) throw assetNotFound();
  return toMediaAsset(current);
}
