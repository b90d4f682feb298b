import { type FetchedMedia, fetchMedia, ImportRefusal } from '#adapters/media-fetch';
import { deleteObject, putStream } from '#adapters/media-store';
import { webhookAddressPolicy } from '#adapters/webhooks/policy';
import { type FieldError, ValidationError } from '#core/errors';
import { type MediaAssetRecord, posterKeyOf } from '#core/media';
import { renditionKeysOf } from '#core/media-fit';
import { ALLOWED_MEDIA, type AllowedContentType } from '#core/media-types';
import { probeUpload } from './probe-upload.ts';

// What importMedia and the mediaImport worker share: fetching under the address policy, storing
// the bytes where an upload's go, the upload's probe, and removing what a refused import left.

/** importMedia answers within this: 201 when the import is done, else 202 and the worker finishes. */
export const INLINE_BUDGET_MS = 10_000;
/** The worker's budget for the fetch (1 GiB at ≈ 5 MB/s), inside its 300 s timeout. */
export const WORKER_BUDGET_MS = 240_000;
/** Per hop: the TCP connection, then the response's headers. */
export const CONNECT_TIMEOUT_MS = 5_000;
export const FIRST_BYTE_TIMEOUT_MS = 8_000;

/** The fetch, under the webhook address policy (https only in AWS; the local stack's exemptions). */
export function openImport(url: string, signal: AbortSignal): Promise<FetchedMedia> {
  return fetchMedia(url, {
    policy: webhookAddressPolicy(),
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
    firstByteTimeoutMs: FIRST_BYTE_TIMEOUT_MS,
    signal,
  });
}

/** The filename an import is stored under: the one given (its extension must fit), else the URL's. */
export function importFilename(
  given: string | undefined,
  url: URL,
  type: AllowedContentType,
): { filename: string } | { error: FieldError } {
  const extensions = ALLOWED_MEDIA[type].extensions;
  const extOf = (name: string) => /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase();
  if (given !== undefined) {
    const ext = extOf(given);
    if (ext && extensions.includes(ext)) return { filename: given };
    return {
      error: {
        pointer: '/filename',
        code: 'extension_mismatch',
        message: `The file is ${type}: the filename must end in ${extensions.map((e) => `.${e}`).join(' or ')}.`,
      },
    };
  }
  let last = '';
  try {
    last = decodeURIComponent(url.pathname.split('/').pop() ?? '');
  } catch {
    last = url.pathname.split('/').pop() ?? '';
  }
  const ext = extOf(last);
  if (ext && extensions.includes(ext)) return { filename: last };
  const stem = last.replace(/\.[A-Za-z0-9]+$/, '') || 'media';
  return { filename: `${stem}.${extensions[0]}` };
}

/**
 * Streams the fetched bytes into the asset's upload key and probes them like an upload: the ready
 * asset, or null when another import made it ready first. Refusals are ValidationErrors.
 */
export async function storeAndProbe(
  asset: MediaAssetRecord,
  fetched: FetchedMedia,
  now: Date,
  signal: AbortSignal,
): Promise<MediaAssetRecord | null> {
  const size = await putStream('uploads', asset.upload_key, asset.content_type, fetched.chunks, signal);
  return probeUpload(asset, size, now, signal);
}

/** A refusal as the field errors of a 400 (pointer /url), or as the sentence of a failed import. */
export function refusalErrors(err: unknown): FieldError[] | null {
  if (err instanceof ImportRefusal) return [{ pointer: '/url', code: err.code, message: err.message }];
  if (err instanceof ValidationError)
    return (err.errors ?? []).map((e) => ({
      pointer: e.pointer === '/filename' ? '/filename' : '/url',
      code: e.code === 'too_large' ? 'media_too_large' : e.code,
      message: e.message,
    }));
  return null;
}

/** The objects an import may have left: its upload, its copy and a video's or a document's poster. */
export async function discardObjects(asset: MediaAssetRecord): Promise<void> {
  await Promise.all([
    deleteObject('uploads', asset.upload_key),
    deleteObject('media', asset.object_key),
    ...(asset.kind === 'video' || asset.kind === 'document'
      ? [deleteObject('media', posterKeyOf(asset.object_key))]
      : []),
    // The renditions media_fit made beside it (core/media-fit.ts), if any.
    ...(asset.status === 'ready' ? renditionKeysOf(asset).map((k) => deleteObject('media', k)) : []),
  ]);
}
