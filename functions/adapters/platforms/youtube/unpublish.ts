import { OAuthTokens } from '../oauth.ts';
import { removeParts } from '../removal.ts';
import type { UnpublishContext } from '../types.ts';
import { api, authed } from './client.ts';
import { youtubeError } from './errors.ts';

// videos.delete (DELETE /youtube/v3/videos?id=) and, for a first comment, comments.delete (DELETE
// /youtube/v3/comments?id=), each 204 (developers.google.com/youtube/v3/docs/videos/delete,
// comments/delete). Both need the youtube.force-ssl scope (or youtube): a channel connected with
// youtube.upload alone answers 403 insufficientPermissions until it is connected again. A video or
// comment YouTube does not have answers 404 (videoNotFound, commentNotFound).

export async function unpublish(ctx: UnpublishContext): Promise<{ alreadyGone: string[] }> {
  const tokens = new OAuthTokens(ctx.tokens);
  return removeParts(ctx, async (part) => {
    const resource = part.kind === 'comment' ? 'comments' : 'videos';
    const res = await authed(
      tokens,
      api(`/youtube/v3/${resource}?id=${encodeURIComponent(part.externalId)}`),
      {
        method: 'DELETE',
      },
    );
    if (res.status === 404) return 'gone';
    if (res.status < 200 || res.status >= 300) throw youtubeError(res, `${resource}.delete`);
    return 'removed';
  });
}
