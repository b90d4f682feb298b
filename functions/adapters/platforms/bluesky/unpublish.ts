import { removeParts } from '../removal.ts';
import { PlatformError, type UnpublishContext } from '../types.ts';
import { Client } from './client.ts';
import { errorName, xrpcError } from './errors.ts';

// com.atproto.repo.deleteRecord {repo, collection, rkey} on the account's PDS, the parts named by
// their at-uri (at://<did>/app.bsky.feed.post/<rkey>). The lexicon describes it as "delete a
// repository record, or ensure it doesn't exist": a record already gone answers 200 without a
// `commit` (nothing was written), which is how we tell it apart; RecordNotFound counts as gone too.

const NSID = 'com.atproto.repo.deleteRecord';

export async function unpublish(ctx: UnpublishContext): Promise<{ alreadyGone: string[] }> {
  const client = new Client(ctx.credentials);
  return removeParts(ctx, async (part) => {
    const at = /^at:\/\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(part.externalId);
    if (!at)
      throw new PlatformError('system', `bluesky: ${part.externalId} is not a record's at-uri`, {
        retryable: false,
      });
    const [, repo, collection, rkey] = at as unknown as [string, string, string, string];
    const res = await client.call<{ commit?: { cid: string; rev: string } }>(NSID, {
      method: 'POST',
      body: { repo, collection, rkey },
    });
    if (res.status === 400 && errorName(res) === 'RecordNotFound') return 'gone';
    if (res.status !== 200) throw xrpcError(res, NSID);
    return res.body?.commit ? 'removed' : 'gone';
  });
}
