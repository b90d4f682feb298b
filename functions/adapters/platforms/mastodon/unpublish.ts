import { expectOk } from '../http.ts';
import { removeParts } from '../removal.ts';
import type { UnpublishContext } from '../types.ts';
import { Api } from './client.ts';
import { mastodonError } from './errors.ts';

// DELETE /api/v1/statuses/:id on the channel's instance (docs.joinmastodon.org, methods/statuses
// "Delete a status", scope write:statuses): 200 with the deleted status. A status the instance no
// longer has answers 404 {"error": "Record not found"}.

export async function unpublish(ctx: UnpublishContext): Promise<{ alreadyGone: string[] }> {
  const api = Api.of(ctx.credentials);
  return removeParts(ctx, async (part) => {
    const path = `/api/v1/statuses/${encodeURIComponent(part.externalId)}`;
    const res = await api.call('DELETE', path);
    if (res.status === 404) return 'gone';
    expectOk(res, 'DELETE', '/api/v1/statuses/:id', mastodonError);
    return 'removed';
  });
}
