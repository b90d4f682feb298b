import { claimImport, getAsset, markFailed } from '#adapters/media';
import { type FetchedMedia, ImportRefusal } from '#adapters/media-fetch';
import type { MediaImportMessage } from '#core/messages';
import { logger } from '#shared/logger';
import {
  discardObjects,
  openImport,
  refusalErrors,
  storeAndProbe,
  WORKER_BUDGET_MS,
} from '#usecases/support/media-import';

// The mediaImport worker: finishes an import importMedia answered 202 for (or never finished: it
// crashed or timed out). Idempotent per asset: a message for an asset that is not pending is a
// no-op, and of concurrent messages one holds the asset (a lease) while the others return.

/** Longer than the worker's timeout: a lease outlives the run holding it, never the other way. */
const LEASE_MS = 330_000;

export type ImportOutcome = 'ready' | 'failed' | 'skipped';

export async function finishImport(msg: MediaImportMessage, now: Date): Promise<ImportOutcome> {
  const asset = await getAsset(msg.org_id, msg.media_id);
  if (asset?.status !== 'pending' || !asset.source_url) return 'skipped';
  // Another run holds it: its own message comes back to this queue if that run stops.
  if (!(await claimImport(asset, now, new Date(now.getTime() + LEASE_MS)))) return 'skipped';
  const budget = AbortSignal.timeout(WORKER_BUDGET_MS);
  let fetched: FetchedMedia | undefined;
  try {
    fetched = await openImport(asset.source_url, budget);
    if (fetched.type !== asset.content_type)
      throw new ImportRefusal(
        'fetch_failed',
        `The file at the URL changed while it was imported: it is now ${fetched.type}, not ${asset.content_type}.`,
      );
    const ready = await storeAndProbe(asset, fetched, now, budget);
    return ready || (await getAsset(asset.org_id, asset.id))?.status === 'ready' ? 'ready' : 'skipped';
  } catch (err) {
    fetched?.close();
    const errors = refusalErrors(err);
    // Anything else (S3, the probe function) is retried: the message comes back; on its last
    // attempt the dead-letter consumer marks the asset failed.
    if (!errors) throw err;
    await discardObjects(asset);
    await markFailed(asset, errors.map((e) => e.message).join(' '), new Date());
    logger.info('media import refused', { media_id: asset.id, code: errors[0]?.code });
    return 'failed';
  }
}

/** The dead-letter consumer: an import that never finished ends failed, and leaves no object. */
export async function failImport(msg: MediaImportMessage, now: Date): Promise<boolean> {
  const asset = await getAsset(msg.org_id, msg.media_id);
  if (asset?.status !== 'pending') return false;
  await discardObjects(asset);
  return markFailed(asset, 'The import did not finish after several attempts; import the URL again.', now);
}
