import { queryAssets } from '#adapters/media';
import { PAGE_SIZE, type PageQuery, paginate } from '#core/cursor';
import { isId } from '#core/ids';
import { toMediaAsset } from '#core/media';

// listMedia, apart from the upload use cases so its bundle carries no S3 client.

export async function listMedia(orgId: string, query: PageQuery, cursorSecret: string) {
  const page = paginate(cursorSecret, { list: 'media', orgId }, query.after, (k) => isId('media', k));
  const assets = await queryAssets(orgId, {
    limit: query.limit ?? PAGE_SIZE.default,
    afterId: page.afterKey,
  });
  return page.envelope({ items: assets.assets, hasMore: assets.hasMore }, toMediaAsset, (a) => a.id);
}
