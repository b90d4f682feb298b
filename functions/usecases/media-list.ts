import { queryAssets } from '#adapters/media';
import { decodeCursor, encodeCursor } from '#core/cursor';
import { ApiError } from '#core/errors';
import { isId } from '#core/ids';
import { toMediaAsset } from '#core/media';

// listMedia, apart from the upload use cases so its bundle carries no S3 client.

export async function listMedia(
  orgId: string,
  query: { limit?: number | undefined; after?: string | undefined },
  cursorSecret: string,
) {
  const scope = { list: 'media', orgId };
  const afterId = query.after ? decodeCursor(cursorSecret, scope, query.after) : undefined;
  if (afterId !== undefined && !isId('media', afterId))
    throw new ApiError('invalid_request', 'The cursor is not valid for this list.');
  const page = await queryAssets(orgId, { limit: query.limit ?? 25, afterId });
  const last = page.assets.at(-1);
  return {
    data: page.assets.map(toMediaAsset),
    has_more: page.hasMore,
    next_cursor: page.hasMore && last ? encodeCursor(cursorSecret, scope, last.id) : null,
  };
}
