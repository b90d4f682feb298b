import { getAsset, markReady } from '#adapters/media';
import { deleteUpload, headObject, promoteUpload, readHead } from '#adapters/media-store';
import { invokeProbe } from '#adapters/probe-function';
import { conflict, notFound, ValidationError } from '#core/errors';
import { isId } from '#core/ids';
import { type MediaAssetRecord, mediaUrl, posterKeyOf, toMediaAsset, tooLarge } from '#core/media';
import {
  ALLOWED_MEDIA,
  HEAD_BYTES,
  imageDimensions,
  isAllowed,
  MAX_IMAGE_HEAD_BYTES,
  matchesClaim,
  sniff,
} from '#core/media-probe';
import type { ProbeRequest } from '#core/probe-contract';
import { mediaBaseUrl } from '#shared/config';
import { logger } from '#shared/logger';

const assetNotFound = () => notFound('media asset');

interface Probed {
  width: number | null;
  height: number | null;
  duration_sec: number | null;
  /** The stored poster (a video's), or null. */
  posterKey: string | null;
}

async function probeImage(key: string, size: number, head: Uint8Array): Promise<Probed> {
  let dims = imageDimensions(head);
  if (!dims && size > head.length)
    dims = imageDimensions(await readHead('uploads', key, Math.min(size, MAX_IMAGE_HEAD_BYTES)));
  if (!dims) throw contentMismatch('The image dimensions could not be read; the file may be corrupt.');
  return { width: dims.width, height: dims.height, duration_sec: null, posterKey: null };
}

/** Video and audio: the probe function reads them (ffprobe, ffmpeg) and stores a video's poster. */
async function probeAudioVideo(asset: MediaAssetRecord): Promise<Probed> {
  const answer = await invokeProbe({
    upload_key: asset.upload_key,
    content_type: asset.content_type as ProbeRequest['content_type'],
    poster_key: asset.kind === 'video' ? posterKeyOf(asset.object_key) : null,
  });
  if (!answer.ok) throw contentMismatch(answer.message);
  return {
    width: answer.width,
    height: answer.height,
    duration_sec: answer.duration_sec,
    posterKey: answer.poster_key,
  };
}

function contentMismatch(message: string): ValidationError {
  return new ValidationError([{ pointer: '/content_type', code: 'content_mismatch', message }]);
}

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
  if (now.getTime() > Date.parse(asset.expires_at))
    throw conflict('The upload ticket expired; create a new upload.');
  const object = await headObject('uploads', asset.upload_key);
  if (!object) {
    // A concurrent complete may have made it ready (and removed the upload) meanwhile.
    const current = await getAsset(orgId, mediaId);
    if (current?.status === 'ready') return toMediaAsset(current);
    throw conflict('No bytes were uploaded for this asset yet; PUT them to upload_url first.');
  }
  if (!isAllowed(asset.content_type)) throw new Error(`asset ${asset.id} has an unknown content type`);
  const type = ALLOWED_MEDIA[asset.content_type];
  if (object.size > type.maxBytes) {
    throw new ValidationError([tooLarge(asset.content_type, type.maxBytes)]);
  }
  if (object.size === 0) throw contentMismatch('The uploaded object is empty.');
  const head = await readHead('uploads', asset.upload_key, Math.min(HEAD_BYTES, object.size));
  const sniffed = sniff(head);
  if (!matchesClaim(asset.content_type, sniffed)) {
    throw contentMismatch(
      sniffed
        ? `The uploaded bytes are ${sniffed}, not ${asset.content_type}.`
        : `The uploaded bytes are not ${asset.content_type}.`,
    );
  }
  const probed =
    asset.kind === 'image'
      ? await probeImage(asset.upload_key, object.size, head)
      : await probeAudioVideo(asset);
  await promoteUpload(asset.upload_key, asset.object_key, asset.content_type);
  const ready = await markReady(asset, {
    size_bytes: object.size,
    width: probed.width,
    height: probed.height,
    duration_sec: probed.duration_sec,
    poster_key: probed.posterKey,
    poster_url: probed.posterKey ? mediaUrl(mediaBaseUrl(), probed.posterKey) : null,
    updated_at: now.toISOString(),
  });
  if (ready) {
    // Never-completed uploads expire by lifecycle; completed ones are removed at once. The asset
    // is ready either way: a failed clean-up is left to the lifecycle rule, not answered as a 500.
    await deleteUpload(asset.upload_key).catch((error: unknown) =>
      logger.warn('upload clean-up failed; the lifecycle rule removes it', { error: error as Error }),
    );
    return toMediaAsset(ready);
  }
  // A concurrent complete won the race: answer with the asset it made ready.
  const current = await getAsset(orgId, mediaId);
  if (!current) throw assetNotFound();
  return toMediaAsset(current);
}
