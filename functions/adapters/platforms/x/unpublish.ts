import { expectOk } from '../http.ts';
import { removeParts } from '../removal.ts';
import type { UnpublishContext } from '../types.ts';
import { Auth, call } from './client.ts';
import { xError } from './errors.ts';

// DELETE /2/tweets/:id (docs.x.com "Delete a Post", scope tweet.write; X's OpenAPI document:
// 200 TweetDeleteResponse `{data: {deleted: boolean}}`). A post X no longer has answers 404.
// Thread items and the first comment are posts of their own: each is deleted the same way.

export async function unpublish(ctx: UnpublishContext): Promise<{ alreadyGone: string[] }> {
  const auth = new Auth(ctx);
  return removeParts(ctx, async (part) => {
    const path = `/2/tweets/${encodeURIComponent(part.externalId)}`;
    const res = await call<{ data?: { deleted?: boolean } }>(auth, 'DELETE', path);
    if (res.status === 404) return 'gone';
    const body = expectOk(res, 'DELETE', '/2/tweets/:id', (r, what) => xError(r, what)).body;
    if (body?.data?.deleted !== true)
      throw xError({ ...res, status: 502 }, 'DELETE /2/tweets/:id answered deleted: false;');
    return 'removed';
  });
}
