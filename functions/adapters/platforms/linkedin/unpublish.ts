import { expectOk } from '../http.ts';
import { removeParts } from '../removal.ts';
import type { UnpublishContext } from '../types.ts';
import { Auth, call } from './client.ts';
import { linkedinError } from './errors.ts';

// DELETE /rest/posts/{encoded post URN} with `X-RestLi-Method: DELETE` (LinkedIn Posts API,
// "Delete Posts"): 204. LinkedIn documents deletes as idempotent (a post deleted before answers 204
// again, so it cannot be told apart); a URN it does not know answers 404, counted as gone. A first
// comment is a comment of the socialActions API: DELETE /rest/socialActions/{post}/comments/{id}.

export async function unpublish(ctx: UnpublishContext): Promise<{ alreadyGone: string[] }> {
  const auth = new Auth(ctx);
  const root = ctx.parts.find((p) => p.kind === 'root')?.externalId ?? '';
  return removeParts(ctx, async (part) => {
    const path =
      part.kind === 'comment'
        ? `/rest/socialActions/${encodeURIComponent(root)}/comments/${encodeURIComponent(commentId(part.externalId))}`
        : `/rest/posts/${encodeURIComponent(part.externalId)}`;
    const res = await call(auth, 'DELETE', path, { headers: { 'x-restli-method': 'DELETE' } });
    if (res.status === 404) return 'gone';
    expectOk(
      res,
      'DELETE',
      part.kind === 'comment' ? '/rest/socialActions/comments' : '/rest/posts',
      (r, what) => linkedinError(r, what),
    );
    return 'removed';
  });
}

/** A comment's id from its URN (urn:li:comment:(urn:li:activity:…,<id>)), or the id as given. */
const commentId = (urn: string) => /,(\d+)\)$/.exec(urn)?.[1] ?? urn;
