import { OAuthTokens } from '../oauth.ts';
import { removeParts } from '../removal.ts';
import type { UnpublishContext } from '../types.ts';
import { call } from './client.ts';
import { pinterestError } from './errors.ts';

// DELETE /v5/pins/{pin_id} (Pinterest API v5 pins/delete, scope pins:write): 204. A pin Pinterest
// no longer has answers 404 {"code", "message": "Pin not found."}. Pins have no replies or comments.

export async function unpublish(ctx: UnpublishContext): Promise<{ alreadyGone: string[] }> {
  const tokens = new OAuthTokens(ctx.tokens);
  return removeParts(ctx, async (part) => {
    const res = await call(tokens, 'DELETE', `/v5/pins/${encodeURIComponent(part.externalId)}`);
    if (res.status === 404) return 'gone';
    if (res.status < 200 || res.status >= 300) throw pinterestError(res, 'DELETE /v5/pins/{pin_id}');
    return 'removed';
  });
}
