import { getAsset, insertAsset, removeAsset } from '#adapters/media';
import type { FetchedMedia } from '#adapters/media-fetch';
import { sendDelayed } from '#adapters/queues';
import { ValidationError } from '#core/errors';
import { newId } from '#core/ids';
import { type MediaAssetRecord, mediaUrl, objectKeyOf, toMediaAsset, uploadKeyOf } from '#core/media';
import { ALLOWED_MEDIA } from '#core/media-types';
import type { MediaImportMessage } from '#core/messages';
import { mediaBaseUrl } from '#shared/config';
import { logger } from '#shared/logger';
import {
  discardObjects,
  INLINE_BUDGET_MS,
  importFilename,
  openImport,
  refusalErrors,
  storeAndProbe,
} from '#usecases/support/media-import';

/**
 * The mediaImport message sent before the asset is stored arrives after this: past importMedia's
 * 15 s timeout, so it never races the request's own attempt. If the request stopped (a crash, its
 * timeout) the worker finishes the import; if the request finished it, the message is a no-op.
 */
export const SAFETY_DELAY_SECONDS = 20;

export interface ImportAnswer {
  status: 201 | 202;
  asset: ReturnType<typeof toMediaAsset>;
}

/**
 * importMedia. Primary course: admit → fetch the URL under the address policy until its first
 * bytes decide the type → send the worker's safety message → store the pending asset → stream the
 * bytes into the upload bucket and probe them like an upload, all within 10 s → 201 ready. Past
 * 10 s: stop, ask the worker to finish now, 202 pending. A refusal before the answer is a 400 and
 * leaves nothing: no record, no object.
 */
export async function importMedia(
  orgId: string,
  input: { url: string; filename?: string | undefined },
  now: Date,
  gate: { admitted: () => Promise<unknown> },
): Promise<ImportAnswer> {
  await gate.admitted();
  const budget = new AbortController();
  const timer = setTimeout(() => budget.abort(), INLINE_BUDGET_MS);
  try {
    let fetched: FetchedMedia;
    try {
      fetched = await openImport(input.url, budget.signal);
    } catch (err) {
      const errors = refusalErrors(err);
      if (errors) throw new ValidationError(errors);
      throw err;
    }
    const named = importFilename(input.filename, fetched.url, fetched.type);
    if ('error' in named) {
      fetched.close();
      throw new ValidationError([named.error]);
    }
    const asset = newImportAsset(orgId, input.url, fetched, named.filename, now);
    const message: MediaImportMessage = { org_id: orgId, media_id: asset.id };
    // Before the record: a crash after it leaves a message for an asset that is not there (a no-op),
    // never an asset without a message.
    await sendDelayed('mediaImport', message, SAFETY_DELAY_SECONDS);
    await insertAsset(asset);
    const attempt = storeAndProbe(asset, fetched, now, budget.signal);
    const outcome = await Promise.race([
      attempt.then(
        (ready) => ({ kind: 'done' as const, ready }),
        (error: unknown) => ({ kind: 'error' as const, error }),
      ),
      new Promise<{ kind: 'late' }>((resolve) =>
        budget.signal.addEventListener('abort', () => resolve({ kind: 'late' }), { once: true }),
      ),
    ]);
    if (outcome.kind === 'late' || (outcome.kind === 'error' && budget.signal.aborted)) {
      fetched.close();
      attempt.catch(() => undefined); // it stops at its next step (the signal)
      // Without this message the safety message still finishes it, 20 s later.
      await sendDelayed('mediaImport', message, 0).catch((error: unknown) =>
        logger.warn('import hand-off not sent; the safety message finishes it', { error: error as Error }),
      );
      return { status: 202, asset: toMediaAsset(asset) };
    }
    if (outcome.kind === 'done') {
      const current = outcome.ready ?? (await getAsset(orgId, asset.id));
      if (!current) throw new Error(`imported asset ${asset.id} vanished`);
      return { status: current.status === 'ready' ? 201 : 202, asset: toMediaAsset(current) };
    }
    const errors = refusalErrors(outcome.error);
    if (!errors) throw outcome.error;
    // Refused after the record was written: remove both, so the refusal leaves nothing stored. A
    // crash before this leaves the safety message, whose worker refuses it again (status failed).
    await discardObjects(asset);
    await removeAsset(orgId, asset.id, 'pending');
    throw new ValidationError(errors);
  } finally {
    clearTimeout(timer);
  }
}

function newImportAsset(
  orgId: string,
  sourceUrl: string,
  fetched: FetchedMedia,
  filename: string,
  now: Date,
): MediaAssetRecord {
  const id = newId('media', now.getTime());
  const objectKey = objectKeyOf(orgId, id, filename);
  return {
    id,
    org_id: orgId,
    status: 'pending',
    kind: ALLOWED_MEDIA[fetched.type].kind,
    url: mediaUrl(mediaBaseUrl(), objectKey),
    filename,
    content_type: fetched.type,
    size_bytes: fetched.contentLength ?? 0,
    width: null,
    height: null,
    duration_sec: null,
    poster_url: null,
    upload_key: uploadKeyOf(orgId, id, filename),
    object_key: objectKey,
    poster_key: null,
    // No upload ticket: completeMediaUpload refuses imports.
    expires_at: now.toISOString(),
    created_at: now.toISOString(),
    updated_at: now.toISOString(),
    source_url: sourceUrl,
    error: null,
  };
}
