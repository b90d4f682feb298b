import { markReady } from '#adapters/media';
import { deleteUpload, promoteUpload, readHead } from '#adapters/media-store';
import { invokeProbe } from '#adapters/probe-function';
import { ValidationError } from '#core/errors';
import { type MediaAssetRecord, mediaUrl, posterKeyOf, tooLarge } from '#core/media';
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

// The probe of bytes in the upload bucket, shared by completeMediaUpload (bytes PUT by the client)
// and importMedia (bytes fetched from a URL): images are measured here, video, audio and
// documents (PDF) by the probe function; then the bytes are copied into the media bucket and the asset made ready.

interface Probed {
  width: number | null;
  height: number | null;
  duration_sec: number | null;
  /** A document's pages, or null. */
  page_count: number | null;
  /** The stored poster (a video's frame, a document's first page), or null. */
  posterKey: string | null;
}

async function probeImage(key: string, size: number, head: Uint8Array): Promise<Probed> {
  let dims = imageDimensions(head);
  if (!dims && size > head.length)
    dims = imageDimensions(await readHead('uploads', key, Math.min(size, MAX_IMAGE_HEAD_BYTES)));
  if (!dims) throw contentMismatch('The image dimensions could not be read; the file may be corrupt.');
  return { width: dims.width, height: dims.height, duration_sec: null, page_count: null, posterKey: null };
}

/**
 * Video, audio and documents: the probe function reads them (ffprobe and ffmpeg, or pdf.js) and
 * stores the poster of a video or a document.
 */
async function probeAudioVideo(asset: MediaAssetRecord): Promise<Probed> {
  const answer = await invokeProbe({
    upload_key: asset.upload_key,
    content_type: asset.content_type as ProbeRequest['content_type'],
    poster_key: asset.kind === 'video' || asset.kind === 'document' ? posterKeyOf(asset.object_key) : null,
  });
  if (!answer.ok) {
    if (answer.code === 'too_many_pages')
      throw new ValidationError([
        { pointer: '/content_type', code: 'too_many_pages', message: answer.message },
      ]);
    throw contentMismatch(answer.message);
  }
  return {
    width: answer.width,
    height: answer.height,
    duration_sec: answer.duration_sec,
    page_count: asset.kind === 'document' ? (answer.page_count ?? null) : null,
    posterKey: answer.poster_key,
  };
}

function contentMismatch(message: string): ValidationError {
  return new ValidationError([{ pointer: '/content_type', code: 'content_mismatch', message }]);
}

/**
 * Probes the asset's upload (`size` bytes) and makes the asset ready: the ready record, or null when
 * a concurrent call made it ready first. Bytes that are not what content_type says, or over its
 * limit, are a ValidationError (`content_mismatch`, `too_large`) and nothing is promoted. `signal`
 * (an import out of time) stops it before anything is written.
 */
export async function probeUpload(
  asset: MediaAssetRecord,
  size: number,
  now: Date,
  signal?: AbortSignal,
): Promise<MediaAssetRecord | null> {
  if (!isAllowed(asset.content_type)) throw new Error(`asset ${asset.id} has an unknown content type`);
  const type = ALLOWED_MEDIA[asset.content_type];
  if (size > type.maxBytes) {
    throw new ValidationError([tooLarge(asset.content_type, type.maxBytes)]);
  }
  if (size === 0) throw contentMismatch('The uploaded object is empty.');
  const head = await readHead('uploads', asset.upload_key, Math.min(HEAD_BYTES, size));
  const sniffed = sniff(head);
  if (!matchesClaim(asset.content_type, sniffed)) {
    throw contentMismatch(
      sniffed
        ? `The uploaded bytes are ${sniffed}, not ${asset.content_type}.`
        : `The uploaded bytes are not ${asset.content_type}.`,
    );
  }
  const probed =
    asset.kind === 'image' ? await probeImage(asset.upload_key, size, head) : await probeAudioVideo(asset);
  signal?.throwIfAborted();
  await promoteUpload(asset.upload_key, asset.object_key, asset.content_type);
  signal?.throwIfAborted();
  const ready = await markReady(asset, {
    size_bytes: size,
    width: probed.width,
    height: probed.height,
    duration_sec: probed.duration_sec,
    page_count: probed.page_count,
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
    return ready;
  }
  return null;
}
