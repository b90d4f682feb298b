import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { batchGet, TABLE_NAME } from '#adapters/table';
import { mapLimit } from '#core/concurrency';
import { ddb } from '#shared/clients';

// Herald's published parts by their platform id (entity `post_ref`, keys.postRef): written by the
// stream relay when a delivery's root, thread item or first comment gets its external id, read by
// the inbox poller (one BatchGet per page) so a comment on a Herald post carries its post_id.
// Comments keep arriving on old posts, but rarely after a year: the refs expire then.

const REF_LIFETIME_SECONDS = 365 * 86_400;
const WRITE_CONCURRENCY = 8;

export interface PostRef {
  orgId: string;
  channelId: string;
  externalId: string;
  postId: string;
}

/** Puts each ref (unconditional: the same part always names the same post, so a replay rewrites the same item). */
export async function putPostRefs(refs: readonly PostRef[], now: Date): Promise<void> {
  const ttl = Math.ceil(now.getTime() / 1000) + REF_LIFETIME_SECONDS;
  await mapLimit([...refs], WRITE_CONCURRENCY, (r) =>
    ddb.send(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: {
          ...keys.postRef(r.orgId, r.channelId, r.externalId),
          entity: 'post_ref',
          post_id: r.postId,
          ttl,
        },
      }),
    ),
  );
}

/** The Herald post of each platform id that is one of the channel's published parts (one BatchGet). */
export async function postIdsOf(
  orgId: string,
  channelId: string,
  externalIds: readonly string[],
): Promise<Map<string, string>> {
  const unique = [...new Set(externalIds)];
  if (!unique.length) return new Map();
  const items = await batchGet(unique.map((id) => keys.postRef(orgId, channelId, id)));
  const out = new Map<string, string>();
  items.forEach((item, i) => {
    if (item && typeof item.post_id === 'string') out.set(unique[i] as string, item.post_id);
  });
  return out;
}
