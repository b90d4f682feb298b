import { anyRole } from '#core/accounts';
import { ApiError } from '#core/errors';
import type { toMediaAsset } from '#core/media';
import { ActError, type Actor } from '#core/people';
import { hasFeature } from '#core/plans';
import { getMedia } from '#usecases/get-media';
import { listMedia } from '#usecases/list-media';
import { authorizeAct } from '#usecases/support/acts';

// The console's media library: the API's listMedia and getMedia with the person's role read first
// (every member sees the media). A person is not an API client: nothing here is metered.

/** Assets per page, the API's default. */
export const MEDIA_PAGE = 25;

export type MediaAsset = ReturnType<typeof toMediaAsset>;

export interface MediaList {
  assets: MediaAsset[];
  /** The cursor of the next (older) page, or null at the end. */
  next: string | null;
}

export const NO_SUCH_MEDIA = 'This workspace has no such media asset; it may have been deleted.';

/** The media, newest first, a page at a time (every member). */
export async function listMediaForPerson(a: {
  orgId: string;
  actor: Actor;
  cursor?: string | undefined;
  cursorSecret: string;
}): Promise<MediaList> {
  await authorizeAct(a.orgId, a.actor, anyRole, 'seeing media');
  try {
    const page = await listMedia(a.orgId, { limit: MEDIA_PAGE, after: a.cursor }, a.cursorSecret);
    return { assets: page.data, next: page.next_cursor };
  } catch (err) {
    if (err instanceof ApiError && err.code === 'invalid_request')
      throw new ActError('That link to more media is not valid; start again from the first page.', 'invalid');
    throw err;
  }
}

export interface MediaDetails {
  asset: MediaAsset;
  /** Whether the plan includes AI generation ("Suggest alt text", for a ready image). */
  suggests: boolean;
}

/** One asset of the organization (every member); another organization's id is not found. */
export async function getMediaForPerson(a: {
  orgId: string;
  actor: Actor;
  id: string;
}): Promise<MediaDetails> {
  const [by, asset] = await Promise.all([
    authorizeAct(a.orgId, a.actor, anyRole, 'seeing media'),
    getMedia(a.orgId, a.id).catch((err: unknown) => {
      if (err instanceof ApiError && err.code === 'resource_not_found')
        throw new ActError(NO_SUCH_MEDIA, 'not_found');
      throw err;
    }),
  ]);
  return { asset, suggests: hasFeature(by.org.plan, 'ai') };
}
