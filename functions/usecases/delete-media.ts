import { getAsset, postsUsingAsset, removeAsset } from '#adapters/media';
import type { PostStatus } from '#core/constants';
import { conflict, notFound } from '#core/errors';
import { isId } from '#core/ids';
import { discardObjects } from '#usecases/support/media-import';

/** Posts that will still send their media: an asset they attach cannot be deleted. */
export const PROTECTING_STATUSES: PostStatus[] = ['scheduled', 'publishing', 'needs_approval'];

/**
 * deleteMedia. Read the asset (404 across organizations) → the posts that still need it (one
 * parallel query per status) → 409 if any → remove its objects → remove the record, only in the
 * state it was read in. Objects go first: a crash between the two leaves a record the retry
 * removes. A retry after success answers 404.
 */
export async function deleteMedia(
  orgId: string,
  mediaId: string,
  gate: { admitted: () => Promise<unknown> },
): Promise<void> {
  const [asset] = await Promise.all([
    isId('media', mediaId) ? getAsset(orgId, mediaId) : null,
    gate.admitted(),
  ]);
  if (!asset) throw notFound('media asset');
  if (asset.status === 'pending' && asset.source_url)
    throw conflict('The asset is still being imported; delete it once it is ready or failed.');
  const users = await postsUsingAsset(orgId, mediaId, PROTECTING_STATUSES);
  if (users.length)
    throw conflict(
      `Scheduled or waiting posts use this asset (${users.slice(0, 5).join(', ')}${users.length > 5 ? ', …' : ''}); delete or change them first.`,
    );
  await discardObjects(asset);
  if (!(await removeAsset(orgId, mediaId, asset.status)))
    throw conflict('The asset changed while it was being deleted; try again.');
}
