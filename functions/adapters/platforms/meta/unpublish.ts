import { removeParts } from '../removal.ts';
import { PlatformError, type UnpublishContext } from '../types.ts';
import type { GraphClient } from './client.ts';

// DELETE /{object-id} on the Graph API (Threads posts, Facebook Page posts and comments): 200
// {"success": true} (Threads adds "deleted_id"). An object that no longer exists answers code 100
// subcode 33 ("Unsupported delete request. Object with ID … does not exist, cannot be loaded due to
// missing permissions, or does not support this operation"): the posts are the channel's own,
// made with the same grant, so it reads as gone — a missing permission answers code 10 or 200–299.

const gone = (err: unknown) => err instanceof PlatformError && /\(#100\/33\)/.test(err.message);

export function removeObjects(
  client: GraphClient,
  ctx: UnpublishContext,
): Promise<{ alreadyGone: string[] }> {
  return removeParts(ctx, async (part) => {
    try {
      const res = await client.delete<{ success?: boolean }>(`/${encodeURIComponent(part.externalId)}`);
      if (res.success !== true)
        throw new PlatformError(
          'system',
          `${client.platform}: DELETE /{id} answered success: ${String(res.success)}`,
        );
      return 'removed';
    } catch (err) {
      if (gone(err)) return 'gone';
      throw err;
    }
  });
}
